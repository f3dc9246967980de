"""Fork safety: a process forked after the generator was built never issues
an ID its parent or a sibling could issue.

Every test here fails with fork detection turned off
(FLAKEID_RS_TEST_NO_FORK_DETECTION=1, read by conftest.py): the child then
issues from the parent's state under the parent's node id, which every test
checks for (a refusal expected, or a node id of the child's own). CI runs
this file a second time that way and fails unless every test fails
(scripts/check_junit.py), so a test added here must depend on detection;
one that does not (a generator built in the child) belongs elsewhere."""

import multiprocessing
import os
import pickle
from typing import Any, Dict, List, Tuple

import pytest

from flakeid_rs import ForkedError, Generator, Lease
from forked import in_child


def node_of(gen: Generator, ids: List[int]) -> set:
    return {gen.decode(i).node_id for i in ids}


def test_os_fork_refuses_an_inherited_static_node_id() -> None:
    gen = Generator("twitter", node_id=7)
    before = gen.next_id()

    def child() -> Dict[str, Any]:
        outcomes: Dict[str, Any] = {}
        for name, call in [
            ("next_id", gen.next_id),
            ("try_next_id", gen.try_next_id),
            ("poll_id", gen.poll_id),
            ("next_ids", lambda: gen.next_ids(5)),
            ("poll_ids", lambda: gen.poll_ids(5)),
            ("next_ids_buffer", lambda: list(gen.next_ids_buffer(5))),
        ]:
            try:
                outcomes[name] = call()
            except ForkedError as e:
                outcomes[name] = e.code
        outcomes["health"] = gen.health().state
        # Built after the fork: issues as anywhere.
        fresh = Generator("twitter", node_id=8)
        outcomes["fresh"] = fresh.next_id()
        return outcomes

    _, (kind, outcomes) = in_child(child)
    assert kind == "ok", outcomes
    refused = {k: v for k, v in outcomes.items() if k not in ("health", "fresh")}
    assert refused == {k: "forked" for k in refused}, refused
    assert outcomes["health"] == "forked"
    assert gen.decode(outcomes["fresh"]).node_id == 8
    assert gen.next_id() > before  # the parent goes on


def test_the_refusal_says_what_to_do() -> None:
    gen = Generator("twitter", node_id=3)
    _, result = in_child(gen.next_id)
    assert result[:3] == ("error", "ForkedError", "forked"), result
    assert "post_fork" in result[3] and "lease" in result[3]


def test_os_fork_with_a_lease_claims_a_fresh_node_id(redis_url: str, prefix: str) -> None:
    gen = Generator("twitter", lease=Lease.redis(redis_url, prefix=prefix))
    parent_node = gen.node_id
    first = gen.next_ids(1000)

    def child() -> Tuple[int, List[int]]:
        ids = gen.next_ids(10_000) + [gen.next_id() for _ in range(1000)]
        node = gen.node_id
        gen.close()  # releases the child's node id, never the parent's
        return node, ids

    _, (kind, result) = in_child(child)
    assert kind == "ok", result
    child_node, child_ids = result
    parent_ids = first + gen.next_ids(10_000)
    assert child_node != parent_node
    assert node_of(gen, child_ids) == {child_node}
    assert node_of(gen, parent_ids) == {parent_node}
    assert len(set(child_ids) | set(parent_ids)) == len(child_ids) + len(parent_ids)
    # The child dropped the parent's lease without releasing it: the
    # parent still holds its node id, so a new generator gets another.
    assert gen.health().ready
    with Generator("twitter", lease=Lease.redis(redis_url, prefix=prefix)) as other:
        assert other.node_id != parent_node
    gen.close()


