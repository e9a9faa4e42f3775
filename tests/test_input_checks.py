"""Input checks a new user hits first (no GPU): a wrong ``layouts`` for the two policies, a bad
batch or context for LayoutProfile.latency and PrefillDecodePolicy, and a path or non-JSON text
given to the from_json readers."""

import math
import pathlib

import pytest

from tests import test_pd_policy as pd
from tests import test_profile_policy as split
from torch_green_contexts.layouts import Layouts
from torch_green_contexts.pd_policy import PrefillDecodePolicy
from torch_green_contexts.policy import SplitPolicy
from torch_green_contexts.sizing import LatencyProfile, LayoutProfile, SizingResult

WRONG_LAYOUTS = r"layouts must be a Layouts \(torch_green_contexts\.layouts\.Layouts\), got "


# ---- 1. layouts ----------------------------------------------------------------------------------

@pytest.mark.parametrize("layouts, got", [
    (None, "NoneType, which has no keys or __getitem__ or switch"),
    ([0, 16, 132], "list, which has no keys or switch"),
    ({0: None, 16: None}, "dict, which has no switch"),
    (Layouts, "the class Layouts itself"),
])
def test_prefill_decode_policy_names_a_wrong_layouts(layouts, got):
    with pytest.raises(TypeError, match=WRONG_LAYOUTS + got):
        PrefillDecodePolicy(pd.make_profile(), layouts, tpot_slo_us=100)


@pytest.mark.parametrize("layouts, got", [
    (None, "NoneType, which has no counts or __getitem__ or switch"),
    ((0, 16, 132), "tuple, which has no counts or switch"),
    (Layouts, "the class Layouts itself"),
])
def test_split_policy_names_a_wrong_layouts(layouts, got):
    with pytest.raises(TypeError, match=WRONG_LAYOUTS + got):
        SplitPolicy(split.make_profile(), layouts, slo_us=5000)


def test_a_stand_in_layouts_passes_while_it_has_what_the_policy_uses():
    # Stand-ins (duck typing) are how the policies are driven without a GPU.
    assert PrefillDecodePolicy(pd.make_profile(), pd.FakeLayouts(), tpot_slo_us=10_000).choose(0) == 0
    assert SplitPolicy(split.make_profile(), split.FakeLayouts(), slo_us=5000).choose(0) == 0

    class NoSwitch:
        keys = tuple(pd.LAYOUTS)
        __getitem__ = pd.FakeLayouts.__getitem__

    with pytest.raises(TypeError, match=WRONG_LAYOUTS + "NoSwitch, which has no switch"):
        PrefillDecodePolicy(pd.make_profile(), NoSwitch(), tpot_slo_us=10_000)
    # The profile is still checked first, as before.
    with pytest.raises(TypeError, match="profile must be a LayoutProfile"):
        PrefillDecodePolicy(None, None, tpot_slo_us=100)


# ---- 2. batch and context_tokens -----------------------------------------------------------------

BAD_POINTS = [
    (dict(batch=-8, context_tokens=2048), ValueError, r"batch must be a finite number of 0 or more .* got -8$"),
    (dict(batch="a", context_tokens=0), TypeError, r"batch must be a number \(the decode batch size\), got str"),
    (dict(batch=True, context_tokens=0), TypeError, "batch must be a number .*got bool"),
    (dict(batch=None, context_tokens=0), TypeError, "batch must be a number .*got NoneType"),
    (dict(batch=math.nan, context_tokens=0), ValueError, "batch must be a finite number of 0 or more"),
    (dict(batch=8, context_tokens=-1), ValueError, "context_tokens must be a finite number of 0 or more"),
    (dict(batch=8, context_tokens=math.inf), ValueError, "context_tokens must be a finite number of 0 or more"),
    (dict(batch=8, context_tokens="2k"), TypeError, "context_tokens must be a number .*got str"),
]


@pytest.mark.parametrize("point, error, match", BAD_POINTS)
def test_layout_profile_latency_checks_batch_and_context(point, error, match):
    with pytest.raises(error, match=match):
        pd.make_profile().latency(16, point["batch"], point["context_tokens"])


def test_layout_profile_latency_keeps_its_figures_for_valid_input():
    profile = pd.make_profile()
    cost = profile.cost(16)
    assert profile.latency(16, 8, 2048) == cost.at(8, 2048)
    assert profile.latency(16, 8.0, 2048.5) == cost.at(8.0, 2048.5)
    assert profile.latency(16, 0) == cost.at(0, 0) == pytest.approx(cost.fixed_us)


