"""Whether GPUs have several locality domains, asked of NVML, for when the CUDA driver is not
initialised and must stay so (initialising it can keep CUDA from working in forked
children). A best-effort answer from the architecture and the system's configuration, made
the way torch 2.15 makes it; None wherever NVML cannot tell."""

from __future__ import annotations

import ctypes
import os
from typing import Any

import torch

NVML_SUCCESS = 0
NVML_ERROR_NOT_SUPPORTED = 3
VIRTUALIZATION_NONE = 0
VIRTUALIZATION_VGPU = 2
# Drivers before this branch have no locality domains.
MIN_DRIVER_BRANCH = 580
MPS_PIPE_DIRECTORIES = ("/tmp/nvidia-mps", "/run/nvidia-mps")
# torch.cuda's NVML helpers are private (and untyped in some releases).
_torch_cuda: Any = torch.cuda


def _load() -> Any:
    """The NVML library (a testing hook: tests put a stand-in here)."""
    return ctypes.CDLL("libnvidia-ml.so.1")


def _under_mps() -> bool:
    """NVML describes physical GPUs; under MPS CUDA may see another topology."""
    return any(name.startswith("CUDA_MPS_") for name in os.environ) or any(
        os.path.exists(path) for path in MPS_PIPE_DIRECTORIES
    )


def visible_device_count() -> int:
    """CUDA's visible devices as NVML counts them (-1 when it cannot), which initialises no driver."""
    try:
        return int(_torch_cuda._device_count_nvml())
    except (AttributeError, OSError, RuntimeError):
        return -1


def localization_support(device_id: int) -> bool | None:
    """True if CUDA device ``device_id`` is a GPU with several locality domains, False if it
    has one, None if NVML cannot tell (the caller must then ask CUDA itself)."""
    if _under_mps():
        return None
    try:
        if not 0 <= device_id < visible_device_count():
            return None
        visible = _torch_cuda._parse_visible_devices()
        nvml = _load()
        if nvml.nvmlInit_v2() != NVML_SUCCESS:
            return None
        try:
            return _ask(nvml, device_id, visible)
        finally:
            nvml.nvmlShutdown()
    except (AttributeError, OSError, RuntimeError):
        return None


def _ask(nvml: Any, device_id: int, visible: Any) -> bool | None:
    version = ctypes.create_string_buffer(80)
    if nvml.nvmlSystemGetDriverVersion(version, len(version)) != NVML_SUCCESS:
        return None
    branch = version.value.split(b".", 1)[0]
    if not branch.isdigit():
        return None
    if int(branch) < MIN_DRIVER_BRANCH:
        return False
    if visible and isinstance(visible[0], str):  # CUDA_VISIBLE_DEVICES names GPUs by UUID
        indices: Any = [_torch_cuda._get_nvml_device_index(device_id)]
    else:
        # CUDA's numbering can differ from NVML's: without UUIDs every physical GPU, hidden
        # ones included, must agree.
        count = ctypes.c_uint()
        if nvml.nvmlDeviceGetCount_v2(ctypes.byref(count)) != NVML_SUCCESS:
            return None
        indices = range(count.value)
    answers = {_one_gpu(nvml, index) for index in indices}
    if len(answers) != 1:
        return None
    return answers.pop()


def _one_gpu(nvml: Any, index: int) -> bool | None:
    handle = ctypes.c_void_p()
    if nvml.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(handle)) != NVML_SUCCESS:
        return None
    major, minor = ctypes.c_int(), ctypes.c_int()
    if nvml.nvmlDeviceGetCudaComputeCapability(handle, ctypes.byref(major), ctypes.byref(minor)) != NVML_SUCCESS:
        return None
    if major.value < 10 or major.value == 12:
        return False  # architectures with one domain
    if major.value != 10:
        return None  # an architecture NVML's answer is not known for
    mode = ctypes.c_uint()
    if nvml.nvmlDeviceGetVirtualizationMode(handle, ctypes.byref(mode)) != NVML_SUCCESS:
        return None
    if mode.value == VIRTUALIZATION_VGPU:
        return False
    if mode.value != VIRTUALIZATION_NONE:
        return None
    current, pending = ctypes.c_uint(), ctypes.c_uint()
    if nvml.nvmlDeviceGetMigMode(handle, ctypes.byref(current), ctypes.byref(pending)) != NVML_SUCCESS:
        return None
    if current.value != 0:
        return None  # MIG instances: ask CUDA
    numa_node = ctypes.c_uint()
    # A GPU exposed as a NUMA node needs CUDA's answer; NOT_SUPPORTED is the expected result.
    if nvml.nvmlDeviceGetNumaNodeId(handle, ctypes.byref(numa_node)) != NVML_ERROR_NOT_SUPPORTED:
        return None
    return True
