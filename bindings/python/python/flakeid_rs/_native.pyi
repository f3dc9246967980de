"""Type stubs of the extension module flakeid_rs._native."""

import datetime
from collections.abc import Mapping, Sequence
from os import PathLike
from types import TracebackType
from typing import Literal, Optional, Union, final

_Seconds = Union[int, float, datetime.timedelta]
_Format = Literal["decimal", "hex", "base32", "base62"]

@final
class Layout:
    """The bit plan of an ID: a preset name (``twitter``, ``discord``,
    ``sonyflake``, ``js_safe``, ``instagram``, ``instagram:<epoch ms>``) or
    the spec text ``epoch=<ms> [unit=<ms>] fields=timestamp:<bits>,...``.

    Raises LayoutError with the reason."""

    def __init__(self, spec: Union[str, "Layout"]) -> None: ...
    @property
    def spec(self) -> str: ...
    @property
    def epoch_ms(self) -> int: ...
    @property
    def unit_ms(self) -> int: ...
    @property
    def max_node_id(self) -> int: ...
    @property
    def capacity_per_tick(self) -> int: ...
    @property
    def last_ms(self) -> int: ...
    @property
    def fields(self) -> list[tuple[str, str, int]]:
        """``(name, kind, bits)`` from the highest bit down; kind is
        ``timestamp``, ``node``, ``sequence`` or ``clock_id``."""
    def decode(self, id: int) -> "Decoded":
        """Reads an ID back. Raises FieldError if it is not of this layout."""
    def compose(
        self,
        *,
        timestamp: Optional[int] = None,
        unix_ms: Optional[int] = None,
        node_id: Optional[int] = None,
        node_fields: Optional[Mapping[str, int]] = None,
        sequence: Optional[int] = None,
        clock_id: Optional[int] = None,
    ) -> int:
        """An ID from its parts (one of ``timestamp``, in ticks since the
        epoch, and ``unix_ms``; ``node_id``, or ``node_fields`` with every
        node field, default node 0). Raises FieldError if a part does not
        fit or a node field is left out."""
    def node_id_from_fields(self, fields: Mapping[str, int]) -> int:
        """The node id of named node fields, every one of the layout's.
        Raises FieldError for a field the layout does not have, a value that
        does not fit, or a node field left out."""
    def __eq__(self, other: object) -> bool: ...
    def __hash__(self) -> int: ...

@final
class Decoded:
    """An ID read back through its layout; ``str()`` gives the time in RFC
    3339 and every field."""

    @property
    def id(self) -> int: ...
    @property
    def timestamp(self) -> int: ...
    @property
    def unix_ms(self) -> int: ...
    @property
    def rfc3339(self) -> str: ...
    @property
    def datetime(self) -> datetime.datetime: ...
    @property
    def node_id(self) -> int: ...
    @property
    def fields(self) -> dict[str, int]: ...
    @property
    def sequence(self) -> int: ...
    @property
    def clock_id(self) -> int: ...

@final
class Lease:
    """A node id leased from etcd, Redis, Redis behind Sentinel, PostgreSQL
    or MySQL/MariaDB, with fencing. Durations are seconds (or
    ``timedelta``)."""

    @staticmethod
    def etcd(
        endpoints: Sequence[str],
        *,
        prefix: Optional[str] = None,
        ttl: Optional[_Seconds] = None,
        safety_margin: Optional[_Seconds] = None,
        connect_timeout: Optional[_Seconds] = None,
        node_ids: Optional[tuple[int, int]] = None,
        rotate_after_rollback: Optional[_Seconds] = None,
        max_mark_ahead: Optional[_Seconds] = None,
    ) -> "Lease": ...
    @staticmethod
    def redis(
        url: str,
        *,
        prefix: Optional[str] = None,
        ttl: Optional[_Seconds] = None,
        safety_margin: Optional[_Seconds] = None,
        connect_timeout: Optional[_Seconds] = None,
        node_ids: Optional[tuple[int, int]] = None,
        rotate_after_rollback: Optional[_Seconds] = None,
        max_mark_ahead: Optional[_Seconds] = None,
        wait_for_replicas: Optional[int] = None,
    ) -> "Lease": ...
    @staticmethod
    def redis_sentinel(
        sentinels: Sequence[str],
        master: str,
        *,
        prefix: Optional[str] = None,
        ttl: Optional[_Seconds] = None,
        safety_margin: Optional[_Seconds] = None,
        connect_timeout: Optional[_Seconds] = None,
        node_ids: Optional[tuple[int, int]] = None,
        rotate_after_rollback: Optional[_Seconds] = None,
        max_mark_ahead: Optional[_Seconds] = None,
        wait_for_replicas: Optional[int] = None,
    ) -> "Lease": ...
    @staticmethod
    def postgres(
        url: str,
        *,
        table: Optional[str] = None,
        create_table: Optional[bool] = None,
        prefix: Optional[str] = None,
        ttl: Optional[_Seconds] = None,
        safety_margin: Optional[_Seconds] = None,
        connect_timeout: Optional[_Seconds] = None,
        node_ids: Optional[tuple[int, int]] = None,
        rotate_after_rollback: Optional[_Seconds] = None,
        max_mark_ahead: Optional[_Seconds] = None,
    ) -> "Lease": ...
    @staticmethod
    def mysql(
        url: str,
        *,
        table: Optional[str] = None,
        create_table: Optional[bool] = None,
        prefix: Optional[str] = None,
        ttl: Optional[_Seconds] = None,
        safety_margin: Optional[_Seconds] = None,
        connect_timeout: Optional[_Seconds] = None,
        node_ids: Optional[tuple[int, int]] = None,
        rotate_after_rollback: Optional[_Seconds] = None,
        max_mark_ahead: Optional[_Seconds] = None,
    ) -> "Lease": ...
    @property
    def store(self) -> Literal["etcd", "redis", "redis_sentinel", "postgres", "mysql"]: ...

