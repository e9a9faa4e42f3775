"""Argument checks that read best in Python; each error names the argument and what is allowed."""

from __future__ import annotations

import math
import numbers
import operator
from typing import Any, Iterable, Sequence

from ._native import _C


# The dtypes of NumPy's and torch's booleans, as str() spells them.
_BOOL_DTYPES = ("bool", "torch.bool")
# The range of the core's 64-bit integer arguments.
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def dimensions(value: Any) -> int:
    """How many dimensions ``value`` has as a NumPy array or torch tensor (0 for a scalar and
    for anything else)."""
    ndim = getattr(value, "ndim", 0)
    return ndim if isinstance(ndim, int) else 0


def is_bool(value: Any) -> bool:
    """Whether ``value`` is a bool here: Python's, or a NumPy or torch boolean scalar
    (``np.bool_``, a zero-dimensional bool array or tensor)."""
    if isinstance(value, bool):
        return True
    dtype = getattr(value, "dtype", None)
    return dtype is not None and dimensions(value) == 0 and str(dtype) in _BOOL_DTYPES


def is_int(value: Any) -> bool:
    """Whether ``value`` is an int here: anything ``operator.index`` takes (NumPy's integers and
    zero-dimensional integer arrays and tensors too), but not a bool."""
    if is_bool(value) or dimensions(value) > 0:
        return False
    try:
        operator.index(value)
    except TypeError:
        return False
    return True


def as_count(name: str, value: Any, what: str = "an int") -> int:
    """An int (bool excluded); TypeError otherwise, saying ``name`` must be ``what``."""
    if is_bool(value):
        raise TypeError(f"{name} must be {what}, not bool ({value!r})")
    if not is_int(value):
        raise TypeError(f"{name} must be {what}, got {type(value).__name__} ({value!r})")
    return operator.index(value)


def as_int_at_least(name: str, value: Any, minimum: int | None, maximum: int | None = None) -> int:
    """An int (bool excluded; TypeError otherwise) of at least ``minimum`` and at most
    ``maximum`` when they are given (ValueError otherwise)."""
    number = as_count(name, value)
    if minimum is not None and number < minimum:
        raise ValueError(f"{name} must be {minimum} or more, got {number}")
    if maximum is not None and number > maximum:
        raise ValueError(f"{name} must be between {minimum} and {maximum}, got {number}")
    return number


def for_the_core(number: int) -> int:
    """``number`` as the core's 64-bit integer arguments take it: beyond their range, the
    nearest end, which the core's messages show as "9223372036854775807 or more" (or "or
    less"), so that no integer is too wide to be named in its error."""
    return min(max(number, _INT64_MIN), _INT64_MAX)


def as_sequence(name: str, value: Any, what: str) -> list[Any]:
    """The items of an iterable that is not a string, as a list; TypeError otherwise, saying
    ``name`` must be ``what``."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise TypeError(f"{name} must be {what}, got {type(value).__name__}")
    return list(value)


def as_bool(name: str, value: Any) -> bool:
    """A bool (NumPy's and torch's boolean scalars too); TypeError otherwise (an int is not a
    bool here)."""
    if not is_bool(value):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return bool(value)


def is_number(value: Any) -> bool:
    """Whether ``value`` is a real number here: an int or a float (any ``numbers.Real``), but
    not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def as_finite(name: str, value: Any, what: str = "a finite number") -> float:
    """A finite real number (bool excluded) as a float: TypeError for anything but a real
    number, ValueError for NaN or an infinity; either says ``name`` must be ``what``."""
    if not is_number(value):
        raise TypeError(f"{name} must be {what}, got {type(value).__name__} ({value!r})")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be {what}, got {value!r}")
    return float(value)


def as_number_in(name: str, value: Any, *, low: float = 0.0, below: float = math.inf, meaning: str = "") -> float:
    """A finite number (as :func:`as_finite`) of at least ``low`` and below ``below`` (ValueError
    otherwise, followed by ``meaning``), as a float."""
    number = as_finite(name, value)
    if not low <= number < below:
        bounds = f"at least {low:g}" + ("" if below == math.inf else f" and below {below:g}")
        raise ValueError(f"{name} must be {bounds}{meaning}, got {value!r}")
    return number


