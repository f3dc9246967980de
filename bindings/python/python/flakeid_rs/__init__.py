"""flakeid_rs: time-ordered, unique 64-bit Snowflake IDs, made natively by
the Rust library flakeid: lock-free, safe from many threads, fork-safe, with
node ids leased from etcd, Redis, PostgreSQL or MySQL/MariaDB.

    >>> import flakeid_rs
    >>> gen = flakeid_rs.Generator("twitter", node_id=7)
    >>> a, b = gen.next_id(), gen.next_id()
    >>> a < b
    True
    >>> gen.decode(a).node_id
    7

There is no default node id: a generator is built with exactly one of
``node_id``, ``node_fields``, ``node_id_from_env``,
``node_id_from_statefulset``, ``node_id_from_hostname``, ``single_node``
or ``lease`` (for a layout with node fields), because two processes that
both forgot it would issue the same IDs.

**Fork safety.** A process forked after a generator was built (gunicorn,
uWSGI, Celery, ``multiprocessing`` with the fork start method) never issues
an ID its parent or a sibling could issue: with a leased node id, the
child's first call claims a fresh node id (the parent keeps its own); with
any other node id, every call in the child raises :class:`ForkedError`,
which says to build the generator after the fork (gunicorn's ``post_fork``
hook, or inside the worker) or to lease the node id.

Every error is a subclass of :class:`Error`, with a stable ``code``.
"""

from ._errors import (
    ClockBehindError,
    ClosedError,
    ConfigError,
    Error,
    ExpiredError,
    FencedError,
    FieldError,
    ForkedError,
    InvalidArgument,
    InvalidType,
    LayoutError,
    LeaseError,
    NodeIdError,
    ParseIdError,
    ReservingError,
    SequenceExhaustedError,
    StateError,
    StorageError,
)
from ._native import Decoded, Generator, Health, Layout, Lease, Persist, encode, parse_id

__all__ = [
    "ClockBehindError",
    "ClosedError",
    "ConfigError",
    "Decoded",
    "Error",
    "ExpiredError",
    "FencedError",
    "FieldError",
    "ForkedError",
    "Generator",
    "Health",
    "InvalidArgument",
    "InvalidType",
    "Layout",
    "LayoutError",
    "Lease",
    "LeaseError",
    "NodeIdError",
    "ParseIdError",
    "Persist",
    "ReservingError",
    "SequenceExhaustedError",
    "StateError",
    "StorageError",
    "encode",
    "parse_id",
]
