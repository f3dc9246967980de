"""mypy accepts typical use of the package, through its stubs and py.typed.

mypy is one of the test dependencies (pyproject's `test` extra): without it
these tests fail, never skip, so a venv that lacks it cannot pass them."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

SAMPLE = '''
from datetime import timedelta
import flakeid_rs
from flakeid_rs import Generator, Lease, Persist

gen = Generator("twitter", node_id=7, on_exhausted="borrow", max_ahead=timedelta(milliseconds=5))
first: int = gen.next_id()
batch: list[int] = gen.next_ids(100)
view: memoryview = gen.next_ids_buffer(1000)
print(gen.decode(first).datetime.isoformat(), gen.health().ready, view.format)
leased = Generator("twitter", lease=Lease.redis("redis://127.0.0.1:6379/", ttl=10.0))
on_sql = Lease.postgres("postgres://ids@db/app", table="orders_leases", create_table=False)
store: str = Lease.mysql("mysql://ids@db/app", ttl=10).store
saved = Generator("twitter", node_id=1, persist=Persist("/tmp/node.state", window=1))
try:
    gen.try_next_id()
except flakeid_rs.SequenceExhaustedError as e:
    wait: float = e.retry_after
except flakeid_rs.Error as e:
    code: str = e.code
text: str = flakeid_rs.encode(first, "base62")
back: int = flakeid_rs.parse_id(text)
'''

WRONG = '''
from flakeid_rs import Generator
gen = Generator("twitter", node_id="7")
'''


def run_mypy(tmp_path: Path, source: str) -> subprocess.CompletedProcess:
    if importlib.util.find_spec("mypy") is None:
        pytest.fail(f"mypy is not installed in {sys.prefix} (pip install mypy)")
    sample = tmp_path / "sample.py"
    sample.write_text(source)
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(sample)],
        capture_output=True, text=True, cwd=tmp_path,
    )


def test_mypy_accepts_typical_use(tmp_path: Path) -> None:
    result = run_mypy(tmp_path, SAMPLE)
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_refuses_a_wrong_argument(tmp_path: Path) -> None:
    result = run_mypy(tmp_path, WRONG)
    assert result.returncode == 1 and "node_id" in result.stdout, result.stdout
