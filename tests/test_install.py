"""install(): torch.cuda.green_contexts resolves to this package (no GPU needed)."""

import subprocess
import sys
import textwrap


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=300)


def test_install_and_uninstall():
    result = _run(
        """
        import sys, torch
        import torch_green_contexts as tgc
        had_module = "torch.cuda.green_contexts" in sys.modules or hasattr(torch.cuda, "green_contexts")
        assert not tgc.installed()
        tgc.install()
        tgc.install()  # twice is the same as once
        assert tgc.installed()
        from torch.cuda.green_contexts import GreenContext, SMPartition
        import torch.cuda.green_contexts as module
        assert GreenContext is tgc.GreenContext and SMPartition is tgc.SMPartition
        assert torch.cuda.green_contexts.GreenContext is tgc.GreenContext
        assert module.SMPartition is tgc.SMPartition
        tgc.uninstall()
        assert not tgc.installed()
        module = sys.modules.get("torch.cuda.green_contexts")
        assert module is None or getattr(module, "GreenContext", None) is not tgc.GreenContext
        print("ok")
        """
    )
    assert result.stdout.strip() == "ok", result.stdout + result.stderr


NAMES = ("GreenContext", "SMPartition", "get_num_locality_domains", "is_localization_supported")


def test_install_covers_the_whole_module():
    result = _run(
        f"""
        import sys, types, torch
        import torch_green_contexts as tgc
        names = {NAMES!r}
        try:
            import torch.cuda.green_contexts as module
            theirs = {{name: getattr(module, name, None) for name in names}}
        except Exception:
            theirs = None
        tgc.install()
        assert tgc.installed()
        module = sys.modules["torch.cuda.green_contexts"]
        for name in names:
            assert getattr(module, name) is getattr(tgc, name), name
        from torch.cuda.green_contexts import get_num_locality_domains, is_localization_supported
        assert get_num_locality_domains is tgc.get_num_locality_domains
        assert is_localization_supported is tgc.is_localization_supported
        if theirs is None or theirs["GreenContext"] is None:
            assert module.__all__ == list(names)
        # One name put back by someone else: not installed any more; install() puts it right.
        original = module.is_localization_supported
        module.is_localization_supported = lambda device_id=None: False
        assert not tgc.installed()
        tgc.install()
        assert tgc.installed() and module.is_localization_supported is original
        tgc.uninstall()
        assert not tgc.installed()
        if theirs is not None:
            module = sys.modules["torch.cuda.green_contexts"]
            for name in names:
                assert getattr(module, name, None) is theirs[name], name
        print("ok")
        """
    )
    assert result.stdout.strip() == "ok", result.stdout + result.stderr


def test_install_without_torchs_module():
    """A torch whose module is missing (or cannot load): install() provides all of it."""
    result = _run(
        f"""
        import sys, torch, torch.cuda
        sys.modules["torch.cuda.green_contexts"] = None  # import fails, as where it is absent
        if hasattr(torch.cuda, "green_contexts"):
            delattr(torch.cuda, "green_contexts")
        import torch_green_contexts as tgc
        tgc.install()
        import torch.cuda.green_contexts as module
        assert module.__all__ == list({NAMES!r}) and tgc.installed()
        assert torch.cuda.green_contexts.get_num_locality_domains is tgc.get_num_locality_domains
        tgc.uninstall()
        assert "torch.cuda.green_contexts" not in sys.modules and not tgc.installed()
        print("ok")
        """
    )
    assert result.stdout.strip() == "ok", result.stdout + result.stderr


def test_runner_installs_before_the_program(tmp_path):
    (tmp_path / "user_helper.py").write_text("VALUE = 7\n")
    script = tmp_path / "user_program.py"
    script.write_text(textwrap.dedent(
        """
        import sys
        import user_helper  # a module beside the script, as `python script.py` would find it
        assert user_helper.VALUE == 7
        from torch.cuda.green_contexts import GreenContext, SMPartition
        import torch_green_contexts
        assert GreenContext is torch_green_contexts.GreenContext
        assert SMPartition is torch_green_contexts.SMPartition
        print("args", sys.argv[1:], __name__)
        """
    ))
    result = subprocess.run([sys.executable, "-m", "torch_green_contexts.run", str(script), "a", "--b"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "args ['a', '--b'] __main__"
    usage = subprocess.run([sys.executable, "-m", "torch_green_contexts.run"], capture_output=True, text=True,
                           timeout=300)
    assert usage.returncode == 2 and "python -m torch_green_contexts.run" in usage.stdout


def test_runner_names_a_missing_program_in_one_line(tmp_path):
    for args, message in (([str(tmp_path / "missing.py")], "cannot open"), (["-m", "no_such_module_here"],
                                                                          "no module named 'no_such_module_here'")):
        result = subprocess.run([sys.executable, "-m", "torch_green_contexts.run", *args], capture_output=True,
                                text=True, timeout=300)
        assert result.returncode == 2
        assert message in result.stderr and "Traceback" not in result.stderr, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1


def test_gpu_check_help_installs_nothing():
    import pathlib

    script = pathlib.Path(__file__).resolve().parent.parent / "scripts" / "gpu_check.sh"
    for args in (["--help"], ["--pd", "-h"]):
        result = subprocess.run(["bash", str(script), *args], capture_output=True, text=True, timeout=60,
                                env={"PATH": "/usr/bin:/bin", "OUT": "/nonexistent/should-not-be-made"})
        assert result.returncode == 0, result.stderr
        assert "bash scripts/gpu_check.sh [--bench]" in result.stdout and "build ok" not in result.stdout
