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
    """The counts and floors no device allows, named when device ``device_id`` cannot be read (no
    driver, no such device): negative counts, negative floors, floors both 0. When the device can
    be read, :func:`check_counts` and :func:`check_floors` reject them, with the device's figures."""
    negative = [k for k in counts if k < 0]
    wrong = [(a, b) for a, b in pairs if a < 0 or b < 0 or a + b == 0]
    if not (negative or wrong) or not device_unreadable(device_id):
        return
    if negative:
        raise ValueError(f"latency_sms entries must be between 0 (every SM to batch work) and the SM count of "
                         f"the device (every SM to the latency side), got {negative}")
    latency_floor, batch_floor = wrong[0]
    where = f"overlapped layout ({latency_floor}, {batch_floor})"
    if latency_floor < 0 or batch_floor < 0:
        raise ValueError(f"{where}: floors must be multiples of the smallest partition of the device, of 0 or more")
    raise ValueError(f"{where}: at least one floor must be positive (with no floors both sides share every SM: "
                     "that is the end layout of all the device's SMs)")


def check_counts(counts: list[int], total: int, device: int) -> None:
    """Every latency SM count within the device's ``total`` SMs."""
    wrong = [k for k in counts if not 0 <= k <= total]
    if wrong:
        raise ValueError(f"latency_sms entries must be between 0 (every SM to batch work) and "
                         f"{total} (every SM of device {device} to the latency side), got {wrong}")


def check_floors(pairs: list[tuple[int, int]], step: int, total: int, device: int) -> None:
    """Every pair of floors multiples of ``step`` SMs, at least one of them positive, leaving
    SMs of the device's ``total`` to share."""
    for latency_floor, batch_floor in pairs:
        where = f"overlapped layout ({latency_floor}, {batch_floor})"
        if latency_floor < 0 or batch_floor < 0 or latency_floor % step or batch_floor % step:
            raise ValueError(f"{where}: floors must be multiples of {step} SMs (the smallest partition of "
                             f"device {device}) of 0 or more")
        if latency_floor + batch_floor == 0:
            raise ValueError(f"{where}: at least one floor must be positive (with no floors both sides share "
                             f"every SM: that is the end layout {total})")
        if latency_floor + batch_floor >= total:
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
