"""Generated arguments for every public call and property, for the fuzz tests.

`fuzz(kind, examples, after_each)` draws `examples` argument combinations for one kind of
call with hypothesis, makes the call, and checks that it either succeeds or raises one of the
documented exception types with a message; `after_each` then checks that the GPU (or the
simulated driver) is still usable. Used by tests/gpu/test_gpu_fuzz.py on a real GPU and by
tests/test_simulated_driver.py against the simulated driver.
"""

from __future__ import annotations

import collections
from typing import Any, Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torch_green_contexts import GreenContext, SMPartition

ALLOWED = (ValueError, TypeError, RuntimeError)
# Streams need PyTorch's CUDA runtime, which the simulated driver does not provide.
MAKE_STREAMS = True

# Values of every kind, with the plausible ones (small multiples of 8, scopes) weighted in.
scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 140),
    st.sampled_from([0, 8, 16, 24, 32, 64, 128, 132, 133, 1 << 40]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=4),
    st.sampled_from(["device_ctx", "balanced", "8"]),
)
value = st.one_of(
    scalar,
    st.lists(st.one_of(st.integers(-1, 140), st.sampled_from([8, 16]), st.none(), st.booleans()), max_size=4),
    st.tuples(st.sampled_from([8, 16, 24]), st.sampled_from([0, 8, 16, 116])),
    st.sampled_from(["<whole>", "<group>", "<remainder>", "<context partition>"]),
)


def _kwargs(names: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(st.sampled_from(names), value, max_size=len(names))


CONTEXT_ARGS = ["num_sms", "sm_partition", "workqueue_scope", "workqueue_concurrency_limit", "device_id"]
SPLIT_ARGS = ["num_sms", "coscheduled_sm_count", "preferred_coscheduled_sm_count", "backfill",
              "locality_domain_ids"]

# Mostly valid requests, so that the successful paths are fuzzed too.
plausible_context = st.fixed_dictionaries({"num_sms": st.integers(1, 132)})
plausible_split = st.fixed_dictionaries(
    {"num_sms": st.lists(st.sampled_from([0, 2, 8, 16, 24, 40]), min_size=1, max_size=3)},
    optional={"backfill": st.booleans(), "coscheduled_sm_count": st.sampled_from([0, 2, 8])},
)

KINDS: dict[str, st.SearchStrategy[Any]] = {
    "GreenContext()": st.one_of(_kwargs(CONTEXT_ARGS), plausible_context),
    "GreenContext.create()": st.one_of(_kwargs(CONTEXT_ARGS), plausible_context),
    "GreenContext.split()": st.one_of(
        _kwargs(SPLIT_ARGS + ["workqueue_scope", "workqueue_concurrency_limit", "device_id"]),
        plausible_split),
    "SMPartition.split()": st.one_of(_kwargs(SPLIT_ARGS), plausible_split),
    "SMPartition.from_device()": st.one_of(_kwargs(["device_id"]), st.tuples(value)),
    "GreenContext.max_workqueue_concurrency()": st.one_of(_kwargs(["device_id"]), st.tuples(value)),
    "positional arguments": st.tuples(st.sampled_from(["GreenContext", "create", "split", "psplit"]),
                                      st.lists(value, min_size=1, max_size=3)),
}


def _resolve(v: Any, device: int) -> Any:
    """Stands real partitions in for their placeholders."""
    if v == "<whole>":
        return SMPartition.from_device(device_id=device)
    if v == "<group>" or v == "<remainder>":
        groups, remainder = SMPartition.from_device(device_id=device).split(num_sms=8)
        return groups[0] if v == "<group>" or remainder is None else remainder
    if v == "<context partition>":
        return GreenContext(num_sms=8, device_id=device).sm_partition
    return v


def _use(result: Any) -> None:
    """Reads every property of what a call returned (and makes a stream of each context)."""
    items = result if isinstance(result, tuple) else (result,)
    for item in items:
        if isinstance(item, tuple):
            _use(item)
        elif isinstance(item, GreenContext):
            assert item.sm_count > 0 and item.device_id >= 0
            _ = item.sm_partition.sm_count
            try:
                _ = item.locality_domain_id
            except RuntimeError as error:  # drivers before 13.4
                assert "13.4" in str(error)
            if MAKE_STREAMS:
                item.Stream()
        elif isinstance(item, SMPartition):
            assert item.sm_count > 0
            _ = (item.device_id, item.coscheduled_sm_count)


def call(kind: str, drawn: Any, device: int) -> str:
    """Makes one call; returns "ok" or the exception's type name, asserting it is allowed."""
    try:
        if kind == "positional arguments":
            target, args = drawn
            args = [_resolve(a, device) for a in args]
            fn = {"GreenContext": GreenContext, "create": GreenContext.create, "split": GreenContext.split,
                  "psplit": SMPartition.from_device(device_id=device).split}[target]
            _use(fn(*args))
            return "ok"
        if isinstance(drawn, tuple):  # one positional argument where that is allowed
            arg = _resolve(drawn[0], device)
            fn = SMPartition.from_device if kind.startswith("SMPartition") else GreenContext.max_workqueue_concurrency
            _use(fn(arg))
            return "ok"
        kwargs = {k: _resolve(v, device) for k, v in drawn.items()}
        if kind in ("GreenContext()", "GreenContext.create()", "GreenContext.split()"):
            if "device_id" not in kwargs:
                kwargs["device_id"] = device
            fn = {"GreenContext()": GreenContext, "GreenContext.create()": GreenContext.create,
                  "GreenContext.split()": GreenContext.split}[kind]
            _use(fn(**kwargs))
        elif kind == "SMPartition.split()":
            _use(SMPartition.from_device(device_id=device).split(**kwargs))
        elif kind == "SMPartition.from_device()":
            _use(SMPartition.from_device(**kwargs))
        else:
            _use(GreenContext.max_workqueue_concurrency(**kwargs))
        return "ok"
    except ALLOWED as error:
        message = str(error)
        assert len(message) > 10, f"{kind} {drawn!r}: unclear message {message!r}"
        return type(error).__name__


def fuzz(kind: str, examples: int, device: int, after_each: Callable[[], None]) -> collections.Counter:
    """Runs `examples` generated calls of `kind`; returns how many ended in each outcome."""
    outcomes: collections.Counter = collections.Counter()

    @settings(max_examples=examples, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def run(data: st.DataObject) -> None:
        drawn = data.draw(KINDS[kind])
        outcomes[call(kind, drawn, device)] += 1
        after_each()

    run()
    return outcomes
