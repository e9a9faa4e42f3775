"""The parts of a torch release that a build compiles and links against, from its wheel on PyPI:
torch's headers, libc10.so and libc10_cuda.so, its version, CUDA version, std::string ABI and
C++ standard; and the CUDA runtime headers (and libcudart, for the symbol check) of the CUDA
release it was built with. Nothing is installed: the wheels are downloaded with pip and unpacked
into a cache folder, one folder per torch version."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

# torch's Linux wheels: manylinux_2_28 from 2.7, manylinux1 / manylinux_2_17 before.
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux1_x86_64")
TORCH_MEMBERS = ("torch/include/", "torch/lib/libc10.so", "torch/lib/libc10_cuda.so", "torch/version.py",
                 "torch/utils/cpp_extension.py")


@dataclass(frozen=True)
class TorchTree:
    version: str          # torch.__version__ of the wheel, "2.6.0+cu124"
    cuda: str | None      # torch.version.cuda, "12.4"
    cxx11_abi: bool       # torch._C._GLIBCXX_USE_CXX11_ABI
    cxx_std: str          # the standard torch's cpp_extension compiles extensions with, "c++17"
    include: Path         # torch/include
    lib: Path             # holds libc10.so and libc10_cuda.so
    cuda_include: Path    # holds cuda_runtime_api.h
    cudart: Path          # libcudart.so.N

    @property
    def release(self) -> str:
        return ".".join(self.version.split("+")[0].split(".")[:2])


def pip_download(requirement: str, python: str, dest: Path) -> Path:
    """The one wheel of ``requirement`` for CPython ``python`` ("3.12") on Linux x86_64."""
    command = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
               "--python-version", python, "-d", str(dest), requirement]
    for platform in PLATFORMS:
        command[-1:-1] = ["--platform", platform]
    subprocess.run(command, check=True)
    (wheel,) = dest.glob("*.whl")
    return wheel


def torch_versions_for(python: str) -> set[str]:
    """The torch versions PyPI has Linux x86_64 wheels of for CPython ``python``."""
    command = [sys.executable, "-m", "pip", "index", "versions", "torch", "--only-binary=:all:",
               "--python-version", python]
    for platform in PLATFORMS:
        command += ["--platform", platform]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    match = re.search(r"Available versions: (.*)", out)
    return {v.strip() for v in match.group(1).split(",")} if match else set()


def fetch(version: str, python: str, cache: Path) -> TorchTree:
    """torch ``version`` ("2.6.0") unpacked under ``cache``, downloaded (the wheel for CPython
    ``python``; what a build uses of it is the same for every Python) unless it is there."""
    root = cache / f"torch-{version}"
    info = root / "tree.json"
    if not info.is_file():
        shutil.rmtree(root, ignore_errors=True)
        with tempfile.TemporaryDirectory(dir=cache) as tmp:
            wheel = pip_download(f"torch=={version}", python, Path(tmp))
            print(f"unpacking {wheel.name}", flush=True)
            with zipfile.ZipFile(wheel) as archive:
                names = archive.namelist()
                archive.extractall(root, [n for n in names if n.startswith(TORCH_MEMBERS)])
                (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
                requires = archive.read(metadata).decode()
            tree = _describe(root, requires)
            cuda_dir = Path(tmp) / "cuda"
            cuda_dir.mkdir()
            runtime = pip_download(_cuda_runtime_requirement(tree["cuda"]), python, cuda_dir)
            with zipfile.ZipFile(runtime) as archive:
                archive.extractall(root / "cuda-runtime")
        tree["cuda_include"] = str(_only(root / "cuda-runtime", "**/include/cuda_runtime_api.h").parent)
        tree["cudart"] = str(_only(root / "cuda-runtime", "**/lib/libcudart.so.*"))
        info.write_text(json.dumps(tree, indent=1))
    data = json.loads(info.read_text())
    return TorchTree(version=data["version"], cuda=data["cuda"], cxx11_abi=data["cxx11_abi"],
                     cxx_std=data["cxx_std"], include=root / "torch" / "include", lib=root / "torch" / "lib",
                     cuda_include=Path(data["cuda_include"]), cudart=Path(data["cudart"]))


def _describe(root: Path, metadata: str) -> dict:
    scope: dict = {}
    exec((root / "torch" / "version.py").read_text(), scope)
    if not scope.get("cuda"):
        raise SystemExit(f"torch {scope['__version__']}: not a CUDA build of torch")
    # Which std::string ABI c10 was compiled with: its own exported names say so (libc10.so of
    # the old ABI also exports some of libstdc++'s names of the new one).
    symbols = subprocess.run(["nm", "-D", "--defined-only", str(root / "torch" / "lib" / "libc10.so")],
                             check=True, capture_output=True, text=True).stdout
    flags = (root / "torch" / "utils" / "cpp_extension.py").read_text()
    standards = re.findall(r"common_cflags \+= \['-std=(c\+\+\d+)'", flags)
    if not standards:
        raise SystemExit(f"torch {scope['__version__']}: no -std flag found in torch/utils/cpp_extension.py")
    return {"version": scope["__version__"], "cuda": scope["cuda"], "cxx11_abi": any(
        s.startswith("_ZN3c10") and "__cxx11" in s for s in symbols.split()),
            "cxx_std": standards[0], "requires": [line for line in metadata.splitlines()
                                                  if line.startswith("Requires-Dist:") and "cuda" in line]}


def _cuda_runtime_requirement(cuda: str) -> str:
    """The pip package of CUDA ``cuda``'s runtime ("12.4"): nvidia-cuda-runtime-cu12 for 12,
    nvidia-cuda-runtime from 13 on."""
    major = cuda.split(".")[0]
    name = "nvidia-cuda-runtime-cu12" if major == "12" else "nvidia-cuda-runtime"
    return f"{name}=={cuda}.*"


def _only(root: Path, pattern: str) -> Path:
    found = sorted(root.glob(pattern))
    if not found:
        raise SystemExit(f"{root}: no {pattern}")
    return found[0]
