"""Layout profiles the two-SLO policies read, joined from parts: the sweep's disjoint and
overlapped profiles, and figures for layouts a profile lacks taken from the calibration's
decode steps beside prefill on that layout's lane (measured on the same GPU, never guessed).
Plain Python."""

from __future__ import annotations

from typing import Any, Hashable, Sequence

from torch_green_contexts.sizing import Latency, LayoutProfile
from torch_green_contexts.step_policy import LayoutKey

from ..engine.lanes import key_label
from ..sim.calibration import CalibrationError


def merged(a: LayoutProfile, b: LayoutProfile) -> LayoutProfile:
    """One profile of the layouts of both (``a``'s figures where both have a layout)."""
    return LayoutProfile({**b.measured, **a.measured}, {**b.layouts, **a.layouts}, {**b.loaded, **a.loaded},
                         {"parts": [a.settings, b.settings]})


def from_calibration(calibration: dict[str, Any], keys: Sequence[LayoutKey], prefix: str = "") -> LayoutProfile:
    """A profile of the disjoint or overlapped layouts ``keys`` (``prefix``: the calibration's
    lane prefix of overlapped layouts) from the calibration's decode steps on their lanes: at
    each bucket and context it timed with rows of one length, the steps beside prefill (alone on
    a layout whose batch side has no SMs). CalibrationError names a layout it has no lane for."""
    lanes, aliases = calibration["lanes"], calibration.get("aliases", {})
    measured: dict[Hashable, dict[tuple[int, int], Latency]] = {}
    layouts: dict[Hashable, tuple[int, int, int]] = {}
    loaded: dict[Hashable, bool] = {}
    for key in keys:
        name = f"{prefix}{key_label(key)}"
        lane = lanes.get(aliases.get(name, name))
        if lane is None:
            raise CalibrationError(f"the calibration has no lane for layout {name!r} to profile it from: calibrate "
                                   "with that layout (--layout-counts / --overlapped)")
        under_load = lane["batch_sms"] > 0
        points = {(p["bucket"], p["context_tokens"]): Latency.of(p["loaded_us" if under_load else "idle_us"])
                  for p in lane["decode"] if p.get("longest", 0) * p["bucket"] <= p["context_tokens"]}
        if not points:
            raise CalibrationError(f"the calibration's lane {name!r} has no decode steps to profile it from")
        measured[key] = points
        layouts[key] = (lane["latency_sms"], lane["batch_sms"], lane["shared_sms"])
        loaded[key] = under_load
    return LayoutProfile(measured, layouts, loaded, {"from calibration": calibration.get("device", {}).get("name")})


def covering(profile: LayoutProfile, calibration: dict[str, Any], keys: Sequence[LayoutKey],
             prefix: str = "") -> LayoutProfile:
    """``profile`` with figures for those of ``keys`` it lacks, from the calibration."""
    missing = [k for k in keys if k not in profile.measured]
    return profile if not missing else merged(profile, from_calibration(calibration, missing, prefix))


def lacking(profile: LayoutProfile, keys: Sequence[LayoutKey], path: str) -> str | None:
    """What is wrong with the layout profile read from ``path`` for policies choosing among
    ``keys`` (None: it has figures for every one)."""
    missing = [k for k in keys if k not in profile.measured]
    if not missing:
        return None
    return (f"--layout-profile {path} has no figures for the layouts {[key_label(k) for k in missing]} the policies "
            f"choose among (it measured {[_label(k) for k in profile.keys]}): leave out --layout-profile to "
            "measure one on this GPU (about a minute), or give one measured with these --layout-counts and --overlapped")


def _label(key: Hashable) -> str:
    return key_label(key) if isinstance(key, (int, tuple)) else str(key)
