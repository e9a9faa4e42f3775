"""Input checks a new user hits first (no GPU): a wrong ``layouts`` for the two policies, a bad
batch or context for LayoutProfile.latency and PrefillDecodePolicy, a path or non-JSON text
given to the from_json readers, and the toolkit's lookups, parameters, latencies and NaN (one
type per condition: a count or layout that is not there, a negative size, NaN are ValueErrors)."""

import math
import pathlib

import pytest

from tests import test_pd_policy as pd
from tests import test_profile_policy as split
from torch_green_contexts import sizing
from torch_green_contexts.compat import flashinfer
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


# ---- 4. lookups of what is not there: one type, ValueError ---------------------------------------

def test_a_count_or_layout_that_is_not_there_is_a_value_error_everywhere():
    profile = split.make_profile()
    result = profile.entries[0][1]
    policy = SplitPolicy(profile, split.FakeLayouts(), slo_us=5000)
    pd_policy = PrefillDecodePolicy(pd.make_profile(), pd.FakeLayouts(), tpot_slo_us=10_000)
    for call, match in [
        (lambda: result.row(47), r"^47 SMs were not measured; measured: \[16, 32, 64, 132\]$"),
        (lambda: profile.latency(8, 47), "47 SMs were not measured"),
        (lambda: profile.result(9), r"the parameter 9 was not measured; measured: \[8, 32, 64\]"),
        (lambda: policy.observe(47, 8, 500), r"^no layout of 47 latency SMs to correct; have \[16, 32, 64, 132\]$"),
        (lambda: policy.correction(47), "no layout of 47 latency SMs"),
        (lambda: policy.estimate(8, 47), "no layout of 47 latency SMs"),
        (lambda: pd_policy.observe(47, 8, 0, 500), r"^no layout 47 to correct; have \[0, 16, 64, \(16, 64\), 132\]$"),
        (lambda: pd_policy.correction((8, 8)), r"no layout \(8, 8\) to correct"),
        (lambda: pd_policy.estimate(47, 8), "no layout 47"),
        (lambda: pd.make_profile().cost(47), "layout 47 was not profiled"),
        (lambda: pd.make_profile().latency(47, 8), "layout 47 was not profiled"),
    ]:
        with pytest.raises(ValueError, match=match):
            call()
    assert policy.stats()["observed"] == dict.fromkeys([16, 32, 64, 132], 0)
    assert pd_policy.stats()["observed"] == dict.fromkeys(pd.LAYOUTS, 0)


def test_a_count_of_the_wrong_type_is_a_type_error():
    profile = split.make_profile()
    result = profile.entries[0][1]
    policy = SplitPolicy(profile, split.FakeLayouts(), slo_us=5000)
    for call in (lambda: result.row("16"), lambda: result.row(16.0), lambda: profile.latency(8, "16"),
                 lambda: policy.observe("16", 8, 500), lambda: policy.correction(None)):
        with pytest.raises(TypeError, match="sm_count must be an int"):
            call()
    with pytest.raises(TypeError, match=r"^row must be a SizingRow \(one of rows, or row\(sm_count\)\), got str \('x'\)$"):
        result.relative("x")
    with pytest.raises(TypeError, match="row must be a SizingRow"):
        result.relative(16)
    assert result.relative(result.row(16))["loaded_p99"] == pytest.approx(8000 / 700)


@pytest.mark.parametrize("major, minor, error, match", [
    ("9", None, TypeError, r"^major must be an int \(of compute capability 9\.0: 9\), got str \('9'\)$"),
    (9, None, TypeError, r"^minor must be an int \(of compute capability 9\.0: 0\), got NoneType"),
    (9.0, 0, TypeError, "major must be an int"),
    (True, 0, TypeError, "major must be an int .*not bool"),
    (-1, 0, ValueError, r"major and minor must be 0 or more \(a compute capability\), got -1\.0"),
    (9, -2, ValueError, "major and minor must be 0 or more"),
    (5, 2, ValueError, r"^Unsupported CUDA capability: 5\.2 \(the constraints are known for compute capability 6\.0"),
])
def test_flashinfer_sm_count_constraint_names_what_it_takes(major, minor, error, match):
    with pytest.raises(error, match=match):
        flashinfer.get_sm_count_constraint(major, minor)


def test_flashinfer_sm_count_constraint_of_valid_capabilities():
    import numpy as np

    assert flashinfer.get_sm_count_constraint(9, 0) == (8, 8)
    assert flashinfer.get_sm_count_constraint(np.int64(8), np.int32(6)) == (4, 2)
    assert flashinfer.get_sm_count_constraint(12, 1) == (8, 8)


# ---- 5. flags, sizes and latencies ---------------------------------------------------------------

@pytest.mark.parametrize("flag", ["no", "", 0, 1, None, 1.0])
def test_under_load_must_be_a_bool(flag):
    profile = split.make_profile()
    result = profile.entries[0][1]
    for call in (lambda: result.smallest_meeting(1000, under_load=flag),
                 lambda: profile.smallest_meeting(8, 1000, under_load=flag),
                 lambda: profile.smallest_meeting(1000, 1000, under_load=flag),  # above the profile too
                 lambda: profile.latency(8, 16, under_load=flag)):
        with pytest.raises(TypeError, match=r"^under_load must be a bool, got "):
            call()
    assert result.smallest_meeting(8000, under_load=False) == 16 and result.smallest_meeting(8000) == 16


