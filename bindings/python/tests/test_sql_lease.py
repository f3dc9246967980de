"""Leases on PostgreSQL and MySQL (MariaDB), on real servers started on
loopback by conftest.py's fixtures: distinct node ids, unique IDs under
them, a table of one's own, and each failure as its typed error."""

from typing import Any, List

import pytest

import flakeid_rs
from conftest import free_port
from flakeid_rs import Generator, Lease

STORES = ["postgres", "mysql"]


def sql_lease(store: str, url: str, **settings: Any) -> Lease:
    if store == "postgres":
        return Lease.postgres(url, **settings)
    return Lease.mysql(url, **settings)


def url_of(store: str, request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue(f"{store}_url"))


def assert_unique_increasing(ids: List[int]) -> None:
    assert all(a < b for a, b in zip(ids, ids[1:]))


@pytest.mark.parametrize("store", STORES)
def test_sql_leases_hand_out_distinct_node_ids_and_unique_ids(
    store: str, request: pytest.FixtureRequest, prefix: str
) -> None:
    lease = sql_lease(store, url_of(store, request), prefix=prefix, node_ids=(0, 1))
    assert lease.store == store
    a = Generator("twitter", lease=lease)
    b = Generator("twitter", lease=lease)
    assert {a.node_id, b.node_id} == {0, 1}
    assert a.health().ready and b.health().ready
    ids_a = a.next_ids(20_000) + [a.next_id() for _ in range(1000)]
    ids_b = b.next_ids(20_000) + [b.next_id() for _ in range(1000)]
    assert_unique_increasing(ids_a)
    assert_unique_increasing(ids_b)
    assert {a.decode(i).node_id for i in ids_a} == {a.node_id}
    assert {b.decode(i).node_id for i in ids_b} == {b.node_id}
    assert len(set(ids_a) | set(ids_b)) == len(ids_a) + len(ids_b)

    # Both node ids held: a third claim is refused.
    with pytest.raises(flakeid_rs.LeaseError) as e:
        Generator("twitter", lease=lease)
    assert e.value.detail == "all_held"

    # Released: claimable again, its IDs after the last one issued under it.
    freed, last = a.node_id, ids_a[-1]
    a.close()
    with Generator("twitter", lease=lease) as c:
        assert c.node_id == freed
        assert c.next_id() > last
    b.close()


@pytest.mark.parametrize("store", STORES)
def test_a_table_of_its_own_is_created_then_found(
    store: str, request: pytest.FixtureRequest, prefix: str
) -> None:
    url = url_of(store, request)
    # Quoted as one identifier, whatever it holds.
    table = f'flakeid_rs "test"; DROP TABLE x {free_port()}'

    with Generator("twitter", lease=sql_lease(store, url, table=table, prefix=prefix,
                                              node_ids=(5, 5))) as gen:
        assert gen.node_id == 5
        last = gen.next_id()
    # The first claim created the table: one that may not create it finds
    # it, and the mark the first generator left there.
    lease = sql_lease(store, url, table=table, create_table=False, prefix=prefix,
                      node_ids=(5, 5))
    with Generator("twitter", lease=lease) as gen:
        assert gen.node_id == 5
        ids = gen.next_ids(1000)
        assert ids[0] > last
        assert {gen.decode(i).node_id for i in ids} == {5}


@pytest.mark.parametrize("store", STORES)
def test_a_missing_table_not_to_be_created_is_a_lease_error(
    store: str, request: pytest.FixtureRequest, prefix: str
) -> None:
    lease = sql_lease(store, url_of(store, request), table="flakeid_rs_no_such_table",
                      create_table=False, prefix=prefix)
    with pytest.raises(flakeid_rs.LeaseError) as e:
        Generator("twitter", lease=lease)
    assert e.value.detail == "table", e.value
    assert "flakeid_rs_no_such_table" in str(e.value)


@pytest.mark.parametrize("store", STORES)
def test_an_unreachable_sql_store_is_a_lease_error(store: str) -> None:
    port = free_port()  # nothing listens there
    url = {
        "postgres": f"postgres://postgres@127.0.0.1:{port}/postgres",
        "mysql": f"mysql://flakeid:secret@127.0.0.1:{port}/flakeid",
    }[store]
    with pytest.raises(flakeid_rs.LeaseError) as e:
        Generator("twitter", lease=sql_lease(store, url, connect_timeout=0.5))
    assert e.value.detail == "unreachable", e.value


@pytest.mark.parametrize("store", STORES)
def test_bad_sql_settings_are_typed_errors(store: str) -> None:
    # Refused before any store is contacted (nothing listens on port 1).
    url = {"postgres": "postgres://postgres@127.0.0.1:1/postgres",
           "mysql": "mysql://flakeid@127.0.0.1:1/flakeid"}[store]
    # An identifier of 1 to 63 bytes, no NUL.
    for table in ["", "a" * 64, "ids\x00"]:
        with pytest.raises(flakeid_rs.ConfigError):
            Generator("twitter", lease=sql_lease(store, url, table=table))
    with pytest.raises(flakeid_rs.InvalidType):
        sql_lease(store, url, table=5)
    with pytest.raises(flakeid_rs.InvalidType):
        sql_lease(store, url, create_table="yes")
    with pytest.raises(flakeid_rs.InvalidType):
        Lease.postgres(["postgres://h/db"]) if store == "postgres" else Lease.mysql(None)
    # Redis's own setting is not a SQL store's.
    with pytest.raises(TypeError):
        sql_lease(store, url, wait_for_replicas=1)
