"""The simulator's cost models fitted from a calibration: decode steps over rows of uneven
lengths priced by their longest row as well as their total, chunked prefill's mixed iterations
deep in a prompt priced from iterations timed there, and the decode points the GPU calibration
times. No GPU."""

from __future__ import annotations

import pytest

from examples.pd.bench.calibrate import attention_pairs, decode_contexts, decode_points
from examples.pd.sim.calibration import CalibrationError
from examples.pd.sim.costs import LaneCosts, MixedCosts

BUCKETS = [1, 8, 16, 32, 64, 82]
MAX_LEN = 4608


def step_us(bucket: int, lengths: tuple[int, ...], per_longest: float) -> float:
    """A made-up step: 5 ms, 40 us a row, 2 us per 1k tokens of context, and ``per_longest``
    us per 1k tokens of the rows padded to the longest."""
    return 5000 + 40 * bucket + 2 * sum(lengths) / 1000 + per_longest * bucket * max(lengths) / 1000


def lane_of(points: list[tuple[int, ...]], per_longest: float, *, record_longest: bool = True) -> dict:
    decode = []
    for lengths in points:
        us = step_us(len(lengths), lengths, per_longest)
        entry = {"bucket": len(lengths), "tokens_per_row": sum(lengths) // len(lengths),
                 "context_tokens": sum(lengths), "idle_us": [us] * 3, "loaded_us": [1.2 * us] * 3}
        if record_longest:
            entry["longest"] = max(lengths)
        decode.append(entry)
    prefill = [{"tokens": t, "prompts": 1, "start": 0, "layers": 4, "pairs": attention_pairs([(0, t)]),
                "idle_us": [100.0 + t] * 3, "loaded_us": [120.0 + t] * 3} for t in (512, 2048)]
    return {"latency_sms": 64, "batch_sms": 68, "shared_sms": 0, "decode": decode, "prefill": prefill}


def test_decode_points_time_every_bucket_uniform_and_the_large_ones_uneven() -> None:
    points = decode_points(BUCKETS, MAX_LEN)
    short, long = decode_contexts(MAX_LEN)
    assert (short, long) == (1152, 3456)
    uniform = [p for p in points if len(set(p)) == 1]
    uneven = [p for p in points if len(set(p)) > 1]
    assert sorted({len(p) for p in uniform}) == [1, 8, 32, 64, 82]
    assert {p[0] for p in uniform} == {short, long}
    assert sorted(len(p) for p in uneven) == [32, 32, 64, 64, 82, 82]
    for p in uneven:
        assert max(p) == long and all(1 <= n < MAX_LEN for n in p)
    ratios = sorted(max(p) * len(p) / sum(p) for p in uneven)
    assert ratios[0] > 1.5 and ratios[-1] > 10  # a quarter long, and one long row among short ones