@pytest.mark.parametrize("store", ["postgres", "mysql"])
def test_os_fork_with_a_sql_lease_claims_a_fresh_node_id(
    store: str, request: pytest.FixtureRequest, prefix: str
) -> None:
    """As on Redis, on PostgreSQL and MySQL: the child claims a node id of
    its own over a connection of its own, while the parent keeps its node
    id and its connection, which the child inherited but never uses."""
    url = request.getfixturevalue(f"{store}_url")

    def lease() -> Lease:
        if store == "postgres":
            return Lease.postgres(url, prefix=prefix)
        return Lease.mysql(url, prefix=prefix)

    gen = Generator("twitter", lease=lease())
    parent_node = gen.node_id
    first = gen.next_ids(1000)

    def child() -> Tuple[int, List[int]]:
        ids = gen.next_ids(10_000) + [gen.next_id() for _ in range(1000)]
        node = gen.node_id
        gen.close()  # releases the child's node id, never the parent's
        return node, ids

    _, (kind, result) = in_child(child)
    assert kind == "ok", result
    child_node, child_ids = result
    parent_ids = first + gen.next_ids(10_000)
    assert child_node != parent_node
    assert node_of(gen, child_ids) == {child_node}
    assert node_of(gen, parent_ids) == {parent_node}
    assert len(set(child_ids) | set(parent_ids)) == len(child_ids) + len(parent_ids)
    # The parent still holds its node id: a new generator gets another.
    assert gen.health().ready
    with Generator("twitter", lease=lease()) as other:
        assert other.node_id != parent_node
    gen.close()


# multiprocessing with the fork start method: the pool's workers inherit
# the master's generator through this global.
_GEN: Any = None


def _worker_ids(m: int) -> Tuple[int, int, List[int]]:
    ids = _GEN.next_ids(m // 2) + [_GEN.next_id() for _ in range(m - m // 2)]
    return os.getpid(), _GEN.node_id, ids


def _worker_static(_: int) -> str:
    try:
        _GEN.next_id()
        return "issued"
    except ForkedError as e:
        return e.code


def test_multiprocessing_fork_workers_with_a_lease(redis_url: str, prefix: str) -> None:
    global _GEN
    _GEN = Generator("twitter", lease=Lease.redis(redis_url, prefix=prefix, ttl=3))
    master_node = _GEN.node_id
    master_ids = _GEN.next_ids(2000)
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(4) as pool:
        results = pool.map(_worker_ids, [2000] * 8)
    master_ids += _GEN.next_ids(2000)
    nodes_by_pid = {pid: node for pid, node, _ in results}
    assert master_node not in nodes_by_pid.values()
    assert len(set(nodes_by_pid.values())) == len(nodes_by_pid)  # one per worker
    all_ids = master_ids + [i for _, _, ids in results for i in ids]
    assert len(set(all_ids)) == len(all_ids) == 2000 * 8 + 4000
    for pid, node, ids in results:
        assert node_of(_GEN, ids) == {nodes_by_pid[pid]}
    _GEN.close()
    _GEN = None


def test_multiprocessing_fork_workers_refuse_a_static_node_id() -> None:
    global _GEN
    _GEN = Generator("twitter", node_id=11)
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(2) as pool:
        outcomes = pool.map(_worker_static, range(4))
    assert outcomes == ["forked"] * 4
    _GEN = None


def test_prefork_server_on_etcd(etcd_endpoint: str, prefix: str) -> None:
    """The pre-fork server pattern (gunicorn, uWSGI): the master builds the
    generator, then forks N workers that each issue M IDs."""
    n_workers, m = 4, 5000
    gen = Generator("twitter", lease=Lease.etcd([etcd_endpoint], prefix=prefix))
    master_node = gen.node_id
    master_ids = gen.next_ids(m)
    pipes = []
    for _ in range(n_workers):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            try:
                ids = [gen.next_id() for _ in range(m // 2)] + gen.next_ids(m - m // 2)
                result: Any = ("ok", gen.node_id, ids)
                gen.close()
            except BaseException as e:  # noqa: BLE001 - reported to the master
                result = ("error", repr(e))
            with os.fdopen(write, "wb") as out:
                pickle.dump(result, out)
            os._exit(0)
        os.close(write)
        pipes.append((pid, read))
    master_ids += gen.next_ids(m)
    results = []
    for pid, read in pipes:
        with os.fdopen(read, "rb") as inp:
            results.append(pickle.loads(inp.read()))
        os.waitpid(pid, 0)
    assert all(r[0] == "ok" for r in results), results
    # A worker that closed gave its node id back, so a later one may hold
    # it again (after its mark); none holds the master's.
    assert master_node not in [r[1] for r in results]
    all_ids = master_ids + [i for r in results for i in r[2]]
    assert len(set(all_ids)) == len(all_ids) == (n_workers + 2) * m
    for _, node, ids in results:
        assert node_of(gen, ids) == {node}
    gen.close()
