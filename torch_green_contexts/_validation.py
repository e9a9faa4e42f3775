"""Argument checks that read best in Python; each error names the argument and what is allowed."""

from __future__ import annotations

import math
import numbers
import operator
from typing import Any, Iterable, Sequence

from ._native import _C


def is_int(value: Any) -> bool:
    """Whether ``value`` is an int here: anything ``operator.index`` takes (numpy's integers
    too), but not a bool."""
    if isinstance(value, bool):
        return False
    try:
        operator.index(value)
    except TypeError:
        return False
    return True


def as_count(name: str, value: Any, what: str = "an int") -> int:
    """An int (bool excluded); TypeError otherwise, saying ``name`` must be ``what``."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be {what}, not bool ({value!r})")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be {what}, got {type(value).__name__} ({value!r})") from None


def as_int_at_least(name: str, value: Any, minimum: int | None) -> int:
    """An int (bool excluded; TypeError otherwise) of at least ``minimum`` when one is given
    (ValueError otherwise)."""
    number = as_count(name, value)
    if minimum is not None and number < minimum:
        raise ValueError(f"{name} must be {minimum} or more, got {number}")
    return number


def as_sequence(name: str, value: Any, what: str) -> list[Any]:
    """The items of an iterable that is not a string, as a list; TypeError otherwise, saying
    ``name`` must be ``what``."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise TypeError(f"{name} must be {what}, got {type(value).__name__}")
    return list(value)


def as_bool(name: str, value: Any) -> bool:
    """A bool; TypeError otherwise (an int is not a bool here)."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return value


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
    return device


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
    return scope, as_int_at_least("workqueue_concurrency_limit", limit, 1)


def _is_sequence(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))


def _split_count(name: str, value: Any) -> int:
    if not is_int(value):
        raise ValueError(f"{name} entries must be non-negative ints, got {value!r}")
    count: int = operator.index(value)
    if count < 0:
        raise ValueError(f"{name} entries must be non-negative ints, got {count}")
    if count > 0xFFFFFFFF:
        raise ValueError(f"{name} entries must fit in 32 bits, got {count}")
    return count


def _backfill(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"backfill entries must be bools, got {value!r}")
    return value


def _locality(value: Any) -> int | None:
    if value is None:
        return None
    return _split_count("locality_domain_ids", value)


def split_groups(
    num_sms: Any,
    coscheduled_sm_count: Any,
    preferred_coscheduled_sm_count: Any,
    backfill: Any,
    locality_domain_ids: Any,
) -> list[tuple[int, int, int, bool, int | None]]:
    """Broadcasts the split options to one tuple per group and checks every entry's type.

    Each option is a scalar or a sequence; all sequences must share one nonzero length and
    scalars broadcast to it; all scalars make one group. The rules between groups (a
    discovery group with backfill only last) are the core's.
    """
    options = {
        "num_sms": (num_sms, _split_count),
        "coscheduled_sm_count": (coscheduled_sm_count, _split_count),
        "preferred_coscheduled_sm_count": (preferred_coscheduled_sm_count, _split_count),
        "backfill": (backfill, lambda _name, v: _backfill(v)),
        "locality_domain_ids": (locality_domain_ids, lambda _name, v: _locality(v)),
    }
    lengths = {}
    for name, (value, _) in options.items():
        if _is_sequence(value):
            if len(value) == 0:
                raise ValueError(f"{name} is an empty sequence; give a scalar or at least one entry")
            lengths[name] = len(value)
    if len(set(lengths.values())) > 1:
        detail = ", ".join(f"{name} has {n}" for name, n in lengths.items())
        raise ValueError(f"split options given as sequences must have the same length ({detail})")
    groups = next(iter(lengths.values()), 1)
    columns = []
    for name, (value, convert) in options.items():
        entries = list(value) if _is_sequence(value) else [value] * groups
        columns.append([convert(name, v) for v in entries])
    return [tuple(column[i] for column in columns) for i in range(groups)]  # type: ignore[misc]


def split_requests(
    num_sms: Any,
    coscheduled_sm_count: Any,
    preferred_coscheduled_sm_count: Any,
    backfill: Any,
    locality_domain_ids: Any,
) -> list[_C.GroupRequest]:
    """The split options as the core's group requests, one per group (see split_groups)."""
    groups = split_groups(
        num_sms, coscheduled_sm_count, preferred_coscheduled_sm_count, backfill, locality_domain_ids
    )
    return [_C.GroupRequest(*group) for group in groups]


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
