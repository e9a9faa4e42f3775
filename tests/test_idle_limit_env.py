"""TORCH_GREEN_CONTEXTS_IDLE_LIMIT checked at import: a value the core refuses (not a whole
number, or past the largest size_t) warns when the package is imported, and the report command
flags it; making a context then raises the ValueError (tests/test_split_errors.py, against the
simulated driver). Each in a fresh interpreter: the variable is read once."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

VARIABLE = "TORCH_GREEN_CONTEXTS_IDLE_LIMIT"
BAD = ["abc", "-1", "4k", " 5", "1e3", "18446744073709551616", "99999999999999999999999"]
GOOD = ["", "0", "16", "18446744073709551615"]


def run(args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != VARIABLE}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env={**environment, **env},
                          timeout=300)


@pytest.mark.parametrize("value", BAD + GOOD)
def test_the_core_refuses_anything_but_a_whole_number_a_size_t_holds(value, monkeypatch):
    from torch_green_contexts import _C

    monkeypatch.setenv(VARIABLE, value)  # the check reads the variable each time
    if value in GOOD:
        _C.check_idle_limit_env()
    else:
        with pytest.raises(ValueError, match=rf"^{VARIABLE}={value!r} is not a number of idle green contexts to "
                                             r"keep: give a whole number from 0 to 18446744073709551615 \("):
            _C.check_idle_limit_env()


@pytest.mark.parametrize("value", ["abc", "99999999999999999999999"])
def test_import_warns_of_a_value_the_core_refuses(value):
    out = run(["-c", "import torch_green_contexts; print('imported')"], **{VARIABLE: value})
    assert out.returncode == 0 and out.stdout.strip() == "imported", out.stderr
    assert f"RuntimeWarning: {VARIABLE}={value!r} is not a number of idle green contexts to keep: give a whole " \
           f"number from 0 to 18446744073709551615" in out.stderr, out.stderr
    assert "Making a green context raises this ValueError until the variable is fixed or unset." in out.stderr


def test_import_fails_on_it_for_those_who_turn_the_warning_into_an_error():
    strict = run(["-W", "error::RuntimeWarning", "-c", "import torch_green_contexts"], **{VARIABLE: "abc"})
    assert strict.returncode != 0 and f"{VARIABLE}='abc' is not a number" in strict.stderr


@pytest.mark.parametrize("value", ["", "18446744073709551615"])
def test_import_is_silent_for_a_whole_number_or_nothing(value):
    out = run(["-W", "error::RuntimeWarning", "-c", "import torch_green_contexts as t; print(t._C.idle_context_limit())"],
              **{VARIABLE: value})
    assert out.returncode == 0 and out.stderr == "", out.stderr
    assert out.stdout.strip() == (value or "16")


def test_the_report_flags_a_bad_value_and_the_split_path():
    out = run(["-m", "torch_green_contexts", "--no-demo"],
              **{VARIABLE: "abc", "TORCH_GREEN_CONTEXTS_SPLIT_PATH": "fast"})
    assert out.returncode == 0, out.stderr
    assert (f"  PROBLEM: {VARIABLE}='abc' is not a number of idle green contexts to keep: give a whole number "
            f"from 0 to 18446744073709551615 (0 destroys contexts as they are dropped; unset, 16 are kept); every "
            f"new green context raises this ValueError\n") in out.stdout, out.stdout
    assert ("  PROBLEM: TORCH_GREEN_CONTEXTS_SPLIT_PATH='fast' is not a split path; allowed values: auto, native, "
            "emulated; every split raises this ValueError\n") in out.stdout, out.stdout
    fine = run(["-m", "torch_green_contexts", "--no-demo"], **{VARIABLE: "8"})
    assert fine.returncode == 0 and "PROBLEM" not in fine.stdout and f"  {VARIABLE}=8\n" in fine.stdout
