"""A layout profile for the simulator's tests, from the made-up calibration's decode costs on
every layout the policies choose among."""

from __future__ import annotations

from torch_green_contexts.sizing import Latency, LayoutProfile

from tests.examples.pd.calibration_data import TOTAL, _decode_us

KEYS = (0, 16, 24, 32, 48, 64, 96, TOTAL, (16, 64), (32, 32))


def layout_profile() -> LayoutProfile:
    measured, layouts, loaded = {}, {}, {}
    for key in KEYS:
        if isinstance(key, tuple):
            shared = TOTAL - sum(key)
            sms, batch, factor = key[0] + shared, key[1] + shared, 1.5
        else:
            sms, batch, shared, factor = key, TOTAL - key, 0, 2.6 if key in (0, TOTAL) else 1.25
        points = {}
        for b, c in ((8, 8 * 600), (16, 16 * 600), (16, 16 * 1500)):
            v = _decode_us(sms or TOTAL, b, c) * factor
            points[(b, c)] = Latency(v, v * 1.02, v * 1.1, v, 10)
        measured[key], layouts[key], loaded[key] = points, (sms, batch, shared), key != TOTAL
    return LayoutProfile(measured, layouts, loaded, {"device": "Test GPU"})
