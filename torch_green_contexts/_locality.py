"""Locality domains of a device: the two module-level queries of torch 2.15's
``torch.cuda.green_contexts``, on any torch and without cuda-python."""

from __future__ import annotations

import sys
from typing import Any

import torch

from ._device import resolve_device
from ._native import _C
from ._nvml_locality import localization_support, visible_device_count
from ._validation import as_device_id

# torch.cuda.is_initialized is untyped in some releases.
_torch_cuda: Any = torch.cuda


def _software_supported() -> bool:
    """A CUDA build of PyTorch on Linux and a CUDA driver of 13.4 or newer (whose version is
    read without initialising the driver)."""
    if torch.version.cuda is None or getattr(torch.version, "hip", None) is not None:
        return False
    if sys.platform == "win32":
        return False
    return _C.installed_driver_version() >= _C.feature_version.locality_domains


def _checked_device(device_id: object) -> int | None:
    """``device_id`` checked as every call of the package checks it, on any driver: a wrong type
    is a TypeError, a negative index or one the machine does not have a RuntimeError (the
    core's). None stays None. NVML is asked first so that a valid device initialises nothing;
    where it cannot say, or says the device is beyond its count, the driver is asked (it is
    initialised, no context is made)."""
    device = as_device_id(device_id)
    if device is None or _C.installed_driver_version() == 0:
        return device
    if _C.driver_initialized() or not 0 <= device < visible_device_count():
        _C.resolve_device(device)
    return device


def get_num_locality_domains(device_id: int | None = None) -> int:
    """The device's locality-domain count as CUDA reports it.

    ``1`` where the software cannot say: a driver older than 13.4 (or none), or a PyTorch
    without CUDA. Otherwise it initialises the CUDA driver and asks it; with a ``device_id``
    the query makes no context (initialising the driver can still keep CUDA from working in
    children forked afterwards). ``None`` means PyTorch's current device, which initialises
    PyTorch's CUDA state if need be. An invalid device is a RuntimeError, a failed driver
    query a :class:`DriverError`, on every driver.
    """
    device = _checked_device(device_id)
    if not _software_supported():
        return 1
    count: int = _C.locality_domain_count(resolve_device(device))
    return count


def is_localization_supported(device_id: int | None = None) -> bool:
    """Whether localization is supported: the device has more than one locality domain.

    ``False`` where the software cannot say (as for :func:`get_num_locality_domains`) or the
    device has at most one domain. It makes no context, and initialises the driver only to check
    a ``device_id`` that NVML cannot count: once the driver is initialised (by PyTorch or this
    package) the driver is asked; before, NVML is asked for a best-effort answer from the
    architecture and the system's configuration, and a RuntimeError says so when NVML cannot
    tell. ``None`` means PyTorch's current device if PyTorch has initialised CUDA, else device
    0. An invalid device is a RuntimeError, a failed driver query a :class:`DriverError`, on
    every driver.
    """
    device = _checked_device(device_id)
    if not _software_supported():
        return False
    if device is None:
        device = _C.current_device() if _torch_cuda.is_initialized() else 0
    if not _C.driver_initialized():
        supported = localization_support(device)
        if supported is None:
            raise RuntimeError(
                "Cannot tell whether device {} supports localization without initialising "
                "CUDA (NVML cannot say here); initialise CUDA first (e.g. "
                "torch.cuda.init()) and ask again".format(device)
            )
        return supported
    return get_num_locality_domains(device) > 1
