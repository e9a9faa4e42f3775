"""Reading the JSON the sizing results write: the wrong kind of JSON, or a damaged one, is a
ValueError that says what was expected, never a bare KeyError."""

from __future__ import annotations

import contextlib
import json
from typing import Any, Iterator

# What each kind's JSON holds at its top level (a LayoutProfile's also says its kind).
KEYS = {
    "SizingResult": ("rows", "plain", "device", "settings"),
    "LatencyProfile": ("params", "results", "settings"),
    "LayoutProfile": ("kind", "layouts", "settings"),
}


def _kind_of(data: dict[str, Any]) -> str | None:
    if isinstance(data.get("kind"), str):
        return str(data["kind"])
    return next((kind for kind, keys in KEYS.items() if all(k in data for k in keys)), None)


def json_object(text: str, what: str) -> dict[str, Any]:
    """The top-level object of ``text``, which must be the JSON ``what.to_json`` writes."""
    data = json.loads(text)  # malformed text: json.JSONDecodeError, a ValueError
    writer = f"{what}.to_json writes it"
    if not isinstance(data, dict):
        raise ValueError(f"not the JSON of a {what} ({writer}): its top level is a JSON {type(data).__name__}")
    kind = _kind_of(data)
    if kind is not None and kind != what:
        raise ValueError(f"not the JSON of a {what} ({writer}): it is the JSON of a {kind}; read it with "
                         f"{kind}.from_json")
    missing = [key for key in KEYS[what] if key not in data]
    if missing:
        raise ValueError(f"not the JSON of a {what} ({writer}): it has no {', '.join(map(repr, missing))}")
    return data


@contextlib.contextmanager
def reading(what: str) -> Iterator[None]:
    """Entries missing or of the wrong type inside a ``what``'s JSON become one ValueError."""
    try:
        yield
    except (KeyError, TypeError, AttributeError) as error:
        raise ValueError(f"a damaged {what} JSON ({what}.to_json writes it): {type(error).__name__} {error}") from None
