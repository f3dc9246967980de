"""The exceptions of flakeid_rs: one base, :class:`Error`, and a class per
stable error code. The extension module raises them; each carries the code,
a finer ``detail`` code where there is one, and the reason."""

from typing import Optional


class Error(Exception):
    """Base of every error flakeid_rs raises.

    ``code`` is stable (the same codes as the Node package's ``err.code``);
    ``detail`` refines it for ``lease``, ``state``, ``layout`` and
    ``node_id`` errors (for example ``all_held``, ``unreachable``,
    ``locked``, ``unknown_preset``, ``not_set``); ``str(err)`` is the reason.
    """

    code: str = "error"

    def __init__(self, message: str, *, detail: Optional[str] = None) -> None:
        super().__init__(message)
        self.detail: Optional[str] = detail
        self.reason: str = message


class InvalidArgument(Error, ValueError):
    """An argument's value is out of range, or not one of the names allowed."""

    code = "invalid_argument"


class InvalidType(Error, TypeError):
    """An argument has the wrong type."""

    code = "invalid_type"


class LayoutError(Error, ValueError):
    """A layout spec does not parse, or describes a layout that breaks a rule."""

    code = "layout"


class NodeIdError(Error, ValueError):
    """No node id was chosen (there is no default), node fields were given
    with one left out, or the node id chosen does not fit the layout."""

    code = "node_id"


class ConfigError(Error, ValueError):
    """A setting the layout cannot serve, or out of its range."""

    code = "config"


class StateError(Error):
    """Restart safety's saved state cannot be read, trusted or written."""

    code = "state"


class LeaseError(Error):
    """No node id could be leased (all held, store unreachable, refused...)."""

    code = "lease"


class SequenceExhaustedError(Error):
    """The tick's sequence is used up and the call does not wait.

    ``retry_after``: about how many seconds until the next tick."""

    code = "sequence_exhausted"

    def __init__(self, message: str, *, detail: Optional[str] = None,
                 retry_after: float = 0.0) -> None:
        super().__init__(message, detail=detail)
        self.retry_after: float = retry_after


class ClockBehindError(Error):
    """The clock reads behind the last timestamp and the policy reports it.

    ``behind``: how many seconds behind."""

    code = "clock_behind"

    def __init__(self, message: str, *, detail: Optional[str] = None,
                 behind: float = 0.0) -> None:
        super().__init__(message, detail=detail)
        self.behind: float = behind


class ExpiredError(Error):
    """The clock is past the layout's last instant (``last_ms``, Unix ms)."""

    code = "expired"

    def __init__(self, message: str, *, detail: Optional[str] = None,
                 last_ms: int = 0) -> None:
        super().__init__(message, detail=detail)
        self.last_ms: int = last_ms


class ReservingError(Error):
    """A non-waiting call needs a reservation (or lease ceiling) being saved."""

    code = "reserving"


class StorageError(Error):
    """Restart safety's reservation cannot be saved."""

    code = "storage"


class FencedError(Error):
    """The node-id lease cannot be proven valid: nothing is issued until a
    fresh claim."""

    code = "fenced"


class ForkedError(Error):
    """The generator was built before this process was forked and its node
    id is not leased: build it after the fork, or lease the node id."""

    code = "forked"


class ClosedError(Error):
    """The generator was closed."""

    code = "closed"


class ParseIdError(Error, ValueError):
    """A string is not an ID in the form asked for."""

    code = "parse_id"


class FieldError(Error, ValueError):
    """A value does not fit a layout field, or an ID is not of the layout."""

    code = "field"


#: Every class by its code.
BY_CODE = {cls.code: cls for cls in (
    InvalidArgument, InvalidType, LayoutError, NodeIdError, ConfigError,
    StateError, LeaseError, SequenceExhaustedError, ClockBehindError,
    ExpiredError, ReservingError, StorageError, FencedError, ForkedError,
    ClosedError, ParseIdError, FieldError,
)}
