"""NumPy and torch values against the simulated driver: integer and boolean arrays and tensors
split as lists do, and NumPy's and torch's integer scalars make contexts as ints do."""

import pytest
import torch

from torch_green_contexts import GreenContext, SMPartition

np = pytest.importorskip("numpy")

pytestmark = pytest.mark.driver_versions(12040, 13000, 13010, 13040)


def test_arrays_and_tensors_split_as_lists_do():
    whole = SMPartition.from_device(0)
    for counts in (np.array([16, 32]), torch.tensor([16, 32]), [np.int64(16), torch.tensor(32)]):
        groups, remainder = whole.split(num_sms=counts)
        assert [g.sm_count for g in groups] == [16, 32] and remainder.sm_count == 84
    for flags in ((False, np.bool_(True)), np.array([False, True]), torch.tensor([False, True])):
        contexts = GreenContext.split(num_sms=np.array([16, 0]), backfill=flags, device_id=np.int64(0))
        assert [c.sm_count for c in contexts] == [16, 116]


def test_numpy_and_torch_integers_make_contexts():
    assert GreenContext(num_sms=np.int64(16), device_id=np.int32(0)).sm_count == 16
    assert GreenContext(num_sms=torch.tensor(24), device_id=torch.tensor(0)).sm_count == 24
    assert GreenContext.create(num_sms=np.array(8), device_id=0).sm_count == 8
