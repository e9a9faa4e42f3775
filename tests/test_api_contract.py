"""Every public signature against the contract (and against torch's own module when present)."""

import inspect

import pytest
import torch

import torch_green_contexts
from torch_green_contexts import GreenContext, SMPartition

KW = inspect.Parameter.KEYWORD_ONLY
POS = inspect.Parameter.POSITIONAL_OR_KEYWORD

CREATE_PARAMS = [
    ("num_sms", KW, None),
    ("sm_partition", KW, None),
    ("workqueue_scope", KW, None),
    ("workqueue_concurrency_limit", KW, None),
    ("device_id", KW, None),
]
PARTITION_SPLIT_PARAMS = [
    ("num_sms", KW, 0),
    ("coscheduled_sm_count", KW, 0),
    ("preferred_coscheduled_sm_count", KW, 0),
    ("backfill", KW, False),
    ("locality_domain_ids", KW, None),
]
CONTEXT_SPLIT_PARAMS = PARTITION_SPLIT_PARAMS + [
    ("workqueue_scope", KW, None),
    ("workqueue_concurrency_limit", KW, None),
    ("device_id", KW, None),
]

# (owner, name, kind, parameters without self/cls, return annotation)
CONTRACT = [
    (GreenContext, "__init__", "function", CREATE_PARAMS, "None"),
    (GreenContext, "create", "staticmethod", CREATE_PARAMS, "GreenContext"),
    (GreenContext, "split", "staticmethod", CONTEXT_SPLIT_PARAMS, "tuple[GreenContext, ...]"),
    (GreenContext, "max_workqueue_concurrency", "staticmethod", [("device_id", POS, None)], "int"),
    (GreenContext, "Stream", "function", [("priority", KW, 0)], "torch.cuda.Stream"),
    (GreenContext, "set_context", "function", [], "None"),
    (GreenContext, "pop_context", "function", [], "None"),
    (SMPartition, "from_device", "classmethod", [("device_id", POS, None)], "SMPartition"),
    (SMPartition, "split", "function", PARTITION_SPLIT_PARAMS,
     "tuple[tuple[SMPartition, ...], SMPartition | None]"),
]
PROPERTIES = [
    (GreenContext, "device_id", "int"),
    (GreenContext, "sm_count", "int"),
    (GreenContext, "sm_partition", "SMPartition"),
    (GreenContext, "locality_domain_id", "int | None"),
    (SMPartition, "device_id", "int"),
    (SMPartition, "sm_count", "int"),
    (SMPartition, "coscheduled_sm_count", "int"),
    (SMPartition, "locality_domain_id", "int | None"),
]


def _params(func, drop_first):
    params = list(inspect.signature(func).parameters.values())
    if drop_first:
        params = params[1:]
    return [(p.name, p.kind, p.default) for p in params]


def test_module_exports():
    # The contract's classes and torch 2.15's module functions first, then the package's own
    # documented names (tests/test_public_names.py holds the whole list against docs/api.rst).
    assert torch_green_contexts.__all__[:4] == [
        "GreenContext", "SMPartition", "get_num_locality_domains", "is_localization_supported"]
    for name in torch_green_contexts.__all__:
        assert getattr(torch_green_contexts, name).__doc__


@pytest.mark.parametrize("owner, name, kind, params, returns", CONTRACT, ids=lambda v: str(v)[:30])
def test_method_signature(owner, name, kind, params, returns):
    raw = inspect.getattr_static(owner, name)
    assert type(raw).__name__ == kind
    func = getattr(owner, name)
    drop_first = kind == "function"  # self; a bound classmethod already hides cls
    assert _params(func, drop_first) == params
    assert inspect.signature(func).return_annotation == returns
    assert func.__doc__


@pytest.mark.parametrize("owner, name, returns", PROPERTIES, ids=lambda v: str(v)[:30])
def test_property(owner, name, returns):
    prop = inspect.getattr_static(owner, name)
    assert isinstance(prop, property) and prop.fset is None
    assert inspect.signature(prop.fget).return_annotation == returns
    assert prop.__doc__


def test_classes_are_documented():
    assert GreenContext.__doc__ and SMPartition.__doc__


def _upstream():
    try:
        from torch.cuda import green_contexts
    except Exception:  # pragma: no cover - older torch
        return None
    if not hasattr(green_contexts, "SMPartition"):
        return None
    return green_contexts


@pytest.mark.skipif(_upstream() is None, reason="this torch has no torch.cuda.green_contexts 2.15 API")
@pytest.mark.parametrize("owner, name, kind, params, returns", CONTRACT, ids=lambda v: str(v)[:30])
def test_matches_upstream(owner, name, kind, params, returns):
    upstream = getattr(_upstream(), owner.__name__)
    ours_raw, theirs_raw = inspect.getattr_static(owner, name), inspect.getattr_static(upstream, name)
    assert type(ours_raw) is type(theirs_raw)
    drop_first = kind == "function"
    ours, theirs = _params(getattr(owner, name), drop_first), _params(getattr(upstream, name), drop_first)
    # Upstream's parameters, in order; ours may add optional keyword-only ones after them.
    assert ours[: len(theirs)] == theirs
    assert all(kind == KW and default is not inspect.Parameter.empty for _, kind, default in ours[len(theirs):])
    assert (inspect.signature(getattr(owner, name)).return_annotation
            == inspect.signature(getattr(upstream, name)).return_annotation)


@pytest.mark.skipif(_upstream() is None, reason="this torch has no torch.cuda.green_contexts 2.15 API")
@pytest.mark.parametrize("owner, name, returns", PROPERTIES, ids=lambda v: str(v)[:30])
def test_properties_match_upstream(owner, name, returns):
    theirs = inspect.getattr_static(getattr(_upstream(), owner.__name__), name)
    assert isinstance(theirs, property)
    assert (inspect.signature(theirs.fget).return_annotation
            == inspect.signature(inspect.getattr_static(owner, name).fget).return_annotation)
