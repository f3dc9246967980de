"""Running a function in a forked child, for the tests that fork."""

import os
import pickle
from typing import Any, Callable, Tuple

import flakeid_rs


def in_child(fn: Callable[[], Any]) -> Tuple[int, Any]:
    """Forks; the child runs `fn` and sends back its result or its error
    (class name, code); returns (child pid, result). The child ends with
    os._exit, as a pre-fork worker does when it is done."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            result: Any = ("ok", fn())
        except flakeid_rs.Error as e:
            result = ("error", type(e).__name__, e.code, str(e))
        except BaseException as e:  # noqa: BLE001 - reported to the parent
            result = ("crash", repr(e))
        with os.fdopen(write, "wb") as out:
            pickle.dump(result, out)
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as inp:
        data = inp.read()
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    return pid, pickle.loads(data)
