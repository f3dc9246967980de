"""Bad input: a few thousand random argument combinations, each of which
must return or raise a flakeid_rs.Error (TypeError and ValueError
subclasses among them) with a reason: never a crash, a hang, or another
exception."""

import socket
from datetime import timedelta
from typing import Any, Dict

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flakeid_rs
from flakeid_rs import Generator, Lease, Persist

EXAMPLES = settings(
    max_examples=1000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

junk = st.one_of(
    st.none(), st.booleans(), st.floats(allow_nan=True), st.text(max_size=12),
    st.binary(max_size=4), st.lists(st.integers(), max_size=2), st.just(object()),
)
ints = st.one_of(
    st.integers(min_value=-2, max_value=2_000),
    st.integers(min_value=-(2**70), max_value=2**70),
)
anything = st.one_of(ints, junk)
durations = st.one_of(
    st.floats(min_value=-1, max_value=1e20), st.floats(),
    st.integers(min_value=-5, max_value=10**30),
    st.just(timedelta(milliseconds=5)), st.just(timedelta(days=-1)), junk,
)
layouts = st.one_of(
    st.sampled_from(["twitter", "discord", "sonyflake", "js_safe", "instagram",
                     "instagram:1314220021721", "instagram:99999999999999",
                     "epoch=1600000000000 fields=timestamp:41,clock_id:2,worker:8,sequence:10",
                     "epoch=1600000000000 unit=10 fields=timestamp:39,sequence:8,machine:16",
                     "epoch=1600000000000 fields=timestamp:10,sequence:12",
                     "epoch=0 fields=timestamp:80,sequence:1", "epoch=x fields=timestamp:41",
                     "fields=timestamp:41,sequence:12", ""]),
    st.text(max_size=40), junk,
)
policy_names = st.one_of(
    st.sampled_from(["wait", "borrow", "error", "next_clock", "continue", "Wait"]), junk,
)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


PORT = closed_port()


# Lease settings; nothing listens on PORT, so a lease that passes its
# checks fails to connect within its (short) connect timeout.
lease_settings = st.fixed_dictionaries({}, optional={
    "prefix": st.one_of(st.text(max_size=8), junk),
    "ttl": durations,
    "safety_margin": durations,
    "node_ids": st.one_of(st.tuples(ints, ints), junk),
    "max_mark_ahead": durations,
    "wait_for_replicas": anything,
})


def call(fn: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return fn(*args, **kwargs)
    except flakeid_rs.Error as e:
        assert str(e), "an error without a reason"
        assert e.code == type(e).code
        return e


@EXAMPLES
@given(layout=layouts, kwargs=st.fixed_dictionaries({}, optional={
    "node_id": anything, "node_fields": st.one_of(
        st.dictionaries(st.text(max_size=6), ints, max_size=3), junk),
    "node_id_from_env": st.one_of(st.sampled_from(["PATH", "FLAKEID_RS_NOPE"]), junk),
    "node_id_from_hostname": st.one_of(st.text(max_size=12), junk),
    "single_node": anything, "on_exhausted": policy_names, "max_ahead": durations,
    "on_clock_behind": policy_names, "max_wait": durations, "random_start": anything,
    "seed": anything, "clock_id": anything, "counters": anything,
}), n=anything)
def test_generators_from_random_arguments(layout: Any, kwargs: Dict[str, Any], n: Any) -> None:
    gen = call(Generator, layout, **kwargs)
    if not isinstance(gen, Generator):
        return
    for method in (gen.poll_id, gen.try_next_id):
        call(method)
    if isinstance(n, int) and n > 100_000:
        n = n % 100_000  # a real n, bounded in size for the run's memory
    for method in (gen.poll_ids, gen.try_next_ids, gen.next_ids_buffer):
        call(method, n)
    call(gen.decode, n)
    gen.health()
    gen.close()


@EXAMPLES
@given(settings_=lease_settings, fast=st.sampled_from([0.0, 0.01]),
       layout=st.sampled_from(["twitter", "js_safe"]))
def test_leases_from_random_arguments(settings_: Dict[str, Any], fast: float, layout: str) -> None:
    lease = call(Lease.redis, f"redis://127.0.0.1:{PORT}/", connect_timeout=fast, **settings_)
    if isinstance(lease, Lease):
        result = call(Generator, layout, lease=lease)
        assert isinstance(result, flakeid_rs.Error)  # nothing listens


@EXAMPLES
@given(window=durations, rule=st.one_of(st.sampled_from(["high_water_mark", "next_clock_id"]), junk),
       replace=anything, path=st.one_of(st.just("state"), junk))
def test_persistence_from_random_arguments(tmp_path_factory: Any, window: Any, rule: Any,
                                           replace: Any, path: Any) -> None:
    directory = tmp_path_factory.mktemp("persist")
    target = directory / path if isinstance(path, str) else path
    persist = call(Persist, target, window=window, restart_rule=rule,
                   replace_issued_until_ms=replace)
    if isinstance(persist, Persist):
        gen = call(Generator, "epoch=1600000000000 fields=timestamp:41,clock_id:2,worker:8,sequence:10",
                   node_id=1, persist=persist)
        if isinstance(gen, Generator):
            call(gen.next_id)
            gen.close()


@EXAMPLES
@given(text=st.one_of(st.text(max_size=24), junk), form=st.one_of(
    st.sampled_from(["decimal", "hex", "base32", "base62", "base64"]), junk), id_=anything,
    layout=layouts, parts=st.fixed_dictionaries({}, optional={
        "timestamp": anything, "unix_ms": anything, "node_id": anything,
        "node_fields": st.one_of(st.dictionaries(st.text(max_size=6), ints, max_size=2), junk),
        "sequence": anything, "clock_id": anything}))
def test_ids_and_layouts_from_random_arguments(text: Any, form: Any, id_: Any, layout: Any,
                                               parts: Dict[str, Any]) -> None:
    parsed = call(flakeid_rs.parse_id, text, form)
    encoded = call(flakeid_rs.encode, id_, form)
    if isinstance(encoded, str):
        assert flakeid_rs.parse_id(encoded, form) == id_
    if isinstance(parsed, int) and form is None:
        assert 0 <= parsed < 2**64
    lay = call(flakeid_rs.Layout, layout)
    if isinstance(lay, flakeid_rs.Layout):
        composed = call(lay.compose, **parts)
        if isinstance(composed, int):
            decoded = lay.decode(composed)
            assert lay.compose(timestamp=decoded.timestamp, node_id=decoded.node_id,
                               sequence=decoded.sequence, clock_id=decoded.clock_id) == composed
        call(lay.decode, id_)
