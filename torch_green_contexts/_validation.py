"""Argument checks that read best in Python; each error names the argument and what is allowed."""

from __future__ import annotations

import operator
from typing import Any, Sequence

from ._native import _C


def as_count(name: str, value: Any) -> int:
    """An int (bool excluded); TypeError otherwise."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an int, not bool ({value!r})")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an int, got {type(value).__name__} ({value!r})") from None


def as_int_at_least(name: str, value: Any, minimum: int | None) -> int:
    """An int (bool excluded; TypeError otherwise) of at least ``minimum`` when one is given
    (ValueError otherwise)."""
    number = as_count(name, value)
    if minimum is not None and number < minimum:
        raise ValueError(f"{name} must be {minimum} or more, got {number}")
    return number


def as_device_id(value: Any) -> int | None:
    """None or a non-negative int; range against the machine is checked by the core."""
    if value is None:
        return None
    device = as_count("device_id", value)
    if device < 0:
        raise RuntimeError(f"device_id must be a CUDA device index (0 or more), got {device}")
    return device


def check_workqueue(scope: Any, limit: Any) -> tuple[_C.WorkqueueScope | None, int | None]:
    """The workqueue options as the core takes them (the core names the scopes it knows)."""
    if scope is not None:
        scope = _C.workqueue_scope(scope)
    if limit is None:
        return scope, None
    if scope is None:
        raise RuntimeError("workqueue_concurrency_limit needs workqueue_scope to be set")
    count = as_count("workqueue_concurrency_limit", limit)
    if count < 1:
        raise ValueError(f"workqueue_concurrency_limit must be 1 or more, got {count}")
    return scope, count


def _is_sequence(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))


def _split_count(name: str, value: Any) -> int:
    if isinstance(value, bool) or not _is_int(value):
        raise ValueError(f"{name} entries must be non-negative ints, got {value!r}")
    count: int = operator.index(value)
    if count < 0:
        raise ValueError(f"{name} entries must be non-negative ints, got {count}")
    if count > 0xFFFFFFFF:
        raise ValueError(f"{name} entries must fit in 32 bits, got {count}")
    return count


def _is_int(value: Any) -> bool:
    try:
        operator.index(value)
    except TypeError:
        return False
    return True


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
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise TypeError(f"priority must be an int, got {type(priority).__name__}")
    if priority == 0:
        return 0
    lowest, highest = _priority_range()
    return max(highest, min(lowest, priority))


def highest_priority() -> int:
    """PyTorch's highest stream priority (the lowest number)."""
    return _priority_range()[1]


def _priority_range() -> tuple[int, int]:
    import torch

    # A static method at run time; torch's stubs declare it as an instance method.
    lowest, highest = torch.cuda.Stream.priority_range()  # type: ignore[call-arg]
    return int(lowest), int(highest)
