"""python -m torch_green_contexts [--no-demo]

Reports what this machine offers for green contexts: the package and torch versions, the CUDA
driver and which features and entry points it has, each device's SMs, co-scheduling
granularity and how many aligned groups fit. Then, unless --no-demo, splits the current device
into two partitions, runs a matmul on each and shows the SM ids each one ran on. Without a GPU
or driver it says what is missing and exits 0. Paste its output into bug reports.
"""

from __future__ import annotations

import argparse
import sys

import torch

from . import GreenContext, SMPartition, _sm_partition, observed_sm_ids
from ._native import _C

FEATURES = (
    ("green contexts, num_sms, sm_partition, from_device", _C.feature_version.green_contexts),
    ("GreenContext.Stream() via cuGreenCtxStreamCreate", _C.feature_version.green_context_streams),
    ("native split (cuDevSmResourceSplit)", _C.feature_version.native_split),
    ("workqueue options, max_workqueue_concurrency", _C.feature_version.workqueues),
    ("locality domains", _C.feature_version.locality_domains),
)


def _version(v: int) -> str:
    return _C.format_driver_version(v)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m torch_green_contexts", description=(__doc__ or "").split("\n\n", 1)[1].strip(),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-demo", action="store_true", help="only the report: make no green context")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    import os
    import platform

    from . import __version__
    from ._native import BUILT_AGAINST_TORCH

    print("torch_green_contexts report (paste it into a bug report)")
    print(f"torch_green_contexts {__version__}, built against torch {BUILT_AGAINST_TORCH}")
    print(f"torch {torch.__version__} (CUDA runtime {torch.version.cuda}), Python "
          f"{platform.python_version()}, {platform.platform()}")
    for name in (_C.DRIVER_LIBRARY_ENV, _C.IDLE_LIMIT_ENV, _sm_partition._SPLIT_PATH_ENV,
                 "CUDA_VISIBLE_DEVICES"):
        if os.environ.get(name):
            print(f"  {name}={os.environ[name]}")
    problems = _setting_problems()
    for problem in problems:
        print(f"  PROBLEM: {problem}")
    installed = _C.installed_driver_version()
    if installed == 0:
        print("CUDA driver: none found (libcuda.so.1 cannot be loaded): nothing to partition here.")
        print("Install an NVIDIA driver 12.4 or newer on a machine with a GPU to use green contexts.")
        return 0
    try:
        count = _C.device_count()
    except RuntimeError as error:
        print(f"CUDA driver {_version(installed)} is installed but unusable: {error}")
        return 0
    version = _C.driver_version()
    print(f"CUDA driver: {_version(version)} ({_C.driver_library()}), {count} device(s)")
    print("Features:")
    for name, needed in FEATURES:
        state = "yes" if version >= needed else f"no (needs {_version(needed)})"
        print(f"  {name:<52} {state}")
    print(f"  split path on this driver: "
          f"{'native' if _C.native_split_available() else 'emulated (cuDevSmResourceSplitByCount)'}")
    entry_points = _C.entry_points()
    missing = [f"{n} ({_version(since)}+)" for n, (present, since) in entry_points.items() if not present]
    print(f"Driver entry points: {len(entry_points) - len(missing)} of {len(entry_points)} resolved"
          + (f"; missing: {', '.join(missing)}" if missing else ""))
    if count == 0:
        print("No CUDA device is visible.")
        return 0
    if version < _C.feature_version.green_contexts:
        print("This driver has no green contexts.")
        return 0

    for index in range(count):
        whole = SMPartition.from_device(index)
        major, minor = _C.compute_capability(index)
        granularity = whole.coscheduled_sm_count
        name = torch.cuda.get_device_name(index) if torch.cuda.is_available() else "(not visible to PyTorch)"
        print(f"device {index}: {name}, compute capability {major}.{minor}, "
              f"{whole.sm_count} SMs, co-scheduling granularity {granularity} SMs")
        fits = [(k * granularity, _C.groups_that_fit(index, k * granularity)) for k in (1, 2, 3, 4, 8)
                if k * granularity <= whole.sm_count]
        print("  SM layout: groups that fit at once: "
              + ", ".join(f"{n} of {size} SMs" for size, n in fits)
              + f" (the SM count alone would allow {whole.sm_count // granularity} of {granularity})")

    if args.no_demo:
        return 0
    if problems:
        print("No live demo: fix the settings flagged above first (every split would fail).")
        return 0
    if not torch.cuda.is_available():
        print("PyTorch sees no CUDA device: no live demo.")
        return 0
    device = torch.cuda.current_device()
    whole = SMPartition.from_device(device)
    small = 2 * whole.coscheduled_sm_count
    latency, batch = GreenContext.split(num_sms=(small, 0), backfill=(False, True), device_id=device)
    print(f"Live demo on device {device}: split(num_sms=({small}, 0), backfill=(False, True)): "
          f"{latency.sm_count} + {batch.sm_count} SMs")
    a = torch.randn(1024, 1024, device=device)
    expected = a @ a
    seen = []
    for name, ctx in (("first", latency), ("second", batch)):
        stream = ctx.Stream()
        stream.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(stream):
            result = a @ a
        stream.synchronize()
        ok = torch.allclose(result, expected, rtol=1e-3, atol=1e-3)
        sms = observed_sm_ids(stream)
        seen.append(set(sms))
        print(f"  {name} partition: matmul {'correct' if ok else 'WRONG'}; probe ran on "
              f"{len(sms)} SMs: {_ranges(sms)}")
    print(f"  SMs shared by the two partitions: {len(seen[0] & seen[1])}")
    print(f"  plain stream: probe ran on {len(observed_sm_ids(torch.cuda.current_stream(device)))} SMs")
    return 0


def _setting_problems() -> list[str]:
    """What is wrong with the package's environment variables: each one that makes every new
    green context (or split) a ValueError, with that error's message."""
    problems = []
    for check, what in ((_C.check_idle_limit_env, "every new green context"), (_sm_partition.split_path, "every split")):
        try:
            check()
        except ValueError as error:
            problems.append(f"{error}; {what} raises this ValueError")
    return problems


def _ranges(ids: list[int]) -> str:
    spans: list[tuple[int, int]] = []
    start: int | None = None
    prev = 0
    for i in ids:
        if start is None:
            start = prev = i
        elif i == prev + 1:
            prev = i
        else:
            spans.append((start, prev))
            start = prev = i
    if start is not None:
        spans.append((start, prev))
    return ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in spans)


if __name__ == "__main__":
    sys.exit(main())