@final
class Persist:
    """Restart safety: a high-water mark saved in the file at ``path``."""

    def __init__(
        self,
        path: Union[str, "PathLike[str]"],
        *,
        window: Optional[_Seconds] = None,
        restart_rule: Optional[Literal["high_water_mark", "next_clock_id"]] = None,
        replace_issued_until_ms: Optional[int] = None,
    ) -> None: ...
    @property
    def path(self) -> str: ...

@final
class Health:
    """What a generator can do now."""

    @property
    def state(
        self,
    ) -> Literal["issuing", "fenced", "storage_failing", "expired", "forked", "closed"]: ...
    @property
    def ready(self) -> bool: ...
    @property
    def closed_for(self) -> Optional[float]: ...
    @property
    def last_ms(self) -> Optional[int]: ...
    @property
    def reason(self) -> Optional[str]: ...

@final
class Generator:
    """A lock-free Snowflake ID generator, safe to share between threads.

    ``next_*`` wait as the policies say (the GIL released while they wait);
    ``try_*`` also raise FencedError and StorageError at once; ``poll_*``
    never wait. Build it with one node id source (see the package docs);
    ``node_fields`` names every node field of the layout (one meant to be 0
    is given as 0), and one left out raises NodeIdError (detail
    ``field_not_set``)."""

    def __init__(
        self,
        layout: Union[str, Layout],
        *,
        node_id: Optional[int] = None,
        node_fields: Optional[Mapping[str, int]] = None,
        node_id_from_env: Optional[str] = None,
        node_id_from_statefulset: Optional[bool] = None,
        node_id_from_hostname: Optional[str] = None,
        single_node: Optional[bool] = None,
        lease: Optional[Lease] = None,
        on_exhausted: Optional[Literal["wait", "borrow", "error", "next_clock"]] = None,
        max_ahead: Optional[_Seconds] = None,
        on_clock_behind: Optional[Literal["continue", "wait", "error", "next_clock"]] = None,
        max_wait: Optional[_Seconds] = None,
        random_start: Optional[int] = None,
        seed: Optional[int] = None,
        clock_id: Optional[int] = None,
        counters: Optional[bool] = None,
        persist: Optional[Persist] = None,
    ) -> None: ...
    def next_id(self) -> int: ...
    def try_next_id(self) -> int: ...
    def poll_id(self) -> int: ...
    def next_ids(self, n: int) -> list[int]:
        """Exactly ``n`` consecutive IDs, increasing. For large ``n`` prefer
        ``next_ids_buffer``, which makes no int object per ID."""
    def try_next_ids(self, n: int) -> list[int]: ...
    def poll_ids(self, n: int) -> list[int]:
        """Up to ``n`` IDs that can be issued without waiting (at least one)."""
    def next_ids_buffer(self, n: int) -> memoryview:
        """Exactly ``n`` IDs in a read-only memoryview of format ``Q``
        (native-endian uint64): ``numpy.frombuffer(view, numpy.uint64)``
        reads it without a copy."""
    def health(self) -> Health: ...
    @property
    def node_id(self) -> int: ...
    @property
    def last_id(self) -> int: ...
    @property
    def layout(self) -> Layout: ...
    @property
    def lease_skipped_node_ids(self) -> int: ...
    def stats(self) -> Optional[dict[str, int]]: ...
    def decode(self, id: int) -> Decoded: ...
    def close(self) -> None:
        """Releases the leased node id or saves the last mark now."""
    def __enter__(self) -> "Generator": ...
    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool: ...
    def _floor(self) -> int: ...

def encode(id: int, format: Optional[_Format] = None) -> str:
    """``id`` as decimal (the default), hex, Crockford base32 or base62."""

def parse_id(text: str, format: Optional[_Format] = None) -> int:
    """An ID from a string form; without ``format``, the form the string's
    shape says. Raises ParseIdError with the reason."""

def _set_fork_detection_for_tests(on: bool) -> None: ...
