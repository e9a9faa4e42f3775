"""What the bindings take: group requests as a class, the split path and workqueue scope as
enums; an unknown split path in the environment is a ValueError naming the allowed ones (and
fails every split before the driver splits: tests/sim/test_errors.py)."""

import pytest

from torch_green_contexts import _sm_partition
from torch_green_contexts._native import _C
from torch_green_contexts._split_args import split_requests
from torch_green_contexts._validation import check_workqueue


def test_split_path_from_the_environment(monkeypatch):
    monkeypatch.delenv(_sm_partition._SPLIT_PATH_ENV, raising=False)
    assert _sm_partition.split_path() == _C.SplitPath.auto
    for name in ("auto", "native", "emulated"):
        monkeypatch.setenv(_sm_partition._SPLIT_PATH_ENV, name)
        assert _sm_partition.split_path() == getattr(_C.SplitPath, name)
    monkeypatch.setenv(_sm_partition._SPLIT_PATH_ENV, "")
    assert _sm_partition.split_path() == _C.SplitPath.auto


@pytest.mark.parametrize("name", ["fast", "Native", "auto ", "1"])
def test_an_unknown_split_path_is_a_value_error_naming_the_allowed_ones(monkeypatch, name):
    monkeypatch.setenv(_sm_partition._SPLIT_PATH_ENV, name)
    with pytest.raises(ValueError) as error:
        _sm_partition.split_path()
    message = str(error.value)
    assert _sm_partition._SPLIT_PATH_ENV in message and repr(name) in message
    assert "allowed values: auto, native, emulated" in message


def test_group_requests_carry_every_option():
    request, = split_requests(16, 8, 4, True, 1)
    assert isinstance(request, _C.GroupRequest)
    assert (request.sm_count, request.coscheduled_sm_count, request.preferred_coscheduled_sm_count,
            request.backfill, request.locality_domain_id) == (16, 8, 4, True, 1)
    assert [r.sm_count for r in split_requests((16, 0), 0, 0, (False, True), None)] == [16, 0]
    default = _C.GroupRequest()
    assert (default.sm_count, default.backfill, default.locality_domain_id) == (0, False, None)


def test_workqueue_scopes_are_an_enum():
    assert _C.workqueue_scope("device_ctx") == _C.WorkqueueScope.device_ctx
    assert check_workqueue("balanced", 2) == (_C.WorkqueueScope.balanced, 2)
    for bad, shown in (("shared", "'shared'"), (0, "0"), (b"balanced", "b'balanced'")):
        with pytest.raises(ValueError, match="must be one of 'device_ctx', 'balanced' or None, got " + shown):
            _C.workqueue_scope(bad)
