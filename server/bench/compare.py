"""compare.sh's table: each point's median over the rounds, before and
after, and after / before.

    python3 compare.py target/server-bench/compare
"""

import json
import pathlib
import statistics
import sys

out = pathlib.Path(sys.argv[1])
points = {}
for path in sorted(out.glob("*-*/results.jsonl")):
    for line in path.read_text().splitlines():
        r = json.loads(line)
        side, _, what = r["server"].partition(", ")
        if r["bench"] == "stream":
            key = (f"StreamIds, {what}, chunk {r['chunk']}", "IDs/s")
            value = r["ids_per_s"]
        else:
            key = (f"{r['api']}, {what}", "calls/s")
            value = r["calls_per_s"]
        points.setdefault(key, {}).setdefault(side, []).append(value)
        if r["bench"] == "one":
            p99 = (f"{r['api']}, {what}", "p99 µs")
            points.setdefault(p99, {}).setdefault(side, []).append(r["p99_us"])

print((out / "revisions.txt").read_text())
print("| point | measure | before | after | after / before | rounds |")
print("|---|---|---:|---:|---:|---:|")
for (point, measure), sides in points.items():
    before, after = (statistics.median(sides.get(s, [0])) for s in ("before", "after"))
    ratio = f"{after / before:.2f}" if before else ""
    rounds = min(len(sides.get("before", [])), len(sides.get("after", [])))
    print(f"| {point} | {measure} | {before:,.0f} | {after:,.0f} | {ratio} | {rounds} |")

instructions = out / "instructions.jsonl"
if instructions.exists():
    counts = {}
    for line in instructions.read_text().splitlines():
        r = json.loads(line)
        counts.setdefault(r["api"], {})[r["server"]] = r["per_call"]
    print()
    print("Server instructions per call (callgrind, user space, all threads):")
    print()
    print("| call | before | after | after / before |")
    print("|---|---:|---:|---:|")
    for api, sides in counts.items():
        before, after = sides.get("before", 0), sides.get("after", 0)
        ratio = f"{after / before:.3f}" if before else ""
        print(f"| {api} | {before:,} | {after:,} | {ratio} |")
