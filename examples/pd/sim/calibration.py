"""The simulator's calibration file: what a GPU sweep measured (its device, model, engine and
reference costs, and per lane the decode steps and prefill pieces alone and beside each other,
chunked prefill's mixed iterations, the host's launch costs), written whole or not at all, and
read back with the checks that keep a calibration to the GPU, model and engine it came from.
Plain Python."""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

KIND = "examples.pd calibration"
VERSION = 1
SHAPE_FIELDS = ("hidden", "heads", "kv_heads", "head_dim", "intermediate", "vocab")


class CalibrationError(ValueError):
    """A calibration that cannot serve the simulation asked for; the message says why and what
    to measure."""


def calibration_document(results: dict[str, Any], measured: dict[str, Any]) -> dict[str, Any]:
    """The calibration file of a sweep's set-up (``results`` as the sweep records it: settings,
    device, model, costs, host sleep) and what ``Bench.calibration`` measured."""
    from ..engine.shape import ModelShape

    settings = results["settings"]
    shape = ModelShape(layers=settings["layers"])
    return {
        "kind": KIND, "version": VERSION, "device": results["device"],
        "model": {**results["model"], **{f: getattr(shape, f) for f in SHAPE_FIELDS}},
        "settings": {k: settings[k] for k in ("workload", "chunk", "piece_layers", "context", "budgets", "poll_us",
                                              "max_prompt", "max_output")},
        "costs": results["costs"], "host_sleep_us": results.get("host_sleep_us"), **measured,
    }


def write_calibration(path: str, document: dict[str, Any]) -> None:
    """Write ``document`` to ``path`` through a temporary file renamed into place, so that an
    interrupted write leaves no half-written calibration."""
    folder = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(prefix=".calibration-", suffix=".json", dir=folder)
    try:
        with os.fdopen(handle, "w") as f:
            json.dump(document, f, indent=1)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def load_calibration(path: str) -> dict[str, Any]:
    """The calibration at ``path``; CalibrationError when the file is not one."""
    try:
        with open(path) as f:
            document = json.load(f)
    except OSError as error:
        raise CalibrationError(f"calibration {path}: cannot be read ({error.strerror})") from None
    except json.JSONDecodeError as error:
        raise CalibrationError(f"calibration {path}: not JSON ({error.msg} at line {error.lineno})") from None
    if not isinstance(document, dict) or document.get("kind") != KIND:
        raise CalibrationError(f"{path} is not a calibration of examples.pd (its 'kind' is not {KIND!r}): write one "
                               "with python -m examples.pd --calibrate-only on the GPU")
    if document.get("version") != VERSION:
        raise CalibrationError(f"calibration {path} has version {document.get('version')!r}; this simulator reads "
                               f"version {VERSION}: measure it again with python -m examples.pd --calibrate-only")
    missing = [k for k in ("device", "model", "settings", "costs", "lanes", "mixed", "host") if k not in document]
    if missing:
        raise CalibrationError(f"calibration {path} lacks {', '.join(missing)}: measure it again with "
                               "python -m examples.pd --calibrate-only")
    return document


def check_matches(calibration: dict[str, Any], *, layers: int, device: str | None, path: str) -> None:
    """CalibrationError naming the difference when ``calibration`` was measured for another
    layer count, model shape or GPU (``device`` None: any GPU)."""
    from ..engine.shape import ModelShape

    model = calibration["model"]
    if model.get("layers") != layers:
        raise CalibrationError(f"calibration {path} was measured at {model.get('layers')} layers, not {layers}: "
                               f"simulate --layers {model.get('layers')}, or calibrate at --layers {layers}")
    shape = ModelShape(layers=layers)
    differ = [f"{f} {model.get(f)} (the model has {getattr(shape, f)})" for f in SHAPE_FIELDS
              if model.get(f) != getattr(shape, f)]
    if differ:
        raise CalibrationError(f"calibration {path} is of another model shape: {', '.join(differ)}")
    name = calibration["device"].get("name")
    if device is not None and name != device:
        raise CalibrationError(f"calibration {path} was measured on {name}, not {device}: timings of two GPU models "
                               "never share a simulation")
