"""The simulated driver's test controls (tgc_sim_*, tests/simdriver/sim_driver.h) through ctypes,
and the checks the tests against it share. The library is the one the core loads:
TORCH_GREEN_CONTEXTS_DRIVER_LIBRARY. Used by tests/sim/conftest.py's fixtures and by the scripts
that tests/_sim.py runs in fresh interpreters."""

from __future__ import annotations

import ctypes
import functools
import gc
import os
from typing import Any, Callable

__all__ = ["calls", "fail_next", "live", "fails", "raised", "assert_nothing_in_use", "sms_of_handle", "mapping_at"]

LIBRARY_ENV = "TORCH_GREEN_CONTEXTS_DRIVER_LIBRARY"


def is_simulated_driver(path: str | None) -> bool:
    """Whether `path` is a library with the simulated driver's controls."""
    if not path:
        return False
    try:
        return hasattr(ctypes.CDLL(path), "tgc_sim_live")
    except OSError:
        return False


@functools.lru_cache(maxsize=None)
def driver() -> ctypes.CDLL:
    library = ctypes.CDLL(os.environ[LIBRARY_ENV])
    library.tgc_sim_green_ctx_sms.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int), ctypes.c_int]
    library.tgc_sim_mapping_at.argtypes = [ctypes.c_ulonglong, ctypes.POINTER(ctypes.c_int),
                                           ctypes.POINTER(ctypes.c_int)]
    return library


def fail_next(call: str, code: int, skip: int = 0) -> None:
    """The (skip+1)-th next call of entry point `call` returns `code`."""
    driver().tgc_sim_fail_next(call.encode(), code, skip)


def clear_failures() -> None:
    driver().tgc_sim_clear_failures()


def live(kind: str) -> int:
    """Live handles of `kind`: "green_ctx", "stream", "event", "library", "memory" (device
    memory), "reservation" (address ranges) or "primary_retain" (unreleased retains of the
    primary context)."""
    count: int = driver().tgc_sim_live(kind.encode())
    return count


def calls(call: str) -> int:
    """How many times entry point `call` was called in this process."""
    count: int = driver().tgc_sim_calls(call.encode())
    return count


def sms_of_handle(green_ctx: int) -> set[int]:
    """The SM ids of the green context with handle `green_ctx`."""
    out = (ctypes.c_int * 256)()
    n = driver().tgc_sim_green_ctx_sms(green_ctx, out, 256)
    return set(out[:n])


def mapping_at(address: int) -> tuple[int, bool] | None:
    """The device memory mapped at `address`: its locality domain (-1: the whole device) and
    whether it was made accessible; None where nothing is mapped."""
    domain, accessible = ctypes.c_int(), ctypes.c_int()
    if driver().tgc_sim_mapping_at(address, ctypes.byref(domain), ctypes.byref(accessible)) != 0:
        return None
    return domain.value, bool(accessible.value)


def fails(call: Callable[[], Any], error: type[BaseException], text: str) -> None:
    """`call` raises `error` (exactly that type or a subclass) with `text` in its message."""
    try:
        call()
    except error as caught:
        assert text in str(caught), caught
    else:
        raise AssertionError(f"no {error.__name__}")


def raised(call: Callable[[], Any]) -> Exception:
    """What `call` raises (failing when it raises nothing)."""
    try:
        call()
    except Exception as error:
        return error
    raise AssertionError("nothing raised")


def assert_nothing_in_use() -> None:
    """Nothing held by the core after a loop of calls, and no green context left once the idle
    ones are released."""
    import torch_green_contexts as tgc

    gc.collect()
    counts = tgc.live_counts()
    assert counts["contexts"] + counts["streams"] + counts["internal_contexts"] == 0, counts
    tgc.release_idle_contexts()
    assert live("green_ctx") == 0
    assert (live("memory"), live("reservation"), live("primary_retain")) == (0, 0, 0), "device memory left"
