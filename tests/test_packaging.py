"""Packaging: the torch-version check at import, the source distribution installed into a fresh
venv (compiled against the torch there), the installed multi-torch wheel (scripts/test_wheel.sh
sets TGC_INSTALLED_WHEEL=1), and the benchmark module's sources."""

import os
import pathlib
import runpy
import shutil
import subprocess
import sys
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_build_records_the_torch_it_was_built_against():
    import torch

    from torch_green_contexts import _native
    from torch_green_contexts._torch_version import torch_release

    if _native.LOADED_FROM == "wheel":  # the build for the release, whichever patch and CUDA
        assert torch_release(_native.BUILT_AGAINST_TORCH) == torch_release(torch.__version__)
    else:
        assert _native.LOADED_FROM == "source" and _native.BUILT_AGAINST_TORCH == torch.__version__


def _import_under(version: str) -> str:
    """The ImportError message of importing the package while torch claims to be `version`."""
    code = textwrap.dedent(
        f"""
        import torch
        torch.__version__ = {version!r}
        try:
            import torch_green_contexts
        except ImportError as error:
            print(error)
        else:
            print("imported")
        """
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_another_torch_gets_a_message_to_rebuild():
    import torch

    from torch_green_contexts import _builds, _native

    message = _import_under("99.0.0+other")
    if _native.LOADED_FROM == "wheel":
        held = _builds.read_manifest()
        assert held is not None
        assert f"holds builds for torch {held.releases()}" in message, message
        assert "99.0.0+other is installed, which none of them serves" in message, message
        assert "pip install --no-build-isolation --no-binary torch_green_contexts" in message, message
    else:
        assert f"built against torch {torch.__version__}" in message, message
        assert "99.0.0+other is installed" in message and "rebuild" in message, message


@pytest.mark.skipif(not os.environ.get("TGC_INSTALLED_WHEEL"), reason="scripts/test_wheel.sh sets TGC_INSTALLED_WHEEL=1")
def test_the_installed_wheel_is_what_runs():
    import torch

    import torch_green_contexts
    from torch_green_contexts import _builds, _native
    from torch_green_contexts._torch_version import torch_release

    package = pathlib.Path(torch_green_contexts.__file__).resolve().parent
    assert pathlib.Path(sys.prefix).resolve() in package.parents, package
    assert _native.LOADED_FROM == "wheel"
    module = pathlib.Path(_native._C.__file__).resolve()
    assert module.parent.parent == package / "_torch_builds", module
    held = _builds.read_manifest()
    assert held is not None and held.python == _builds.running_python()
    (build,) = [b for b in held.builds if b.path.resolve() == module]
    assert build.release == torch_release(torch.__version__) and build.torch == _native.BUILT_AGAINST_TORCH
    for compiler in ("cc", "c++", "gcc", "g++", "clang", "clang++", "nvcc"):
        assert shutil.which(compiler) is None, f"{compiler} is on PATH"


def test_a_torch_older_than_the_minimum_is_named():
    message = _import_under("2.5.1+cu124")
    assert "needs torch 2.6 or newer" in message and "torch 2.5.1+cu124 is installed" in message, message


@pytest.mark.skipif(not os.environ.get("TGC_TEST_WHEEL"), reason="set TGC_TEST_WHEEL=1 (scripts/run_tests.sh does)")
def test_the_source_distribution_compiles_against_the_installed_torch(tmp_path):
    import torch

    subprocess.run([sys.executable, str(ROOT / "scripts" / "build_wheel.py"), "--sdist-only", "--out", str(tmp_path),
                    "--work", str(tmp_path / "work")], check=True, timeout=600)
    (sdist,) = tmp_path.glob("torch_green_contexts-*.tar.gz")
    venv = tmp_path / "venv"
    # --system-site-packages: the torch of this interpreter, which the build must compile against.
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", "setuptools>=77"], check=True, timeout=600)
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps", str(sdist)],
                   check=True, timeout=1800, env={**os.environ, "MAX_JOBS": os.environ.get("MAX_JOBS", "2")})
    code = ("import torch_green_contexts as t, torch_green_contexts._native as n, torch; "
            "import torch_green_contexts.compat.flashinfer, torch_green_contexts.compat.sglang; "
            "import torch_green_contexts.sizing, torch_green_contexts.policy, torch_green_contexts.pd_policy; "
            "assert n.LOADED_FROM == 'source' and n.BUILT_AGAINST_TORCH == torch.__version__; "
            "assert 'site-packages' in t.__file__, t.__file__; "
            "print(t.__version__, t._C.installed_driver_version() >= 0, n.BUILT_AGAINST_TORCH)")
    result = subprocess.run([str(python), "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0.1.0", "True", torch.__version__]
    site = pathlib.Path(subprocess.run([str(python), "-c", "import torch_green_contexts as t; print(t.__file__)"],
                                       capture_output=True, text=True, cwd=tmp_path, check=True).stdout.strip()).parent
    installed = {p.name for p in site.iterdir()}
    assert "_C.pyi" in installed and "py.typed" in installed and "_bench.pyi" not in installed, installed
    module = next(site.glob("_C*.so"))
    assert module.stat().st_size < 8_000_000, f"{module}: {module.stat().st_size} bytes (debug information?)"
    dist_info = next(site.parent.glob("torch_green_contexts-*.dist-info"))
    metadata = (dist_info / "METADATA").read_text()
    for line in ("Author: The torch_green_contexts developers", "Provides-Extra: examples", "License-Expression: BSD-3-Clause",
                 "Requires-Dist: matplotlib; extra == \"examples\"", "Requires-Dist: torch>=2.6"):
        assert line in metadata, line
    assert "one wheel holds a build for every torch release from 2.6" in metadata
    assert (dist_info / "licenses" / "LICENSE").is_file()


def test_an_older_setuptools_is_named_before_the_build():
    code = ("import setuptools, runpy, sys; setuptools.__version__ = '76.1.0'; "
            f"sys.argv = ['setup.py', '--version']; runpy.run_path({str(ROOT / 'setup.py')!r}, run_name='__main__')")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert result.returncode != 0
    assert "needs setuptools 77 or newer to build; setuptools 76.1.0 is installed" in result.stderr, result.stderr


def test_every_subpackage_is_listed_for_the_wheel():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    listed = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    import torch_green_contexts  # the checkout's package, or the installed one when the tests run against a wheel

    package = pathlib.Path(torch_green_contexts.__file__).resolve().parent
    found = sorted(".".join(init.parent.relative_to(package.parent).parts) for init in package.rglob("__init__.py"))
    assert sorted(listed) == found


def _bench_core_sources() -> list[str]:
    """build_sources.py's BENCH_CORE_SOURCES (what setup.py links the benchmark module from)."""
    return list(runpy.run_path(str(ROOT / "build_sources.py"))["BENCH_CORE_SOURCES"])


def test_the_benchmark_baseline_links_with_the_core_sources_setup_py_gives_it(tmp_path):
    compiler = shutil.which("g++") or shutil.which("c++")
    if compiler is None:
        pytest.skip("no C++ compiler")
    sources = [str(ROOT / "csrc" / "core" / name) for name in _bench_core_sources()]
    sources.append(str(ROOT / "csrc" / "bench" / "driver_baseline.cpp"))
    result = subprocess.run([compiler, "-std=c++17", "-shared", "-fPIC", "-O0", "-Wl,--no-undefined",
                             f"-I{ROOT / 'csrc'}", *sources, "-ldl", "-lpthread", "-o", str(tmp_path / "bench.so")],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
