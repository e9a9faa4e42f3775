"""PrefillDecodePolicy's pause (no GPU): decode stops while a waiting prompt is short of TTFT
slack, paid for out of a share of the token gaps; a pause ends when the prompts are served, the
slack comes back or a joining request cannot be paid for; spent gaps fade so the allowance comes
back; bad settings refused."""

import math

import pytest

from tests.test_pd_policy_modes import BATCH, CONTEXT, policy
from torch_green_contexts._pd_pause import TailPause

SHORT, AMPLE = 100_000.0, 900_000.0  # TTFT slack, us, below and above a 600 ms pause slack


def paused_policy(**options):
    return policy(mode="p99", pause_slack_us=600_000, **options)


def test_a_short_prompt_pauses_decode_and_prefill_gets_the_most_sms():
    p = paused_policy()
    layout = p.step(BATCH, CONTEXT, prefill_tokens=4096, ttft_slack_us=AMPLE)
    assert not p.paused and layout.key != 0
    p.done()
    layout = p.step(BATCH, CONTEXT, prefill_tokens=4096, ttft_slack_us=SHORT)
    assert p.paused and layout.key == p.idle_key() == 0 and p.mixed_tokens == 0
    p.done()  # nothing was launched or timed
    assert p.stats()["pending"] == 1 and p.stats()["steps"] == 1  # the paused step is no decode step
    assert p.stats()["pause"] == {"pauses": 1, "paused_steps": 1, "gaps": BATCH, "long_gaps_spent_faded": BATCH,
                                  "allowance": pytest.approx(0.005 * 10_000 - BATCH)}
    # It lasts while the prompt is short of slack, and ends when the slack comes back or no prompt waits.
    assert p.step(BATCH, CONTEXT, prefill_tokens=2048, ttft_slack_us=SHORT) and p.paused
    assert p.step(BATCH, CONTEXT, prefill_tokens=2048, ttft_slack_us=AMPLE).key != 0 and not p.paused
    p.step(BATCH, CONTEXT, prefill_tokens=4096, ttft_slack_us=SHORT)
    assert p.paused
    p.step(BATCH, CONTEXT, prefill_tokens=0, ttft_slack_us=SHORT)
    assert not p.paused and p.stats()["pause"]["pauses"] == 2


def test_no_pause_without_decode_work_prefill_or_a_known_slack():
    p = paused_policy()
    for batch, prefill, slack in ((0, 4096, SHORT), (BATCH, 0, SHORT), (BATCH, 4096, None), (BATCH, 4096, AMPLE)):
        p.step(batch, CONTEXT if batch else 0, prefill_tokens=prefill, ttft_slack_us=slack)
        assert not p.paused
    assert p.stats()["pause"]["pauses"] == 0


def test_a_pause_is_paid_a_long_gap_per_request_and_the_allowance_fades_back():
    pause = TailPause(600_000, 0.005, 1000)  # an allowance of 5 long gaps
    assert pause.allowance() == pytest.approx(5.0)
    assert not pause.decide(6, 100, SHORT)  # six requests would need six: they decode
    assert pause.decide(4, 100, SHORT) and pause.allowance() == pytest.approx(1.0)
    assert pause.decide(5, 100, SHORT)  # one more joined: paid
    assert not pause.decide(7, 100, SHORT) and not pause.paused  # two more cannot be paid: decode resumes
    assert pause.gaps == 13 and pause.spent == pytest.approx(5 * math.exp(-7 / 1000))
    for _ in range(100):  # 700 gaps in the SLO: the spent gaps fade
        pause.decide(7, 100, AMPLE)
    assert pause.allowance() == pytest.approx(5 - 5 * math.exp(-707 / 1000))
    assert pause.decide(2, 100, SHORT) and pause.pauses == 2


def test_a_long_run_of_steps_never_spends_more_than_its_share_of_gaps():
    """However often prompts come up short, the long gaps of any window of gaps stay near the share."""
    pause = TailPause(600_000, 0.005, 2000)
    long_gaps, gaps = 0, 0
    for i in range(20_000):
        short = i % 7 < 3
        was_paused = pause.paused
        paused = pause.decide(8, 100, SHORT if short else AMPLE)
        if paused and not was_paused:
            long_gaps += 8
        gaps += 0 if paused else 8
    assert 0 < long_gaps <= 0.005 * (gaps + 2000) + 8


@pytest.mark.parametrize("options, error, message", [
    ({"pause_slack_us": 0}, ValueError, "pause_slack_us must be a positive number"),
    ({"pause_slack_us": "soon"}, TypeError, "pause_slack_us must be a number"),
    ({"pause_slack_us": 1e5, "pause_gap_share": 0.01}, ValueError, "pause_gap_share must be above 0 and below 0.01"),
    ({"pause_slack_us": 1e5, "pause_gap_share": math.nan}, ValueError, "pause_gap_share"),
    ({"pause_slack_us": 1e5, "pause_gap_share": "1%"}, TypeError, "pause_gap_share must be a number"),
    ({"pause_slack_us": 1e5, "pause_window_gaps": 0}, ValueError, "pause_window_gaps"),
])
def test_bad_pause_settings_name_what_is_allowed(options, error, message):
    with pytest.raises(error, match=message):
        policy(mode="p99", **options)


def test_a_pause_needs_the_p99_mode():
    with pytest.raises(ValueError, match="pause_slack_us needs mode='p99'"):
        policy(pause_slack_us=600_000)
    assert policy(mode="p99").stats()["pause"] is None
