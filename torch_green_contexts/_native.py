"""Loads the compiled core, torch first (the module links against torch's c10 libraries): from a
wheel, the build for the running torch's release; from a build from source, the one module, after
checking that it was compiled against the running torch (see _builds)."""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
from types import ModuleType
from typing import TYPE_CHECKING

import torch

from . import _builds
from ._torch_version import check_torch

check_torch(torch.__version__)

_NAME = __name__.rsplit(".", 1)[0] + "._C"


def _load_wheel_build(wheel: _builds.WheelBuilds) -> tuple[ModuleType, str]:
    build = _builds.choose(wheel, torch.__version__, bool(torch._C._GLIBCXX_USE_CXX11_ABI))
    loader = importlib.machinery.ExtensionFileLoader(_NAME, str(build.path))
    spec = importlib.util.spec_from_file_location(_NAME, str(build.path), loader=loader)
    assert spec is not None
    try:
        module = importlib.util.module_from_spec(spec)
        loader.exec_module(module)
    except (ImportError, OSError) as error:
        raise _builds.load_failed(build, wheel, error) from error
    sys.modules[_NAME] = module
    return module, build.torch


def _load_source_build() -> tuple[ModuleType, str | None]:
    built_against: str | None
    try:
        from ._build_info import TORCH_VERSION as built_against
    except ImportError:  # pragma: no cover - a build that did not go through setup.py
        built_against = None
    _builds.check_source_build(built_against, torch.__version__)
    try:
        module = importlib.import_module(_NAME)
    except ImportError as error:  # pragma: no cover - only with a broken build
        raise ImportError(
            f"torch_green_contexts' compiled extension could not be loaded ({error}) under torch "
            f"{torch.__version__}: {_builds.FROM_SOURCE}") from error
    return module, built_against


_wheel = _builds.read_manifest()
_module, BUILT_AGAINST_TORCH = _load_wheel_build(_wheel) if _wheel is not None else _load_source_build()
# Where the module came from: "wheel" (one of a wheel's builds) or "source" (setup.py's build).
LOADED_FROM = "wheel" if _wheel is not None else "source"
if TYPE_CHECKING:
    from . import _C
else:
    _C = _module

__all__ = ["_C", "BUILT_AGAINST_TORCH", "LOADED_FROM"]
