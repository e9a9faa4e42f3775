"""Prints, for each split of the test plan, the granted SM counts and what the SM probe saw.

Run on a GPU machine: python scripts/split_report.py
"""

import itertools

import torch

from torch_green_contexts import GreenContext, SMPartition, observed_sm_ids

PLAN = [
    ("num_sms=(16, 116)", dict(num_sms=(16, 116))),
    ("num_sms=(24, 40)", dict(num_sms=(24, 40))),
    ("num_sms=(8,)*15", dict(num_sms=(8,) * 15)),
    ("num_sms=(0,)", dict(num_sms=(0,))),
    ("num_sms=(16, 0), backfill=(False, True)", dict(num_sms=(16, 0), backfill=(False, True))),
    ("num_sms=(2, 6, 10), coscheduled_sm_count=2", dict(num_sms=(2, 6, 10), coscheduled_sm_count=2)),
]


def report(label, contexts):
    observed = [set(observed_sm_ids(c.Stream())) for c in contexts]
    counts = [c.sm_count for c in contexts]
    seen = [len(s) for s in observed]
    disjoint = all(not (a & b) for a, b in itertools.combinations(observed, 2))
    print(f"{label}: sm_count={counts} observed={seen} disjoint={disjoint}")


def main():
    total = SMPartition.from_device().sm_count
    print(f"device: {torch.cuda.get_device_name()}, {total} SMs")
    for label, kwargs in PLAN:
        if kwargs["num_sms"] == (16, 116):
            kwargs = dict(num_sms=(16, total - 16))
        report(label, GreenContext.split(**kwargs))
    (first,), rest = SMPartition.from_device().split(num_sms=16)
    rest_ctx = GreenContext(sm_partition=rest)
    (second, third), rest2 = rest_ctx.sm_partition.split(num_sms=(8, 24))
    chain = [GreenContext(sm_partition=p) for p in (first, second, third, rest2)]
    report("chain: split 16 | context(remainder).sm_partition.split(8, 24) | remainder", chain)
    plain = observed_sm_ids(torch.cuda.current_stream())
    print(f"plain stream: observed={len(plain)}")


if __name__ == "__main__":
    main()