NEGATIVE_OR_NAN = [(-1, r"got -1$"), (-0.5, r"got -0\.5$"), (math.nan, "got nan$"), (math.inf, "got inf$")]


@pytest.mark.parametrize("p, got", NEGATIVE_OR_NAN)
def test_a_negative_or_non_finite_size_is_refused_wherever_a_step_is_asked_about(p, got):
    profile = split.make_profile()
    policy = SplitPolicy(profile, split.FakeLayouts(), slo_us=5000)
    size = r"^p must be a finite number of 0 or more \("
    for call in (lambda: profile.latency(p, 16), lambda: profile.read_at(p), lambda: profile.result(p),
                 lambda: profile.smallest_meeting(p, 1000), lambda: policy.choose(p), lambda: policy.step(p),
                 lambda: policy.estimate(p, 16), lambda: policy.observe(16, p, 500.0)):
        with pytest.raises(ValueError, match=size + ".*" + got):
            call()
    assert policy.stats()["steps"] == 0 and policy.layouts.switched == [], "a refused step changes nothing"
    pd_policy = PrefillDecodePolicy(pd.make_profile(), pd.FakeLayouts(), tpot_slo_us=10_000)
    for call in (lambda: pd_policy.observe(16, p, 0, 500.0), lambda: pd_policy.observe(16, 8, p, 500.0)):
        with pytest.raises(ValueError, match="must be a finite number of 0 or more"):
            call()
    with pytest.raises(TypeError, match=r"^p must be a number \(the step's parameter"):
        policy.choose("8")
    assert policy.choose(0) == 0 and policy.choose(8) == 32  # 4000 us on 32 SMs


@pytest.mark.parametrize("latency, error", [(math.nan, ValueError), (math.inf, ValueError), (-math.inf, ValueError),
                                            (-1.0, ValueError), ("500", TypeError), (None, TypeError),
                                            (True, TypeError)])
def test_observe_refuses_a_latency_that_is_not_a_finite_number_of_0_or_more(latency, error):
    policy = SplitPolicy(split.make_profile(), split.FakeLayouts(), slo_us=5000)
    pd_policy = PrefillDecodePolicy(pd.make_profile(), pd.FakeLayouts(), tpot_slo_us=10_000)
    for call in (lambda: policy.observe(16, 8, latency), lambda: pd_policy.observe(16, 8, 1000, latency)):
        with pytest.raises(error, match=r"^latency_us must be a .*\(the measured latency in microseconds\)"):
            call()
    assert sum(policy.stats()["observed"].values()) == 0 and sum(pd_policy.stats()["observed"].values()) == 0
    # A valid latency is taken, 0 included (a step too short for the events to time).
    policy.observe(16, 8, 0.0)
    pd_policy.observe(16, 8, 1000, 0)
    assert policy.stats()["observed"][16] == 1 and pd_policy.stats()["observed"][16] == 1
    assert policy.correction(16) >= 1.0 and pd_policy.correction(16) >= 1.0


def test_negative_sizes_cannot_enter_a_profile():
    result = split.result_for(8)
    with pytest.raises(ValueError, match="p must be a finite number of 0 or more .*got -8$"):
        LatencyProfile(((-8, result), (8, result)), {})
    with pytest.raises(ValueError, match="params must be a finite number of 0 or more .*got -8$"):
        sizing.profile(lambda p: (lambda: None), [-8, 8])
    text = split.make_profile().to_json().replace('"params": [\n  8,', '"params": [\n  -8,', 1)
    assert '"params": [\n  -8,' in text
    with pytest.raises(ValueError, match="got -8"):
        LatencyProfile.from_json(text)
    assert LatencyProfile(((0, result), (8, result)), {}).read_at(0) == 0, "0 is a size"


# ---- 6. NaN in every constructor: a ValueError ---------------------------------------------------

NAN = math.nan


@pytest.mark.parametrize("make", [
    lambda: SplitPolicy(split.make_profile(), split.FakeLayouts(), slo_us=NAN),
    lambda: SplitPolicy(split.make_profile(), split.FakeLayouts(), slo_us=5000, headroom=NAN),
    lambda: SplitPolicy(split.make_profile(), split.FakeLayouts(), slo_us=5000, hysteresis=NAN),
    lambda: PrefillDecodePolicy(pd.make_profile(), pd.FakeLayouts(), tpot_slo_us=NAN),
    lambda: PrefillDecodePolicy(pd.make_profile(), pd.FakeLayouts(), tpot_slo_us=1000, headroom=NAN),
    lambda: PrefillDecodePolicy(pd.make_profile(), pd.FakeLayouts(), tpot_slo_us=1000, slack_share=NAN),
    lambda: PrefillDecodePolicy(pd.make_profile(), pd.FakeLayouts(), tpot_slo_us=1000, hysteresis=NAN),
    lambda: LatencyProfile(((NAN, split.result_for(8)),), {}),
    lambda: sizing.profile(lambda p: (lambda: None), [8, NAN]),
], ids=["slo_us", "headroom", "hysteresis", "tpot_slo_us", "pd headroom", "slack_share", "pd hysteresis",
        "profile entry", "profile params"])
def test_nan_is_a_value_error_in_every_constructor(make):
    with pytest.raises(ValueError, match="got nan"):
        make()
