"""The options of ``SMPartition.split`` and ``GreenContext.split`` as the core's group requests.

Each option is a scalar or a sequence of entries: a list, tuple or range, or a one-dimensional
NumPy array or torch tensor. Counts are ints (NumPy's and torch's integers too; never a bool or
a float), ``backfill`` entries bools (NumPy's and torch's too). Bad values are ValueErrors
naming the option and the value.
"""

from __future__ import annotations

import operator
from typing import Any, Callable, Iterable, Sequence

from ._native import _C
from ._validation import dimensions, is_bool, is_int

# What a split option may be besides a scalar, as the errors name it.
_SEQUENCES = "a list, tuple or range, or a one-dimensional NumPy array or torch tensor"


def _entries(name: str, value: Any) -> list[Any] | None:
    """The entries of an option given as a sequence; None for a scalar (checked as an entry).
    ValueError for an array of more dimensions and for an iterable with no length or order to
    broadcast against (an iterator, a generator, a set), named by what it is."""
    if isinstance(value, (str, bytes)):
        return None
    rank = dimensions(value)
    if rank > 1:
        raise ValueError(f"{name} must be a scalar or one-dimensional, got a {rank}-dimensional "
                         f"{type(value).__name__}")
    if rank == 1 or isinstance(value, Sequence):
        return list(value)
    if isinstance(value, Iterable) and not hasattr(value, "dtype"):  # a zero-dimensional array is a scalar
        raise ValueError(f"{name} must be a scalar or a sequence ({_SEQUENCES}), got a "
                         f"{type(value).__name__}; pass list(...) of it")
    return None


def _split_count(name: str, value: Any) -> int:
    if not is_int(value):
        raise ValueError(f"{name} entries must be non-negative ints, got {value!r}")
    count: int = operator.index(value)
    if count < 0:
        raise ValueError(f"{name} entries must be non-negative ints, got {count}")
    if count > 0xFFFFFFFF:
        raise ValueError(f"{name} entries must fit in 32 bits, got {count}")
    return count


def _backfill(_name: str, value: Any) -> bool:
    if not is_bool(value):
        raise ValueError(f"backfill entries must be bools, got {value!r}")
    return bool(value)


def _locality(name: str, value: Any) -> int | None:
    if value is None:
        return None
    return _split_count(name, value)


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
    options: dict[str, tuple[Any, Callable[[str, Any], Any]]] = {
        "num_sms": (num_sms, _split_count),
        "coscheduled_sm_count": (coscheduled_sm_count, _split_count),
        "preferred_coscheduled_sm_count": (preferred_coscheduled_sm_count, _split_count),
        "backfill": (backfill, _backfill),
        "locality_domain_ids": (locality_domain_ids, _locality),
    }
    entries = {name: _entries(name, value) for name, (value, _) in options.items()}
    lengths = {name: len(items) for name, items in entries.items() if items is not None}
    for name, length in lengths.items():
        if length == 0:
            raise ValueError(f"{name} is an empty sequence; give a scalar or at least one entry")
    if len(set(lengths.values())) > 1:
        detail = ", ".join(f"{name} has {n}" for name, n in lengths.items())
        raise ValueError(f"split options given as sequences must have the same length ({detail})")
    groups = next(iter(lengths.values()), 1)
    columns = []
    for name, (value, convert) in options.items():
        items = entries[name]
        columns.append([convert(name, v) for v in (items if items is not None else [value] * groups)])
    return [tuple(column[i] for column in columns) for i in range(groups)]


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