def test_uneven_rows_cost_their_longest_row_when_the_calibration_measured_them() -> None:
    costs = LaneCosts.fit(lane_of(decode_points(BUCKETS, MAX_LEN), per_longest=3.0))
    lengths = (3456,) + (144,) * 31
    idle, loaded = costs.decode_us(32, sum(lengths), max(lengths))
    assert idle == pytest.approx(step_us(32, lengths, 3.0), rel=1e-6)
    assert loaded == pytest.approx(1.2 * step_us(32, lengths, 3.0), rel=1e-6)
    even = costs.decode_us(32, sum(lengths))[0]
    assert even == pytest.approx(step_us(32, (sum(lengths) // 32,) * 32, 3.0), rel=1e-3)
    assert idle > even + 2.0 * 32 * 3.0  # the long row costs what 32 rows of its length would


def test_a_step_set_by_its_total_alone_is_not_charged_for_its_longest_row() -> None:
    costs = LaneCosts.fit(lane_of(decode_points(BUCKETS, MAX_LEN), per_longest=0.0))
    lengths = (3456,) + (144,) * 31
    assert costs.decode_us(32, sum(lengths), 3456)[0] == pytest.approx(costs.decode_us(32, sum(lengths))[0], rel=1e-6)


def test_a_calibration_of_even_rows_only_prices_by_the_total() -> None:
    even = [p for p in decode_points(BUCKETS, MAX_LEN) if len(set(p)) == 1]
    for record_longest in (True, False):
        costs = LaneCosts.fit(lane_of(even, per_longest=3.0, record_longest=record_longest))
        assert costs.decode_idle.names == ("one", "rows", "kilo_tokens")
        assert costs.decode_us(32, 10_000, 3456) == costs.decode_us(32, 10_000)


def mixed_entry(tokens: int, rows: int, start: int, us: float) -> dict:
    return {"prompt_tokens": tokens, "decode_rows": rows, "slots": 82, "start": start, "context_tokens": rows * 2048,
            "pairs": attention_pairs([(start, tokens)]), "us": [us, us * 1.02, us * 0.99]}


def test_mixed_iterations_deep_in_a_prompt_price_their_attention_from_the_deep_timings() -> None:
    entries = []
    for tokens in (256, 1024):
        for rows in (8, 81):
            entries.append(mixed_entry(tokens, rows, 0, 10_000 + 20 * tokens + 30 * rows))
        deep = 3456 if tokens == 256 else 3583
        extra = attention_pairs([(deep, tokens)]) - attention_pairs([(0, tokens)])
        entries.append(mixed_entry(tokens, 81, deep, 10_000 + 20 * tokens + 30 * 81 + 7.0 * extra / 1e6))
    costs = MixedCosts.fit(entries, per_mega_pair_us=1.0)
    assert costs.per_mega_pair_us == pytest.approx(7.0)
    shallow_only = MixedCosts.fit([e for e in entries if not e["start"]], per_mega_pair_us=1.0)
    assert shallow_only.per_mega_pair_us == 1.0
    assert shallow_only.tokens == costs.tokens and shallow_only.base_us == pytest.approx(costs.base_us)


def test_a_deep_mixed_timing_with_nothing_to_compare_with_is_refused() -> None:
    entries = [mixed_entry(256, 8, 0, 12_000.0), mixed_entry(256, 81, 3456, 15_000.0)]
    with pytest.raises(CalibrationError, match="deep in a prompt"):
        MixedCosts.fit(entries, per_mega_pair_us=1.0)


def test_a_decode_step_beside_a_smaller_piece_takes_the_share_of_the_slowdown_measured_for_its_size() -> None:
    lane = lane_of([(1024,) * 8, (1024,) * 32], per_longest=0.0)  # loaded: 1.2x idle beside a chunk
    idle = {p["bucket"]: p["idle_us"][0] for p in lane["decode"]}
    lane["decode_beside_pieces"] = [
        {"bucket": b, "context_tokens": 1024 * b, "longest": 1024, "piece_tokens": tokens,
         "loaded_us": [idle[b] * (1 + 0.2 * share)] * 3}
        for b in (8, 32) for tokens, share in ((256, 0.25), (512, 0.5), (1024, 0.6))]
    costs = LaneCosts.fit(lane, chunk=2048)
    assert costs.piece_shares is not None
    assert costs.piece_shares.tokens == (256, 512, 1024, 2048)
    assert costs.piece_shares.shares == pytest.approx((0.25, 0.5, 0.6, 1.0))
    assert costs.loaded_share(128) == pytest.approx(0.25)  # below the smallest measured: its share
    assert costs.loaded_share(768) == pytest.approx(0.55)
    assert costs.loaded_share(1536) == pytest.approx(0.8)
    assert costs.loaded_share(4096) == 1.0 and costs.loaded_share(None) == 1.0
    assert LaneCosts.fit(lane).loaded_share(256) == 1.0  # the chunk unknown: the whole slowdown
    del lane["decode_beside_pieces"]
    assert LaneCosts.fit(lane, chunk=2048).piece_shares is None


def test_piece_shares_ignore_points_they_cannot_compare_and_stay_between_none_and_all() -> None:
    lane = lane_of([(1024,) * 8], per_longest=0.0)
    idle = lane["decode"][0]["idle_us"][0]
    lane["decode_beside_pieces"] = [
        {"bucket": 8, "context_tokens": 8192, "longest": 1024, "piece_tokens": 256, "loaded_us": [idle * 0.9] * 3},
        {"bucket": 8, "context_tokens": 8192, "longest": 1024, "piece_tokens": 512, "loaded_us": [idle * 1.5] * 3},
        {"bucket": 16, "context_tokens": 8192, "longest": 512, "piece_tokens": 1024, "loaded_us": [idle] * 3},
        {"bucket": 8, "context_tokens": 8192, "longest": 1024, "piece_tokens": 2048, "loaded_us": [idle] * 3}]
    shares = LaneCosts.fit(lane, chunk=2048).piece_shares
    assert shares is not None and shares.tokens == (256, 512, 2048) and shares.shares == (0.0, 1.0, 1.0)
