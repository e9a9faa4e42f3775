"""Writes a wheel that holds the package's Python files once (taken from the pure-Python wheel
setup.py builds with TORCH_GREEN_CONTEXTS_PYTHON_ONLY=1) and one compiled module per torch
release, listed in torch_green_contexts/_torch_builds/builds.json for the import to choose from."""

from __future__ import annotations

import base64
import hashlib
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path

BUILDS_DIR = "torch_green_contexts/_torch_builds"
# The newest C++ runtime a glibc-2.34 distribution is sure to have (GCC 11's, as on RHEL 9).
CXX_RUNTIME_CEILING = {"GLIBCXX": (3, 4, 29), "CXXABI": (1, 3, 13)}


@dataclass(frozen=True)
class Module:
    torch: str            # torch.__version__ it was compiled against
    cuda: str | None
    cxx11_abi: bool
    path: Path            # the compiled file
    name: str             # its path inside _torch_builds, "torch-2.6/_C.cpython-312-x86_64-linux-gnu.so"


def platform_tag(needs: dict[str, tuple[int, ...]]) -> str:
    """manylinux_2_N_x86_64 for modules that need glibc 2.N (and a C++ runtime that every
    distribution with it has), else linux_x86_64."""
    glibc = needs.get("GLIBC", (2, 17))
    for name, ceiling in CXX_RUNTIME_CEILING.items():
        if needs.get(name, ()) > ceiling:
            return "linux_x86_64"
    return f"manylinux_2_{max(17, glibc[1])}_x86_64"


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def write_wheel(pure: Path, modules: list[Module], python_tag: str, platform: str, out_dir: Path) -> Path:
    """The wheel for CPython ``python_tag`` ("cp312") on ``platform``: ``pure``'s files and
    ``modules``. Returns its path."""
    with zipfile.ZipFile(pure) as source:
        entries = {name: source.read(name) for name in source.namelist()}
    (dist_info,) = {name.split("/")[0] for name in entries if name.split("/")[0].endswith(".dist-info")}
    distribution, version = dist_info[: -len(".dist-info")].rsplit("-", 1)
    tag = f"{python_tag}-{python_tag}-{platform}"
    wheel_meta = entries[f"{dist_info}/WHEEL"].decode().splitlines()
    generator = next((line for line in wheel_meta if line.startswith("Generator:")), "Generator: setuptools")
    entries[f"{dist_info}/WHEEL"] = (f"Wheel-Version: 1.0\n{generator}\nRoot-Is-Purelib: false\nTag: {tag}\n").encode()
    entries.pop(f"{dist_info}/RECORD", None)
    manifest = {
        "python": python_tag,
        "platform": platform,
        "builds": [{"torch": m.torch, "cuda": m.cuda, "cxx11_abi": m.cxx11_abi, "module": m.name} for m in modules],
    }
    entries[f"{BUILDS_DIR}/builds.json"] = (json.dumps(manifest, indent=1) + "\n").encode()
    for module in modules:
        entries[f"{BUILDS_DIR}/{module.name}"] = module.path.read_bytes()
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{distribution}-{version}-{tag}.whl"
    record = [_record_line(name, data) for name, data in entries.items()] + [f"{dist_info}/RECORD,,"]
    entries[f"{dist_info}/RECORD"] = ("\n".join(record) + "\n").encode()
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as wheel:
        for name, data in entries.items():
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (0o755 if name.endswith(".so") else 0o644) << 16
            wheel.writestr(info, data)
    return path
