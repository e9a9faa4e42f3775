"""Compiles torch_green_contexts._C once per (torch release, CPython version) with the C++
compiler, from the sources and flags of build_sources.py, as torch's own cpp_extension would
(its C++ standard, its std::string ABI, its headers), linking c10 and c10_cuda of that release.
The core, which includes neither torch nor Python, is compiled once per standard and ABI.
After linking, every symbol the module leaves undefined must be defined by that release's c10
libraries, its CUDA runtime, Python or the C and C++ runtimes: a build that would fail at import
fails here."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from .torch_tree import TorchTree

CXX = os.environ.get("CXX", "g++")


@dataclass(frozen=True)
class Python:
    tag: str             # "cp312"
    version: str         # "3.12"
    include: Path        # holds Python.h
    ext_suffix: str      # ".cpython-312-x86_64-linux-gnu.so"

    @staticmethod
    def of(interpreter: str) -> "Python":
        code = ("import sys, sysconfig; print(sys.version_info[0], sys.version_info[1]); "
                "print(sysconfig.get_paths()['include']); print(sysconfig.get_config_var('EXT_SUFFIX'))")
        out = subprocess.run([interpreter, "-c", code], check=True, capture_output=True, text=True).stdout.split("\n")
        major, minor = out[0].split()
        include = Path(out[1])
        if not (include / "Python.h").is_file():
            raise SystemExit(f"{interpreter}: no Python.h in {include} (install its development headers)")
        return Python(tag=f"cp{major}{minor}", version=f"{major}.{minor}", include=include, ext_suffix=out[2])


@dataclass(frozen=True)
class Job:
    source: Path
    output: Path
    flags: tuple[str, ...]


def _common_flags(tree: TorchTree, sources: dict) -> list[str]:
    return ([f"-std={tree.cxx_std}", "-fPIC", "-DNDEBUG", f"-D_GLIBCXX_USE_CXX11_ABI={int(tree.cxx11_abi)}"]
            + list(sources["COMPILE_ARGS"]) + [f"-I{d}" for d in sources["INCLUDE_DIRS"]])


def plan(root: Path, work: Path, tree: TorchTree, python: Python, sources: dict) -> tuple[list[Job], list[Path]]:
    """The compile jobs of the module for ``tree`` and ``python`` (jobs shared with other
    modules have the same output path) and the objects it links."""
    common = _common_flags(tree, sources)
    core_dir = work / f"core-{tree.cxx_std}-abi{int(tree.cxx11_abi)}"
    torch_flags = common + [f"-I{tree.include}", f"-I{tree.cuda_include}"]
    module_dir = work / f"torch-{tree.version}" / python.tag  # a changed flag recompiles (run_jobs)
    binding_flags = torch_flags + [f"-I{python.include}", "-DTORCH_EXTENSION_NAME=_C"]
    jobs = [Job(root / s, core_dir / (Path(s).stem + ".o"), tuple(common)) for s in sources["CORE_SOURCES"]]
    jobs += [Job(root / s, module_dir / (Path(s).stem + ".o"), tuple(torch_flags)) for s in sources["TORCH_SOURCES"]]
    jobs += [Job(root / s, module_dir / (Path(s).stem + ".o"), tuple(binding_flags))
             for s in sources["BINDING_SOURCES"]]
    return jobs, [job.output for job in jobs]


def run_jobs(jobs: list[Job], parallel: int) -> None:
    """Compiles each distinct job once, ``parallel`` at a time; a job whose object is newer than
    its source and whose flags are unchanged is skipped."""
    unique = {job.output: job for job in jobs}

    def compile_one(job: Job) -> None:
        stamp = job.output.with_suffix(".flags")
        flags = " ".join(job.flags)
        if (job.output.is_file() and stamp.is_file() and stamp.read_text() == flags
                and job.output.stat().st_mtime > _newest_input(job.source)):
            return
        job.output.parent.mkdir(parents=True, exist_ok=True)
        command = [CXX, *job.flags, "-c", str(job.source), "-o", str(job.output)]
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            raise SystemExit(f"compile failed: {shlex.join(command)}\n{result.stderr[-6000:]}")
        stamp.write_text(flags)

    with ThreadPoolExecutor(max_workers=max(1, parallel)) as pool:
        for _ in pool.map(compile_one, unique.values()):
            pass


def _newest_input(source: Path) -> float:
    """The newest modification time of ``source`` and the project headers (csrc/**.h)."""
    csrc = next(p for p in source.parents if p.name == "csrc")
    return max([source.stat().st_mtime] + [h.stat().st_mtime for h in csrc.rglob("*.h")])


def link(objects: list[Path], tree: TorchTree, output: Path, sources: dict) -> None:
    output.parent.mkdir(parents=True, exist_ok=True)
    command = ([CXX, "-shared", "-o", str(output), *map(str, objects), f"-L{tree.lib}"]
               + [f"-l{lib}" for lib in sources["TORCH_LIBRARIES"] + sources["SYSTEM_LIBRARIES"]]
               + list(sources["LINK_ARGS"]))
    subprocess.run(command, check=True)
    check_symbols(output, tree)


def _symbols(path: Path, defined: bool) -> set[str]:
    option = "--defined-only" if defined else "--undefined-only"
    out = subprocess.run(["nm", "-D", option, str(path)], check=True, capture_output=True, text=True).stdout
    return {line.split()[-1].split("@")[0] for line in out.splitlines() if line.strip()}


def check_symbols(module: Path, tree: TorchTree) -> None:
    """SystemExit naming the symbols of ``module`` that nothing it will be loaded with defines."""
    provided = set()
    for library in (tree.lib / "libc10.so", tree.lib / "libc10_cuda.so", tree.cudart):
        provided |= _symbols(library, defined=True)
    runtime = re.compile(r"^(_?Py|_Py|__gmon_start__|_ITM_|__cxa_|_Unwind_|__gxx_personality)")
    for library in ("libstdc++.so.6", "libc.so.6", "libm.so.6", "libgcc_s.so.1", "ld-linux-x86-64.so.2"):
        path = _system_library(library)
        if path is not None:
            provided |= _symbols(path, defined=True)
    missing = sorted(s for s in _symbols(module, defined=False) - provided if not runtime.match(s))
    if missing:
        raise SystemExit(f"{module}: {len(missing)} symbols that torch {tree.version}'s libraries do not "
                         f"define, e.g. {missing[:5]}")


def _system_library(name: str) -> Path | None:
    out = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.strip().startswith(name + " ") and "x86-64" in line:
            return Path(line.split("=>")[-1].strip())
    return None


def required_versions(module: Path) -> dict[str, tuple[int, ...]]:
    """The newest GLIBC, GLIBCXX and CXXABI symbol versions ``module`` needs."""
    out = subprocess.run(["objdump", "-T", str(module)], check=True, capture_output=True, text=True).stdout
    newest: dict[str, tuple[int, ...]] = {}
    for name, version in re.findall(r"\b(GLIBC|GLIBCXX|CXXABI)_([0-9.]+)\b", out):
        parsed = tuple(int(p) for p in version.split("."))
        newest[name] = max(newest.get(name, ()), parsed)
    return newest
