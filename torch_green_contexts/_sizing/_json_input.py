"""Reading the JSON the sizing results write: text that is not JSON, a path given for the text,
the wrong kind of JSON, or a damaged one, is a ValueError that says what was expected, never a
bare KeyError (an argument that is neither text, UTF-8 bytes nor a path: a TypeError)."""

from __future__ import annotations

import contextlib
import json
import os
from typing import Any, Callable, Iterator, TypeVar

T = TypeVar("T")

# What each kind's JSON holds at its top level (a LayoutProfile's also says its kind).
KEYS = {
    "SizingResult": ("rows", "plain", "device", "settings"),
    "LatencyProfile": ("params", "results", "settings"),
    "LayoutProfile": ("kind", "layouts", "settings"),
}


def kind_of(data: dict[str, Any]) -> str | None:
    if isinstance(data.get("kind"), str):
        return str(data["kind"])
    return next((kind for kind, keys in KEYS.items() if all(k in data for k in keys)), None)


def _not_a_path(text: Any, what: str) -> ValueError | None:
    """The error for a path given where JSON text belongs: any ``os.PathLike``, or a str that
    names an existing file; None otherwise."""
    if isinstance(text, os.PathLike):
        path = os.fspath(text)
        found = f"got {text!r}" + (", an existing file" if os.path.isfile(path) else "")
    elif isinstance(text, str) and os.path.isfile(text):  # False for a str that cannot be a path
        path, found = text, f"{text!r} names an existing file"
    else:
        return None
    return ValueError(f"{what}.from_json takes JSON text ({what}.to_json writes it), not a path: {found}; "
                      f"read the file first: {what}.from_json(pathlib.Path({path!r}).read_text())")


def read_json(text: Any, what: str, build: Callable[[dict[str, Any]], T]) -> T:
    """``build`` of the top-level object of ``text``, the JSON ``what.to_json`` writes (see
    json_object); entries it finds missing or of the wrong type are one ValueError."""
    data = json_object(text, what)
    with reading(what):
        return build(data)


def json_object(text: str, what: str) -> dict[str, Any]:
    """The top-level object of ``text``, which must be the JSON ``what.to_json`` writes (a str,
    or UTF-8 bytes as a file opened in binary gives)."""
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as decode_error:
            raise ValueError(f"{what}.from_json takes JSON text, and these bytes are not UTF-8 ({decode_error})") from None
    if not isinstance(text, str):
        error = _not_a_path(text, what)
        if error is not None:
            raise error
        raise TypeError(f"{what}.from_json takes JSON text (a str), got {type(text).__name__}")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as decode_error:
        error = _not_a_path(text, what)
        if error is not None:
            raise error from None
        raise ValueError(f"{what}.from_json takes JSON text ({what}.to_json writes it), and this is not JSON "
                         f"({decode_error}); to read a file, pass its text: "
                         f"{what}.from_json(pathlib.Path(path).read_text())") from None
    writer = f"{what}.to_json writes it"
    if not isinstance(data, dict):
        raise ValueError(f"not the JSON of a {what} ({writer}): its top level is a JSON {type(data).__name__}")
    kind = kind_of(data)
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
