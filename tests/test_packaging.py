"""Packaging: the torch-version check at import, a wheel that installs in a fresh venv, and the
benchmark module's sources."""

import ast
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_build_records_the_torch_it_was_built_against():
    import torch

    from torch_green_contexts import _native

    assert _native.BUILT_AGAINST_TORCH == torch.__version__


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

    message = _import_under("99.0.0+other")
    assert f"built against torch {torch.__version__}" in message, message
    assert "99.0.0+other is installed" in message and "rebuild" in message, message


def test_a_torch_older_than_the_minimum_is_named():
    message = _import_under("2.5.1+cu124")
    assert "needs torch 2.6 or newer" in message and "torch 2.5.1+cu124 is installed" in message, message


@pytest.mark.skipif(not os.environ.get("TGC_TEST_WHEEL"), reason="set TGC_TEST_WHEEL=1 (scripts/run_tests.sh does)")
def test_wheel_installs_and_imports_in_a_fresh_venv(tmp_path):
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-q",
                    "-w", str(wheels), str(ROOT)], check=True, timeout=1800)
    (wheel,) = wheels.glob("torch_green_contexts-*.whl")
    venv = tmp_path / "venv"
    # --system-site-packages: the same torch as the build, as the wheel requires.
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", str(wheel)], check=True,
                   timeout=600)
    code = ("import torch_green_contexts as t, torch_green_contexts._native as n, torch; "
            "import torch_green_contexts.compat.flashinfer, torch_green_contexts.compat.sglang; "
            "import torch_green_contexts.sizing, torch_green_contexts.policy, torch_green_contexts.pd_policy; "
            "assert n.BUILT_AGAINST_TORCH == torch.__version__; "
            "assert 'site-packages' in t.__file__, t.__file__; "
            "print(t.__version__, t._C.installed_driver_version() >= 0)")
    result = subprocess.run([str(python), "-c", code], capture_output=True, text=True, cwd=tmp_path,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0.1.0", "True"]
    files = _wheel_files(wheel)
    assert any(name.endswith("py.typed") for name in files)
    assert "torch_green_contexts/compat/flashinfer.py" in files and "torch_green_contexts/compat/sglang.py" in files
    assert "torch_green_contexts/_sizing/__init__.py" in files and "torch_green_contexts/_sizing/_sweep.py" in files
    assert any(name.endswith(".dist-info/licenses/LICENSE") or name.endswith(".dist-info/LICENSE") for name in files)
    metadata = _wheel_text(wheel, "METADATA")
    for line in ("Author: The torch_green_contexts developers", "Provides-Extra: examples",
                 "Requires-Dist: matplotlib; extra == \"examples\"", "Requires-Dist: torch>=2.6"):
        assert line in metadata, line
    assert "imports only under the torch it was compiled against" in metadata


def test_every_subpackage_is_listed_for_the_wheel():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    listed = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    found = sorted(".".join(init.parent.relative_to(ROOT).parts)
                   for init in (ROOT / "torch_green_contexts").rglob("__init__.py"))
    assert sorted(listed) == found


def _wheel_text(wheel, name):
    import zipfile

    with zipfile.ZipFile(wheel) as archive:
        (path,) = [p for p in archive.namelist() if p.endswith(".dist-info/" + name)]
        return archive.read(path).decode()


def _wheel_files(wheel):
    import zipfile

    with zipfile.ZipFile(wheel) as archive:
        return archive.namelist()


def _bench_core_sources() -> list[str]:
    """setup.py's BENCH_CORE_SOURCES, read without running setup.py."""
    tree = ast.parse((ROOT / "setup.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "BENCH_CORE_SOURCES" for t in node.targets):
            return list(ast.literal_eval(node.value))
    raise AssertionError("setup.py defines no BENCH_CORE_SOURCES")


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
