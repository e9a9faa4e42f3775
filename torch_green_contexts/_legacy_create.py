"""The torch 2.9-2.14 form of ``GreenContext.create``: ``create(num_sms, device_id=0)`` with
positions. It keeps working, with a FutureWarning naming the keyword form of torch 2.15, which
is what the signature says."""

from __future__ import annotations

import warnings
from typing import Any

from ._validation import is_int

# Their order in torch 2.9-2.14's create(num_sms: int, device_id: int = 0).
POSITIONS = ("num_sms", "device_id")


def keyword_form(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` with ``args`` named as torch 2.9-2.14 named them (``device_id`` 0 unless
    given, as there); warns once per call site that the form will go."""
    if len(args) > len(POSITIONS):
        raise TypeError(
            f"GreenContext.create() takes at most {len(POSITIONS)} positional arguments (num_sms, device_id: "
            f"torch 2.9-2.14's form), got {len(args)}; pass them by keyword"
        )
    named = dict(zip(POSITIONS, args))
    twice = sorted(set(named) & set(kwargs))
    if twice:
        raise TypeError(f"GreenContext.create() got multiple values for argument {twice[0]!r}")
    named.setdefault("device_id", kwargs.pop("device_id", 0))
    shown = ", ".join(f"{name}={_as_suggested(value)}" for name, value in named.items())
    warnings.warn(
        f"GreenContext.create() with positional arguments is torch 2.9-2.14's form; call "
        f"GreenContext.create({shown}) (keyword arguments, torch 2.15's form): positions will stop "
        "working in a later release",
        FutureWarning,
        stacklevel=3,
    )
    return {**kwargs, **named}


def _as_suggested(value: Any) -> str:
    # Only a value that could be right is copied into the suggested call; create's own check
    # names what is wrong with any other.
    if is_int(value):
        return repr(value)
    return "<int>"
