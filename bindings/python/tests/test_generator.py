"""The Python API over real threads, files and servers."""

import array
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import List, Tuple

import pytest

import flakeid_rs
from flakeid_rs import Generator, Lease, Persist
from forked import in_child

# Two IDs per millisecond: a tick runs out at once.
TINY = "epoch=1600000000000 fields=timestamp:41,worker:10,sequence:1"


def test_ids_are_unique_and_increase_per_thread() -> None:
    gen = Generator("twitter", node_id=42)
    per_thread: List[List[int]] = [[] for _ in range(8)]

    def work(out: List[int]) -> None:
        for _ in range(5_000):
            out.append(gen.next_id())
        out.extend(gen.next_ids(5_000))

    threads = [threading.Thread(target=work, args=(out,)) for out in per_thread]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for ids in per_thread:
        assert ids == sorted(ids) and len(ids) == 10_000
    everything = [i for ids in per_thread for i in ids]
    assert len(set(everything)) == len(everything)
    assert {gen.decode(i).node_id for i in everything} == {42}


def test_batches() -> None:
    gen = Generator("twitter", node_fields={"datacenter": 1, "worker": 2})
    assert gen.node_id == 1 << 5 | 2
    assert gen.next_ids(0) == []
    ids = gen.next_ids(10_000)  # more than a tick holds: exactly n
    assert len(ids) == 10_000 and ids == sorted(set(ids))
    view = gen.next_ids_buffer(100_000)
    assert (view.format, view.itemsize, len(view), view.readonly) == ("Q", 8, 100_000, True)
    values = array.array("Q", view)
    assert values[0] > ids[-1] and list(values) == sorted(set(values))
    polled = gen.poll_ids(5_000)
    assert 1 <= len(polled) <= 5_000 and polled[0] > values[-1]
    assert gen.try_next_ids(3)[0] > polled[-1]
    assert len(gen.next_ids_buffer(0)) == 0


def test_decode_compose_and_string_forms() -> None:
    layout = flakeid_rs.Layout("discord")
    d = layout.decode(175928847299117063)
    assert (d.unix_ms, d.node_id, d.fields, d.sequence) == (1462015105796, 32, {"worker": 1, "process": 0}, 7)
    assert str(d) == "2016-04-30T11:18:25.796Z worker=1 process=0 sequence=7"
    assert d.datetime.isoformat() == "2016-04-30T11:18:25.796000+00:00"
    assert layout.compose(unix_ms=1462015105796, node_fields={"worker": 1, "process": 0},
                          sequence=7) == 175928847299117063
    assert flakeid_rs.Layout(layout.spec) == layout
    assert flakeid_rs.encode(175928847299117063, "base62") == "0Czks0tP37X"
    assert flakeid_rs.encode(175928847299117063, "hex") == "0271065ac1020007"
    assert flakeid_rs.parse_id("0Czks0tP37X") == 175928847299117063
    assert flakeid_rs.parse_id("04w86bb0g4oo7", "base32") == 175928847299117063
    with pytest.raises(flakeid_rs.ParseIdError, match="cannot tell the form"):
        flakeid_rs.parse_id("order-17")
    with pytest.raises(flakeid_rs.FieldError, match="not made with this layout"):
        flakeid_rs.Layout("twitter").decode(1 << 63)
    with pytest.raises(flakeid_rs.LayoutError) as e:
        flakeid_rs.Layout("tweeter")
    assert e.value.detail == "unknown_preset"


def test_no_silent_node_zero_and_typed_refusals() -> None:
    with pytest.raises(flakeid_rs.NodeIdError) as e:
        Generator("twitter")
    assert (e.value.code, e.value.detail) == ("node_id", "not_set")
    assert Generator("twitter", single_node=True).node_id == 0
    with pytest.raises(flakeid_rs.NodeIdError, match="out of range"):
        Generator("twitter", node_id=1024)
    # Every node field is given: two hosts that both forgot one would share
    # a node id.
    with pytest.raises(flakeid_rs.NodeIdError) as e:
        Generator("twitter", node_fields={"datacenter": 1})
    assert (e.value.code, e.value.detail) == ("node_id", "field_not_set")
    assert str(e.value).startswith("node field `worker` is not set"), str(e.value)
    assert Generator("twitter", node_fields={"datacenter": 1, "worker": 0}).node_id == 1 << 5
    with pytest.raises(flakeid_rs.FieldError, match="node field `worker` is not set"):
        flakeid_rs.Layout("twitter").node_id_from_fields({"datacenter": 1})
    with pytest.raises(flakeid_rs.InvalidArgument, match="one node id source"):
        Generator("twitter", node_id=1, single_node=True)
    with pytest.raises(flakeid_rs.ConfigError, match="clock-id field"):
        Generator("twitter", node_id=1, on_exhausted="next_clock")
    with pytest.raises(flakeid_rs.InvalidArgument, match="needs max_ahead"):
        Generator("twitter", node_id=1, on_exhausted="borrow")
    with pytest.raises(flakeid_rs.InvalidType, match="node_id must be an int, not float"):
        Generator("twitter", node_id=1.0)  # type: ignore[arg-type]


def test_node_ids_from_the_environment_and_host_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLAKEID_RS_TEST_NODE", "17")
    assert Generator("twitter", node_id_from_env="FLAKEID_RS_TEST_NODE").node_id == 17
    monkeypatch.setenv("FLAKEID_RS_TEST_NODE", "x7")
    with pytest.raises(flakeid_rs.NodeIdError) as e:
        Generator("twitter", node_id_from_env="FLAKEID_RS_TEST_NODE")
    assert e.value.detail == "not_a_number"
    with pytest.raises(flakeid_rs.NodeIdError) as e:
        Generator("twitter", node_id_from_env="FLAKEID_RS_TEST_UNSET")
    assert e.value.detail == "env_not_set"
    assert Generator("twitter", node_id_from_hostname="orders-12.orders.svc").node_id == 12
    with pytest.raises(flakeid_rs.NodeIdError) as e:
        Generator("twitter", node_id_from_hostname="orders")
    assert e.value.detail == "no_ordinal"


