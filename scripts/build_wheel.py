"""Builds the source distribution and, for each CPython given, one wheel that holds the compiled
core for every torch release asked for, each compiled against that release's own headers and
libraries, with the package's Python files once; the import loads the build for the running
torch's release (torch_green_contexts/_builds.py). Needs no installed torch: each release's wheel
is downloaded from PyPI (pip download, no dependencies) and only its headers and c10 libraries are
unpacked, into --cache. Needs a C++ compiler and, per CPython, its headers (Python.h).

  python scripts/build_wheel.py                      # torch 2.6 and the newest, for this Python
  python scripts/build_wheel.py --torch all --python python3.11 --python python3.12   # a release
  python scripts/build_wheel.py --sdist-only

A torch release without a wheel for a CPython is left out of that CPython's wheel (said so).
Writes into --out (default dist/): torch_green_contexts-VERSION.tar.gz and
torch_green_contexts-VERSION-cpXY-cpXY-PLATFORM.whl.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import runpy
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from wheelbuild import compile as cc  # noqa: E402
from wheelbuild import pack, torch_tree  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RELEASES = [line.strip() for line in (ROOT / "scripts" / "torch_releases.txt").read_text().splitlines()
            if line.strip() and not line.startswith("#")]


def build_meta(kind: str, source: Path, out: Path) -> Path:
    """setuptools' PEP 517 build of ``kind`` ("sdist" or "wheel") of ``source`` into ``out``,
    without the extension (TORCH_GREEN_CONTEXTS_PYTHON_ONLY=1)."""
    out.mkdir(parents=True, exist_ok=True)
    code = f"from setuptools import build_meta; print(build_meta.build_{kind}({str(out)!r}))"
    env = {**os.environ, "TORCH_GREEN_CONTEXTS_PYTHON_ONLY": "1"}
    result = subprocess.run([sys.executable, "-c", code], cwd=source, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{kind} build failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return out / result.stdout.strip().splitlines()[-1]


def checkout_files(stage: Path) -> None:
    """The checkout's files that git tracks or would (not the ignored ones: builds, venvs)."""
    names = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           check=True, capture_output=True).stdout.decode().split("\0")
    shutil.rmtree(stage, ignore_errors=True)
    for name in filter(None, names):
        if (ROOT / name).is_file():
            (stage / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, stage / name)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--torch", action="append", metavar="VERSION",
                        help="a torch version (2.6.0), or 'all' for scripts/torch_releases.txt "
                             f"(default: the oldest and the newest there, {RELEASES[0]} and {RELEASES[-1]})")
    parser.add_argument("--python", action="append", metavar="INTERPRETER",
                        help="a CPython to build a wheel for (default: the one running this script)")
    parser.add_argument("--out", type=Path, default=ROOT / "dist")
    parser.add_argument("--cache", type=Path, default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
                        / "torch_green_contexts" / "torch", help="where torch releases are unpacked")
    parser.add_argument("--work", type=Path, default=ROOT / "build" / "wheel", help="objects and staging")
    parser.add_argument("-j", "--jobs", type=int, default=int(os.environ.get("MAX_JOBS", "2")))
    parser.add_argument("--cuda-include", type=Path, metavar="DIR",
                        help="compile against the CUDA runtime headers in DIR instead of those of the CUDA release "
                             "each torch was built with (to check that a build does not depend on them)")
    parser.add_argument("--check-patches", action="store_true",
                        help="also check each build's undefined symbols against every other patch release of its "
                             "torch release on PyPI (downloads those too)")
    parser.add_argument("--sdist-only", action="store_true")
    args = parser.parse_args()
    versions = RELEASES if args.torch == ["all"] else (args.torch or [RELEASES[0], RELEASES[-1]])

    stage = args.work / "checkout"
    checkout_files(stage)
    sdist = build_meta("sdist", stage, args.out)
    print(f"sdist: {sdist}", flush=True)
    if args.sdist_only:
        return 0
    unpacked = args.work / "sdist"
    shutil.rmtree(unpacked, ignore_errors=True)
    with tarfile.open(sdist) as archive:
        archive.extractall(unpacked)
    (source,) = unpacked.iterdir()
    pure = build_meta("wheel", source, args.work / "pure")
    sources = runpy.run_path(str(source / "build_sources.py"))

    args.cache.mkdir(parents=True, exist_ok=True)
    for interpreter in args.python or [sys.executable]:
        python = cc.Python.of(interpreter)
        offered = torch_tree.torch_versions_for(python.version)
        chosen = [v for v in versions if v in offered]
        for version in versions:
            if version not in offered:
                print(f"CPython {python.version}: torch {version} has no wheel for it on PyPI; left out", flush=True)
        if not chosen:
            raise SystemExit(f"CPython {python.version}: none of torch {', '.join(versions)} has a wheel for it")
        trees = [torch_tree.fetch(version, python.version, args.cache) for version in chosen]
        if args.cuda_include:
            trees = [dataclasses.replace(tree, cuda_include=args.cuda_include.resolve()) for tree in trees]
        plans = [cc.plan(source, args.work / "obj", tree, python, sources) for tree in trees]
        print(f"CPython {python.version}: compiling for torch {', '.join(t.version for t in trees)} "
              f"(-j{args.jobs})", flush=True)
        cc.run_jobs([job for jobs, _ in plans for job in jobs], args.jobs)
        modules = []
        needs: dict[str, tuple[int, ...]] = {}
        for tree, (_, objects) in zip(trees, plans):
            name = f"torch-{tree.release}/_C{python.ext_suffix}"
            output = args.work / "modules" / python.tag / name
            cc.link(objects, tree, output, sources)
            if args.check_patches:
                for other in sorted(v for v in offered if v != tree.version.split("+")[0] and v.startswith(tree.release + ".")):
                    cc.check_symbols(output, torch_tree.fetch(other, python.version, args.cache))
                    print(f"  the build for torch {tree.version} links against torch {other}'s libraries", flush=True)
            for key, value in cc.required_versions(output).items():
                needs[key] = max(needs.get(key, ()), value)
            modules.append(pack.Module(tree.version, tree.cuda, tree.cxx11_abi, output, name))
        platform = pack.platform_tag(needs)
        wheel = pack.write_wheel(pure, modules, python.tag, platform, args.out)
        newest = ", ".join(f"{k}_{'.'.join(map(str, v))}" for k, v in sorted(needs.items()))
        print(f"wheel: {wheel} ({wheel.stat().st_size / 1e6:.1f} MB; torch "
              f"{', '.join(m.torch for m in modules)}; needs {newest})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
