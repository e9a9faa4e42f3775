"""The minimum torch: parsed from version strings, checked at import and at build."""

import pathlib

import pytest

from torch_green_contexts._torch_version import MINIMUM_TORCH, check_torch, torch_release

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("version, release", [("2.15.0+cu132", (2, 15)), ("2.6.0", (2, 6)),
                                              ("2.7.0a0+git1234abc", (2, 7)), ("10.0.1", (10, 0))])
def test_release_of_version_strings(version, release):
    assert torch_release(version) == release


@pytest.mark.parametrize("version", ["2.6.0", "2.6.0+cu124", "2.11.0+cu130", "3.0.0"])
def test_supported_versions_pass(version):
    check_torch(version)


@pytest.mark.parametrize("version", ["2.5.1", "2.5.1+cu121", "2.1.0", "1.13.1"])
def test_older_versions_are_a_clear_import_error(version):
    with pytest.raises(ImportError, match=rf"needs torch 2\.6 or newer .*torch {version.replace('+', '[+]')} is installed"):
        check_torch(version)


def test_not_a_version():
    with pytest.raises(ValueError, match="not a torch version"):
        torch_release("nightly")


def test_the_package_metadata_declares_the_same_minimum():
    text = (ROOT / "pyproject.toml").read_text()
    assert f'"torch>={MINIMUM_TORCH[0]}.{MINIMUM_TORCH[1]}"' in text


def test_ci_runs_the_declared_minimum():
    script = (ROOT / "scripts" / "run_tests.sh").read_text()
    assert f"OLDEST_TORCH={MINIMUM_TORCH[0]}.{MINIMUM_TORCH[1]}." in script


def test_the_wheel_builds_and_the_matrix_start_at_the_declared_minimum():
    releases = [line for line in (ROOT / "scripts" / "torch_releases.txt").read_text().splitlines()
                if line and not line.startswith("#")]
    assert torch_release(releases[0]) == MINIMUM_TORCH
    assert [torch_release(r) for r in releases] == sorted({torch_release(r) for r in releases})
    script = (ROOT / "scripts" / "run_tests.sh").read_text()
    assert f"OLDEST_TORCH={releases[0]}\n" in script


def test_ci_runs_the_oldest_declared_python():
    import re

    floor = re.search(r'requires-python = ">=(\d+\.\d+)"', (ROOT / "pyproject.toml").read_text()).group(1)
    assert f"OLDEST_PYTHON={floor}\n" in (ROOT / "scripts" / "run_tests.sh").read_text()
