"""The bench's markdown tables from target/server-bench/results.jsonl."""

import json
import sys

rows = [json.loads(line) for line in open(sys.argv[1])]
print("\n### StreamIds: IDs/s (server CPU ms per million IDs)\n")
servers = list(dict.fromkeys(r["server"] for r in rows if r["bench"] == "stream"))
print("| server | chunk 1 | chunk 64 | chunk 4096 |\n|---|---|---|---|")
for s in servers:
    cells = []
    for chunk in (1, 64, 4096):
        r = next((r for r in rows if r["bench"] == "stream" and r["server"] == s and r["chunk"] == chunk), None)
        cells.append(f"{r['ids_per_s'] / 1e6:.2f} M ({r['server_cpu_ms_per_million_ids']})" if r else "")
    print(f"| {s} | " + " | ".join(cells) + " |")
print("\n### Single-ID calls\n")
print("| server | call | requests/s | p50 µs | p99 µs | p99.9 µs | errors | server CPU ms per million IDs |")
print("|---|---|---|---|---|---|---|---|")
for r in rows:
    if r["bench"] == "one":
        print(f"| {r['server']} | {r['api']} | {r['calls_per_s']} | {r['p50_us']} | {r['p99_us']} "
              f"| {r['p999_us']} | {r['errors']} | {r['server_cpu_ms_per_million_ids']} |")
