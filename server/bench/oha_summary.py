"""One bench result line from oha's JSON output and the server's CPU time.

    python3 oha_summary.py OHA_JSON CPU_BEFORE_S CPU_AFTER_S SERVER_LABEL
"""

import json
import sys

path, before, after, server = sys.argv[1:5]
r = json.load(open(path))
ok = r["statusCodeDistribution"].get("200", 0)
p = r["latencyPercentiles"]
cpu = (float(after) - float(before)) * 1000 / (ok / 1e6) if ok else None
errors = sum(v for k, v in r["statusCodeDistribution"].items() if k != "200")
# oha cuts the requests in flight when its time is up ("aborted due to
# deadline"): that is the end of the run, not an error of the server.
errors += sum(n for e, n in r.get("errorDistribution", {}).items() if "deadline" not in e)
print(json.dumps({
    "bench": "one",
    "server": server,
    "api": "HTTP GET /v1/id (oha)",
    "calls_per_s": round(r["summary"]["requestsPerSec"]),
    "ok": ok,
    "errors": errors,
    "p50_us": round(p["p50"] * 1e6, 1),
    "p99_us": round(p["p99"] * 1e6, 1),
    "p999_us": round(p["p99.9"] * 1e6, 1),
    "server_cpu_ms_per_million_ids": round(cpu, 1) if cpu else None,
}))
