"""Single IDs and batches from flakeid_rs beside the pure-Python
`snowflake-id`, `uuid.uuid4()`, `uuid-utils`' uuid7 and a floor (a trivial
native call of the same package that returns an int), in one run.

    pip install ./bindings/python snowflake-id uuid-utils
    python bindings/python/bench/bench.py [--repeat 7] [--seconds 0.2]

Each row is the median of --repeat runs of a timed loop (timeit, its
per-loop overhead included alike for every row), in ns per ID, with the
spread (min-max); batches are divided by their size. The targets the
issue sets are checked at the end and marked met or missed.
"""

import argparse
import platform
import statistics
import sys
import timeit
import uuid
from typing import Callable, Dict, List, Tuple

import flakeid_rs

BATCH = 4096


def measure(stmt: Callable[[], object], per_call: int, repeat: int, seconds: float) -> List[float]:
    timer = timeit.Timer(stmt)
    loops, _ = timer.autorange()
    loops = max(1, int(loops * seconds / 0.2))
    return [t / loops / per_call * 1e9 for t in timer.repeat(repeat=repeat, number=loops)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--seconds", type=float, default=0.2, help="per timed run")
    args = parser.parse_args()

    # A 22-bit sequence, so the 4,096-per-ms cap of Twitter's layout is not
    # what the single-thread rows measure.
    gen = flakeid_rs.Generator(
        "epoch=1700000000000 fields=timestamp:41,worker:1,sequence:22", node_id=1
    )
    rows: List[Tuple[str, Callable[[], object], int]] = [
        ("floor: Generator._floor()", gen._floor, 1),
        ("flakeid_rs next_id()", gen.next_id, 1),
        ("flakeid_rs poll_id()", gen.poll_id, 1),
        ("uuid.uuid4()", uuid.uuid4, 1),
    ]
    try:
        import uuid_utils

        rows.append(("uuid_utils.uuid7()", uuid_utils.uuid7, 1))
    except ImportError:
        print("uuid-utils not installed: its row is left out", file=sys.stderr)
    try:
        from snowflake import SnowflakeGenerator

        sf = SnowflakeGenerator(1)
        rows.append(("snowflake-id SnowflakeGenerator", lambda: next(sf), 1))
    except ImportError:
        print("snowflake-id not installed: its row is left out", file=sys.stderr)
    rows += [
        (f"flakeid_rs next_ids({BATCH}) (list)", lambda: gen.next_ids(BATCH), BATCH),
        (f"flakeid_rs next_ids_buffer({BATCH})", lambda: gen.next_ids_buffer(BATCH), BATCH),
    ]

    print(f"Python {platform.python_version()} on {platform.machine()}, "
          f"{platform.processor() or platform.platform()}; flakeid_rs abi3 wheel")
    print(f"median of {args.repeat} runs of ~{args.seconds}s each, ns per ID\n")
    print(f"| {'call':<40} | {'ns/ID':>8} | {'spread':>15} |")
    print(f"|{'-' * 42}|{'-' * 10}:|{'-' * 17}:|")
    medians: Dict[str, float] = {}
    for name, stmt, per in rows:
        times = measure(stmt, per, args.repeat, args.seconds)
        medians[name] = statistics.median(times)
        spread = f"{min(times):.2f}-{max(times):.2f}"
        print(f"| {name:<40} | {medians[name]:>8.2f} | {spread:>15} |")

    floor = medians["floor: Generator._floor()"]
    single = medians["flakeid_rs next_id()"]
    print("\nTargets:")
    checks = [(f"single next_id() within 1.5x the floor: {single / floor:.2f}x", single <= 1.5 * floor)]
    sf_name = "snowflake-id SnowflakeGenerator"
    if sf_name in medians:
        ratio = medians[sf_name] / single
        checks.append((f"at least 5x snowflake-id: {ratio:.1f}x", ratio >= 5))
    for name in (f"flakeid_rs next_ids({BATCH}) (list)", f"flakeid_rs next_ids_buffer({BATCH})"):
        ratio = single / medians[name]
        checks.append((f"{name} at least 20x faster per ID than next_id(): {ratio:.1f}x", ratio >= 20))
    for text, met in checks:
        print(f"- {'met' if met else 'MISSED'}: {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
