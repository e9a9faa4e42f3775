"""The arguments of :class:`~torch_green_contexts.layouts.Layouts` checked, before any context
is made: the latency SM counts, the overlapped layouts' floors (against the device; those no
device allows even without one), the orderings of a switch and the roles of a handoff. The
policies take the same orderings."""

from __future__ import annotations

from typing import Any, Iterable

from ._validation import as_count, as_sequence, device_unreadable

ORDERINGS = ("full", "per_role")
ROLES = ("latency", "batch")


def check_ordering(ordering: object) -> str:
    if ordering not in ORDERINGS:
        raise ValueError(f"ordering must be one of {ORDERINGS}, got {ordering!r}")
    return str(ordering)


def check_role(role: object) -> str:
    if role not in ROLES:
        raise ValueError(f"role must be one of {ROLES}, got {role!r}")
    return str(role)


def layout_requests(latency_sms: Any, overlapped: Any) -> tuple[list[int], list[tuple[int, int]]]:
    """The latency SM counts and the overlapped layouts' ``(latency_floor, batch_floor)`` pairs
    asked for: ints, at least one layout in all, none twice."""
    counts = _ints("latency_sms", as_sequence("latency_sms", latency_sms, "a sequence of SM counts"))
    pairs = _floor_pairs(overlapped)
    if not counts and not pairs:
        raise ValueError("Layouts needs at least one layout: an SM count in latency_sms or a pair in overlapped")
    if len(set(counts)) != len(counts):
        raise ValueError(f"latency_sms has repeated counts: {counts}")
    if len(set(pairs)) != len(pairs):
        raise ValueError(f"overlapped has repeated floors: {pairs}")
    return counts, pairs


def check_without_device(counts: list[int], pairs: list[tuple[int, int]], device_id: int | None) -> None:
    """The counts and floors no device allows (negative counts, negative floors, floors both 0),
    named when device ``device_id`` cannot be read (no driver, no such device); when it can be
    read, the checks with its figures name them."""
    if any(k < 0 for k in counts) or any(a < 0 or b < 0 or a + b == 0 for a, b in pairs):
        if device_unreadable(device_id):
            check_counts(counts, None, None)
            check_floors(pairs, None, None, None)


def check_counts(counts: list[int], total: int | None, device: int | None) -> None:
    """Every latency SM count within the device's ``total`` SMs (None: not known, only 0 or more)."""
    wrong = [k for k in counts if k < 0 or (total is not None and k > total)]
    if wrong:
        bound = ("the SM count of the device (every SM to the latency side)" if total is None
                 else f"{total} (every SM of device {device} to the latency side)")
        raise ValueError(f"latency_sms entries must be between 0 (every SM to batch work) and {bound}, got {wrong}")


def check_floors(pairs: list[tuple[int, int]], step: int | None, total: int | None, device: int | None) -> None:
    """Every pair of floors multiples of ``step`` SMs, at least one of them positive, leaving
    SMs of the device's ``total`` to share (``step`` and ``total`` None: not known, so only what
    no device allows)."""
    for latency_floor, batch_floor in pairs:
        where = f"overlapped layout ({latency_floor}, {batch_floor})"
        unaligned = step is not None and bool(latency_floor % step or batch_floor % step)
        if latency_floor < 0 or batch_floor < 0 or unaligned:
            size = ("the smallest partition of the device, of 0 or more" if step is None
                    else f"{step} SMs (the smallest partition of device {device}) of 0 or more")
            raise ValueError(f"{where}: floors must be multiples of {size}")
        if latency_floor + batch_floor == 0:
            end = "of all the device's SMs" if total is None else f"{total}"
            raise ValueError(f"{where}: at least one floor must be positive (with no floors both sides share "
                             f"every SM: that is the end layout {end})")
        if total is not None and latency_floor + batch_floor >= total:
            raise ValueError(f"{where}: the floors take {latency_floor + batch_floor} of the {total} SMs of "
                             f"device {device}, leaving none to share; leave at least one")


def _ints(name: str, values: Iterable[Any]) -> list[int]:
    return [as_count(f"{name} entries", value, "ints") for value in values]


def _floor_pairs(overlapped: Any) -> list[tuple[int, int]]:
    pairs = []
    for pair in as_sequence("overlapped", overlapped, "a sequence of (latency_floor, batch_floor) pairs"):
        items = as_sequence("overlapped entries", pair, "a sequence of two SM counts")
        if len(items) != 2:
            raise ValueError(f"overlapped entries must be (latency_floor, batch_floor) pairs, got {pair!r}")
        latency_floor, batch_floor = _ints("overlapped", items)
        pairs.append((latency_floor, batch_floor))
    return pairs
