"""What a run was measured on, and PyTorch's own green contexts where this torch has them."""

from __future__ import annotations

import datetime
import os
import platform
import resource
import threading
import time
from typing import Any, Callable

import torch

import torch_green_contexts as tgc
from torch_green_contexts import SMPartition


def describe(device: int) -> dict[str, Any]:
    """Date, GPU, driver, torch and package versions for the results."""
    props = torch.cuda.get_device_properties(device)
    whole = SMPartition.from_device(device_id=device)
    info: dict[str, Any] = {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "gpu": props.name,
        "compute_capability": f"{props.major}.{props.minor}",
        "sm_count": whole.sm_count,
        "sm_coscheduled_alignment": whole.coscheduled_sm_count,
        "cuda_driver": tgc._C.format_driver_version(tgc.driver_version()),
        "torch": torch.__version__,
        "torch_cuda_runtime": torch.version.cuda,
        "cublas": _cublas_version(),
        "torch_green_contexts": tgc.__version__,
        "python": platform.python_version(),
        "host_cpus": os.cpu_count(),
    }
    try:
        import pynvml  # type: ignore[import-not-found]

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(device)
        info["nvidia_driver"] = _text(pynvml.nvmlSystemGetDriverVersion())
        info["max_sm_clock_mhz"] = pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM)
        info["power_limit_w"] = pynvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000.0
    except Exception as error:  # noqa: BLE001 - optional information
        info["nvml"] = f"unavailable: {error}"
    return info


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _cublas_version() -> str | None:
    """The version of the cuBLAS wheel PyTorch loads, where it came from pip."""
    from importlib import metadata

    for name in ("nvidia-cublas", "nvidia-cublas-cu13", "nvidia-cublas-cu12"):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def host_rss_bytes() -> int:
    """Resident set size of this process now (Linux /proc), in bytes."""
    with open("/proc/self/statm") as statm:
        resident_pages = int(statm.read().split()[1])
    return resident_pages * resource.getpagesize()


class ClockSampler:
    """Samples the GPU's SM clock, power and temperature through NVML in a background thread,
    so that throughput differences can be checked against clocks. Inert without NVML."""

    def __init__(self, device: int, period_s: float = 0.02) -> None:
        self.samples: list[tuple[float, int, float, int]] = []  # (time, MHz, W, C)
        self._period = period_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        try:
            import pynvml  # type: ignore[import-not-found]

            pynvml.nvmlInit()
            self._nvml = pynvml
            self._handle = pynvml.nvmlDeviceGetHandleByIndex(device)
        except Exception:  # noqa: BLE001
            self._nvml = None

    @property
    def available(self) -> bool:
        return self._nvml is not None

    def __enter__(self) -> ClockSampler:
        if self._nvml is not None:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        nvml, handle = self._nvml, self._handle
        while not self._stop.is_set():
            try:
                self.samples.append((
                    time.perf_counter(),
                    nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM),
                    nvml.nvmlDeviceGetPowerUsage(handle) / 1000.0,
                    nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU),
                ))
            except Exception:  # noqa: BLE001
                return
            self._stop.wait(self._period)

    def between(self, start: float, end: float) -> dict[str, float] | None:
        """Mean SM clock, power and temperature over the samples taken in [start, end]."""
        inside = [s for s in self.samples if start <= s[0] <= end]
        if not inside:
            return None
        return {
            "sm_clock_mhz": sum(s[1] for s in inside) / len(inside),
            "power_w": sum(s[2] for s in inside) / len(inside),
            "temperature_c": sum(s[3] for s in inside) / len(inside),
        }


class Builtin:
    """PyTorch's own torch.cuda.green_contexts, as the torch in use provides it (or not)."""

    def __init__(self) -> None:
        self.reason = ""
        self.cls: Any = None
        try:
            from torch.cuda import green_contexts

            self.cls = green_contexts.GreenContext
            if self.cls.__module__.startswith("torch_green_contexts"):
                raise RuntimeError("torch.cuda.green_contexts is replaced by torch_green_contexts")
        except Exception as error:  # noqa: BLE001
            self.cls = None
            self.reason = f"torch {torch.__version__}: {error}"

    @property
    def available(self) -> bool:
        return self.cls is not None

    def create(self, num_sms: int, device: int) -> Any:
        """A built-in context of at least `num_sms` SMs on `device` (created on its own)."""
        try:
            return self.cls.create(num_sms=num_sms, device_id=device)
        except TypeError:
            return self.cls.create(num_sms, device)

    def check(self, device: int) -> None:
        """Creates one context and stream, so that a torch whose module exists but cannot be
        used (missing cuda-python, say) is reported as unavailable instead of failing later."""
        if self.cls is None:
            return
        try:
            ctx = self.create(8, device)
            ctx.Stream()
        except Exception as error:  # noqa: BLE001
            self.cls = None
            self.reason = f"torch {torch.__version__}: {type(error).__name__}: {error}"


def timed(fn: Callable[[], Any]) -> tuple[int, Any]:
    """(nanoseconds, result) of one call, on the host clock."""
    start = time.perf_counter_ns()
    result = fn()
    return time.perf_counter_ns() - start, result


def driver_baselines() -> Any:
    """The module of raw driver calls the host-cost benchmarks compare against
    (``torch_green_contexts._bench``), built only on request; SystemExit saying how otherwise."""
    try:
        from torch_green_contexts import _bench
    except ImportError:
        raise SystemExit(
            "these figures compare against the raw driver calls of torch_green_contexts._bench, which is built "
            "only on request: TORCH_GREEN_CONTEXTS_BENCHMARKS=1 pip install --no-build-isolation --no-deps -e ."
        ) from None
    return _bench
