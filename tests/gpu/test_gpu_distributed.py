"""Green contexts in a torch.distributed job: one process per GPU (NCCL), an all-reduce on a
communication partition while a GEMM loop runs on the compute partition of each rank. With one
GPU this runs a one-rank job; with two or more, a real multi-GPU one."""

import json

import pytest
import torch
import torch.multiprocessing as mp

from benchmarks.distributed import free_port, rank_checks


def test_all_reduce_on_a_partition_beside_compute(tmp_path, granularity):
    world = torch.cuda.device_count()
    comm_sms = 3 * granularity  # 24 SMs on Hopper, as two-batch overlap uses for communication
    mp.spawn(rank_checks, args=(world, free_port(), str(tmp_path), comm_sms), nprocs=world, join=True)
    for rank in range(world):
        report = json.loads((tmp_path / f"rank{rank}.json").read_text())
        assert "error" not in report, report
        assert report["devices"] == [rank, rank]
        assert report["sm_counts"][0] == comm_sms
        assert report["results_correct"] == [True] * 5
        assert not report["current_context_is_a_green_context"], "a green context was left current"
        assert report["current_context_is_primary"], report
        assert report["after_destroy_current_is_primary_or_none"], report


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 GPUs for a multi-rank job")
def test_every_rank_has_its_own_device(tmp_path, granularity):
    world = torch.cuda.device_count()
    mp.spawn(rank_checks, args=(world, free_port(), str(tmp_path), granularity), nprocs=world, join=True)
    devices = [json.loads((tmp_path / f"rank{r}.json").read_text())["devices"] for r in range(world)]
    assert devices == [[r, r] for r in range(world)]