def test_policies_report_with_their_numbers() -> None:
    gen = Generator(TINY, node_id=1, on_exhausted="error")
    with pytest.raises(flakeid_rs.SequenceExhaustedError) as e:
        for _ in range(100_000):  # two per millisecond: runs out at once
            gen.try_next_id()
    assert 0 <= e.value.retry_after <= 0.002
    poller = Generator(TINY, node_id=2)
    with pytest.raises(flakeid_rs.SequenceExhaustedError):
        for _ in range(100_000):
            poller.poll_id()
    # Waiting policies wait: exactly n, even at two per millisecond.
    assert len(Generator(TINY, node_id=3).next_ids(40)) == 40
    borrow = Generator(TINY, node_id=4, on_exhausted="borrow", max_ahead=timedelta(milliseconds=50))
    assert len(borrow.next_ids(20)) == 20


def test_the_gil_is_released_while_a_call_waits() -> None:
    gen = Generator(TINY, node_id=5)  # 2,000 IDs: about a second of ticks
    counted = [0]
    stop = threading.Event()

    def count() -> None:
        while not stop.is_set():
            counted[0] += 1

    counter = threading.Thread(target=count)
    counter.start()
    try:
        time.sleep(0.05)
        before = counted[0]
        ids = gen.next_ids(2_000)
        during = counted[0] - before
    finally:
        stop.set()
        counter.join()
    assert len(ids) == 2_000
    # With the GIL held for the whole call, the counter could not run.
    assert during > 1_000, during


def test_persistence_restarts_after_the_saved_mark(tmp_path: Path) -> None:
    path = tmp_path / "node-7.state"
    with Generator("twitter", node_id=7, persist=Persist(path, window=0.5)) as gen:
        last = gen.next_ids(1000)[-1]
        with pytest.raises(flakeid_rs.StateError) as e:
            Generator("twitter", node_id=7, persist=Persist(path))
        assert e.value.detail == "locked"
    with pytest.raises(flakeid_rs.ClosedError):
        gen.next_id()
    assert gen.health().state == "closed"
    again = Generator("twitter", node_id=7, persist=Persist(str(path)))
    assert again.next_id() > last
    again.close()
    with pytest.raises(flakeid_rs.StateError) as e:
        Generator("twitter", node_id=8, persist=Persist(path))
    assert e.value.detail == "mismatch"


@pytest.mark.parametrize("store", ["redis", "etcd"])
def test_leases_hand_out_distinct_node_ids_and_take_them_back(
    store: str, request: pytest.FixtureRequest, prefix: str
) -> None:
    if store == "redis":
        lease = Lease.redis(request.getfixturevalue("redis_url"), prefix=prefix, node_ids=(0, 1))
    else:
        lease = Lease.etcd([request.getfixturevalue("etcd_endpoint")], prefix=prefix, node_ids=(0, 1))
    a = Generator("twitter", lease=lease)
    b = Generator("twitter", lease=lease)
    assert {a.node_id, b.node_id} == {0, 1}
    assert a.health().ready and lease.store == store
    with pytest.raises(flakeid_rs.LeaseError) as e:
        Generator("twitter", lease=lease)
    assert e.value.detail == "all_held"
    freed = a.node_id
    a.close()
    with Generator("twitter", lease=lease) as c:
        assert c.node_id == freed
        assert c.next_id() > 0
    b.close()


def test_an_unreachable_store_is_a_typed_error_within_the_timeout() -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    lease = Lease.redis(f"redis://127.0.0.1:{port}/", connect_timeout=0.2)
    with pytest.raises(flakeid_rs.LeaseError) as e:
        Generator("twitter", lease=lease)
    assert e.value.detail == "unreachable"


def test_stats_and_health() -> None:
    gen = Generator("twitter", node_id=1, counters=True)
    gen.next_ids(10)
    gen.next_id()
    stats = gen.stats()
    assert stats is not None and stats["issued"] == 11
    assert Generator("twitter", node_id=1).stats() is None
    health = gen.health()
    assert (health.state, health.ready, str(health)) == ("issuing", True, "issuing")
    expired = Generator("epoch=1600000000000 fields=timestamp:10,sequence:12")
    assert expired.health().state == "expired"
    with pytest.raises(flakeid_rs.ExpiredError) as e:
        expired.next_id()
    assert e.value.last_ms == 1600000000000 + 1023


def test_a_generator_built_in_a_forked_child_stamps_the_current_time() -> None:
    """The default clock's refresh thread does not survive a fork; a
    generator built in the child must not serve its frozen reading. (Not in
    test_fork.py: it does not depend on fork detection, since the generator
    is the child's own.)"""
    gen = Generator("twitter", node_id=1)
    # Keep the refresh thread awake up to the fork: calls in many
    # consecutive milliseconds.
    start = time.monotonic()
    while time.monotonic() - start < 0.05:
        gen.next_id()

    def child() -> Tuple[int, int]:
        fresh = Generator("twitter", node_id=2)
        fresh.next_id()
        time.sleep(0.3)
        before_ms = time.time_ns() // 1_000_000
        return before_ms, fresh.decode(fresh.next_id()).unix_ms

    _, (kind, result) = in_child(child)
    assert kind == "ok", result
    before_ms, id_ms = result
    # The default clock may run up to ~2 ms behind the wall clock; a frozen
    # reading would be 300 ms old.
    assert id_ms >= before_ms - 50, (before_ms, id_ms)