@pytest.mark.parametrize("point, error, match", BAD_POINTS)
def test_prefill_decode_policy_checks_batch_and_context(point, error, match):
    policy = PrefillDecodePolicy(pd.make_profile(), pd.FakeLayouts(), tpot_slo_us=10_000)
    batch, context = point["batch"], point["context_tokens"]
    with pytest.raises(error, match=match):
        policy.choose(batch, context, prefill_tokens=1000)
    with pytest.raises(error, match=match):
        policy.estimate(16, batch, context)
    with pytest.raises(error, match=match):
        policy.step(batch, context, prefill_tokens=1000)
    assert policy.stats()["steps"] == 0 and policy.layouts.switched == [], "a refused step changes nothing"


def test_prefill_decode_policy_keeps_its_choices_for_valid_input(monkeypatch):
    monkeypatch.setattr(pd.torch.cuda, "Event", split.FakeTimingEvent)
    # 64 requests, 256k tokens (as in test_pd_policy): (16, 64) is the layout that fits 7 ms.
    policy = PrefillDecodePolicy(pd.make_profile(), pd.FakeLayouts(), tpot_slo_us=7_000, headroom=0.0)
    assert policy.choose(64, 256_000, prefill_tokens=4096) == (16, 64)
    assert policy.choose(64.0, 256_000.0, prefill_tokens=4096) == (16, 64)
    assert policy.estimate((16, 64), 64, 256_000) == pytest.approx(pd.step_us((16, 64), 64, 256_000))
    assert policy.step(64, 256_000, prefill_tokens=4096).key == (16, 64)
    assert policy.step(0).key == 0 and policy.stats()["steps"] == 2


# ---- 3. from_json given a path or text that is not JSON ------------------------------------------

def saved(tmp_path):
    profile = split.make_profile()
    return [(cls, obj, tmp_path / f"{cls.__name__}.json")
            for cls, obj in ((LatencyProfile, profile), (SizingResult, profile.entries[0][1]),
                             (LayoutProfile, pd.make_profile()))]


def test_from_json_given_an_existing_file_says_it_takes_text_and_how_to_read_the_file(tmp_path):
    for cls, obj, path in saved(tmp_path):
        path.write_text(obj.to_json())
        name = cls.__name__
        with pytest.raises(ValueError) as str_path:
            cls.from_json(str(path))
        assert str(str_path.value) == (
            f"{name}.from_json takes JSON text ({name}.to_json writes it), not a path: {str(path)!r} names an "
            f"existing file; read the file first: {name}.from_json(pathlib.Path({str(path)!r}).read_text())")
        with pytest.raises(ValueError, match=rf"^{name}\.from_json takes JSON text .*not a path: got "
                                             rf".*Path\(.*\), an existing file; read the file first: "):
            cls.from_json(path)
        with pytest.raises(ValueError, match=r"not a path: got .*Path\(.*missing.json'\); read the file first"):
            cls.from_json(tmp_path / "missing.json")
        assert cls.from_json(pathlib.Path(path).read_text()) == obj


@pytest.mark.parametrize("text", ["", "profile.json", "{not json", "\0"])
def test_from_json_of_text_that_is_not_json_is_a_value_error_showing_how_to_read_a_file(text, tmp_path):
    for cls, _, _ in saved(tmp_path):
        name = cls.__name__
        with pytest.raises(ValueError) as error:
            cls.from_json(text)
        message = str(error.value)
        assert message.startswith(f"{name}.from_json takes JSON text ({name}.to_json writes it), "
                                  "and this is not JSON (")
        assert message.endswith(f"; to read a file, pass its text: {name}.from_json(pathlib.Path(path).read_text())")
        assert "line 1 column" in message, "the decoder's position is kept"


@pytest.mark.parametrize("value", [None, 12, ["{}"]])
def test_from_json_of_neither_text_nor_a_path_is_a_type_error(value):
    for cls in (LatencyProfile, SizingResult, LayoutProfile):
        with pytest.raises(TypeError, match=rf"^{cls.__name__}\.from_json takes JSON text \(a str\), got "
                                            rf"{type(value).__name__}$"):
            cls.from_json(value)


def test_from_json_reads_utf8_bytes_as_text():
    for cls in (LatencyProfile, SizingResult, LayoutProfile):
        with pytest.raises(ValueError, match=rf"^{cls.__name__}\.from_json takes JSON text .*and this is not JSON"):
            cls.from_json(b"not json")  # decoded, then judged as text
        with pytest.raises(ValueError, match="these bytes are not UTF-8"):
            cls.from_json(b"\xff\xfe")