def as_positive_us(name: str, value: Any) -> float:
    """A duration in microseconds as a float: TypeError for anything but a real number (bool
    excluded), ValueError for one that is not finite or not above 0."""
    if not is_number(value):
        raise TypeError(f"{name} must be a number of microseconds, got {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive number of microseconds, got {value!r}")
    return float(value)


_PLAIN = (int, float)


def check_non_negative(name: str, value: Any, what: str) -> None:
    """TypeError unless ``value`` is a real number (bool excluded), ValueError unless it is
    finite and 0 or more; ``what`` says what ``name`` is. Cheap for an int or a float (the
    policies check every step's figures)."""
    if type(value) in _PLAIN and 0 <= value < math.inf:
        return
    if not is_number(value):
        raise TypeError(f"{name} must be a number ({what}), got {type(value).__name__} ({value!r})")
    if not 0 <= value < math.inf:
        raise ValueError(f"{name} must be a finite number of 0 or more ({what}), got {value!r}")


def check_decode_point(batch: Any, context_tokens: Any) -> None:
    """A decode step's figures, as the layout cost models take them: ``batch`` and
    ``context_tokens`` each a finite number of 0 or more (checked every step: an int or a float
    costs one test)."""
    if type(batch) in _PLAIN and type(context_tokens) in _PLAIN and 0 <= batch < math.inf \
            and 0 <= context_tokens < math.inf:
        return
    check_non_negative("batch", batch, "the decode batch size")
    check_non_negative("context_tokens", context_tokens, "the context tokens of the batch in all")


def check_has(name: str, value: Any, what: str, attributes: Sequence[str]) -> None:
    """TypeError, saying ``name`` must be ``what``, when ``value`` is a class or lacks one of
    ``attributes`` (a stand-in with all of them passes)."""
    missing = [a for a in attributes if not hasattr(value, a)]
    if isinstance(value, type):
        raise TypeError(f"{name} must be {what}, got the class {value.__name__} itself")
    if missing:
        raise TypeError(f"{name} must be {what}, got {type(value).__name__}, which has no "
                        f"{' or '.join(missing)}")


def as_device_id(value: Any) -> int | None:
    """None or a non-negative int; range against the machine is checked by the core."""
    if value is None:
        return None
    device = as_count("device_id", value)
    if device < 0:
        raise RuntimeError(f"device_id must be a CUDA device index (0 or more), got {device}")
    return for_the_core(device)


def device_unreadable(device_id: Any) -> bool:
    """Whether the SM count of ``device_id`` (None: PyTorch's current device) cannot be read:
    no driver, no device, no such device. Asked only on the way to an error, about a count no
    device allows: when the device can be read, the device's own check reports the count, with
    the device's figures; when it cannot, the check that needs no device names the count,
    rather than the driver's or the device's absence hiding it. A ``device_id`` that is no
    device index at all raises as :func:`as_device_id` does."""
    device = as_device_id(device_id)
    try:
        _C.device_sm_count(_C.resolve_device(device))
    except RuntimeError:
        return True
    return False


def check_workqueue(scope: Any, limit: Any) -> tuple[_C.WorkqueueScope | None, int | None]:
    """The workqueue options as the core takes them (the core names the scopes it knows)."""
    if scope is not None:
        scope = _C.workqueue_scope(scope)
    if limit is None:
        return scope, None
    if scope is None:
        raise RuntimeError("workqueue_concurrency_limit needs workqueue_scope to be set")
    return scope, as_int_at_least("workqueue_concurrency_limit", limit, 1, 0xFFFFFFFF)


def check_priority(priority: Any) -> int:
    """A stream priority as an int, clamped to PyTorch's range (lower numbers: higher priority)."""
    number = as_count("priority", priority)
    if number == 0:
        return 0
    lowest, highest = _priority_range()
    return max(highest, min(lowest, number))


def highest_priority() -> int:
    """PyTorch's highest stream priority (the lowest number)."""
    return _priority_range()[1]


def _priority_range() -> tuple[int, int]:
    import torch

    # A static method at run time; torch's stubs declare it as an instance method.
    lowest, highest = torch.cuda.Stream.priority_range()  # type: ignore[call-arg]
    return int(lowest), int(highest)
