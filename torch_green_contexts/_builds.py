"""Which compiled core fits the running torch.

A build from source (setup.py) is one module, ``torch_green_contexts/_C*.so``, for the very torch
it was compiled against (recorded in ``_build_info.py``). A wheel of scripts/build_wheel.py holds
one module per torch release under ``_torch_builds/``, listed in ``_torch_builds/builds.json``;
the running torch's release picks one. Each module links c10 and c10_cuda of its release, whose
interfaces change between releases but not between the patch releases of one, nor with the CUDA
version torch was built for (the module calls the CUDA runtime through c10's headers only, by
unversioned names that any CUDA runtime torch loads resolves). What does matter is the C++
std::string ABI (``torch._C._GLIBCXX_USE_CXX11_ABI``): torch 2.6's wheels on PyPI use the old
one, later ones the new one, and a torch built elsewhere may differ from both.

Plain Python without torch, so that the choice can be tested alone.
"""

from __future__ import annotations

import json
import pathlib
import sys
from dataclasses import dataclass
from typing import Any, Sequence

from ._torch_version import torch_release

WHEEL_BUILDS = pathlib.Path(__file__).resolve().parent / "_torch_builds"
MANIFEST = WHEEL_BUILDS / "builds.json"

FROM_SOURCE = (
    "build the package from source against the installed torch: `pip install --no-build-isolation "
    "--no-binary torch_green_contexts torch_green_contexts` (or `pip install --no-build-isolation .` in a "
    "checkout; both need a C++ compiler and the CUDA runtime headers)"
)


@dataclass(frozen=True)
class Build:
    """One compiled module of a wheel: the torch it was compiled against (``torch``, such as
    "2.11.0+cu128"), that torch's CUDA version and std::string ABI, and the module's file."""

    torch: str
    cuda: str | None
    cxx11_abi: bool
    path: pathlib.Path

    @property
    def release(self) -> tuple[int, int]:
        return torch_release(self.torch)


@dataclass(frozen=True)
class WheelBuilds:
    """What a wheel's builds.json says: the CPython version (``python``, such as "cp312"), the
    platform tag the wheel was built for, and its builds."""

    python: str
    platform: str
    builds: tuple[Build, ...]

    def releases(self) -> str:
        """The torch releases served, for messages: "2.6, 2.7, ..., 2.15"."""
        return ", ".join("%d.%d" % b.release for b in sorted(self.builds, key=lambda b: b.release))


def read_manifest(path: pathlib.Path = MANIFEST) -> WheelBuilds | None:
    """The wheel's builds, or None for a build from source (no builds.json)."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    data: dict[str, Any] = json.loads(text)
    builds = tuple(Build(torch=b["torch"], cuda=b.get("cuda"), cxx11_abi=bool(b["cxx11_abi"]),
                         path=path.parent / b["module"]) for b in data["builds"])
    return WheelBuilds(python=data["python"], platform=data["platform"], builds=builds)


def running_python() -> str:
    """The running CPython's tag, "cp312" for 3.12."""
    return "cp%d%d" % sys.version_info[:2]


def choose(wheel: WheelBuilds, torch_version: str, cxx11_abi: bool, python: str | None = None) -> Build:
    """The build of ``wheel`` for torch ``torch_version`` whose std::string ABI is ``cxx11_abi``;
    ImportError saying why when none fits."""
    python = python or running_python()
    if wheel.python != python:
        raise ImportError(
            f"this torch_green_contexts wheel was built for CPython {_python_name(wheel.python)}, but "
            f"CPython {_python_name(python)} runs it: install the wheel for this Python, or {FROM_SOURCE}")
    release = torch_release(torch_version)
    same_release = [b for b in wheel.builds if b.release == release]
    if not same_release:
        raise ImportError(
            f"this torch_green_contexts wheel holds builds for torch {wheel.releases()} (CPython "
            f"{_python_name(wheel.python)}, {wheel.platform}); torch {torch_version} is installed, which "
            f"none of them serves: install one of those torch releases, or {FROM_SOURCE}")
    for build in same_release:
        if build.cxx11_abi == cxx11_abi:
            return build
    build = same_release[0]
    raise ImportError(
        f"this torch_green_contexts wheel's build for torch {'%d.%d' % release} was compiled against torch "
        f"{build.torch}, which uses the {_abi_name(build.cxx11_abi)}; the installed torch {torch_version} uses "
        f"the {_abi_name(cxx11_abi)} (a torch built from source or from another channel), and C++ code of the "
        f"two cannot be linked together: {FROM_SOURCE}")


def check_source_build(built_against: str | None, torch_version: str) -> None:
    """ImportError unless a build from source was compiled against torch ``torch_version``
    (``built_against``: what setup.py recorded; None when nothing was recorded)."""
    if built_against is not None and built_against != torch_version:
        raise ImportError(
            f"torch_green_contexts was built against torch {built_against}, but torch {torch_version} is "
            f"installed; its compiled extension works only with the torch it was built against: rebuild it "
            f"against the installed torch: `pip install --no-build-isolation --no-deps --force-reinstall "
            f"<this package's source>` (or `pip install --no-build-isolation -e .` in a checkout), or install "
            f"a wheel that holds a build for torch {'%d.%d' % torch_release(torch_version)}")


def load_failed(build: Build, wheel: WheelBuilds, error: BaseException) -> ImportError:
    """The ImportError for a wheel's build that the dynamic loader refused (a C library or
    C++ runtime older than the wheel's platform needs, a damaged file)."""
    return ImportError(
        f"this torch_green_contexts wheel's build for torch {'%d.%d' % build.release} (compiled against "
        f"torch {build.torch}, for {wheel.platform}) could not be loaded: {error}; a C library or C++ runtime "
        f"older than the wheel's platform tag needs gives this: {FROM_SOURCE}")


def _python_name(tag: str) -> str:
    return f"{tag[2]}.{tag[3:]}" if tag.startswith("cp") and len(tag) > 3 else tag


def _abi_name(cxx11_abi: bool) -> str:
    return "C++11 std::string ABI (_GLIBCXX_USE_CXX11_ABI=1)" if cxx11_abi else \
        "pre-C++11 std::string ABI (_GLIBCXX_USE_CXX11_ABI=0)"


__all__: Sequence[str] = ["Build", "WheelBuilds", "read_manifest", "choose", "check_source_build", "load_failed"]
