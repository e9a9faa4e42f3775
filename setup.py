"""Build of torch_green_contexts: one C++ extension against the installed PyTorch.

Needs PyTorch and the CUDA runtime headers (a CUDA toolkit, or the nvidia-cuda-runtime wheel
that PyTorch's CUDA builds install); needs neither nvcc nor a GPU, and never links libcuda.
Build with `pip install --no-build-isolation -e .` so that it compiles against the torch
you run.
"""

import glob
import os
import runpy
import sys

from setuptools import setup

try:
    import torch
    from torch.utils import cpp_extension
except ImportError:  # pragma: no cover - only without torch
    sys.exit(
        "torch_green_contexts builds against the installed PyTorch: install torch first, "
        "then run `pip install --no-build-isolation -e .`"
    )

HERE = os.path.dirname(os.path.abspath(__file__))
# The minimum torch, spelled once (a plain file of the package, loaded without importing it).
try:
    runpy.run_path(os.path.join(HERE, "torch_green_contexts", "_torch_version.py"))["check_torch"](torch.__version__)
except ImportError as error:
    sys.exit(str(error))
if torch.version.cuda is None:
    sys.exit(
        f"torch_green_contexts needs a CUDA build of PyTorch; torch {torch.__version__} here has no CUDA "
        "(a CPU-only or ROCm build): install a CUDA build of torch (see pytorch.org), then build again"
    )


def cuda_include_dirs():
    """Directories holding cuda_runtime_api.h (c10/cuda's headers include it)."""
    candidates = []
    for env in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(env):
            candidates.append(os.path.join(os.environ[env], "include"))
    if cpp_extension.CUDA_HOME:
        candidates.append(os.path.join(cpp_extension.CUDA_HOME, "include"))
    for site in sys.path:
        candidates.extend(sorted(glob.glob(os.path.join(site, "nvidia", "*", "include"))))
    candidates.append("/usr/local/cuda/include")
    for path in candidates:
        if os.path.isfile(os.path.join(path, "cuda_runtime_api.h")):
            return [path]
    sys.exit(
        "torch_green_contexts: no CUDA runtime headers (cuda_runtime_api.h) found; install a "
        "CUDA toolkit or set CUDA_HOME"
    )


CORE_SOURCES = sorted(glob.glob(os.path.join("csrc", "core", "*.cpp")))
BINDING_SOURCES = sorted(p for p in glob.glob(os.path.join("csrc", "python", "*.cpp")) if not p.endswith("bench.cpp"))
COMMON = dict(
    include_dirs=[os.path.join(HERE, "csrc")] + cuda_include_dirs(),
    extra_compile_args=["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"],
)

extensions = [cpp_extension.CppExtension(
    name="torch_green_contexts._C",
    sources=CORE_SOURCES + ["csrc/torch/torch_bridge.cpp"] + BINDING_SOURCES,
    libraries=["c10_cuda", "dl"],
    **COMMON,
)]
# The raw driver calls the benchmarks compare against (benchmarks/), in a module of their own
# that installs only when asked for: TORCH_GREEN_CONTEXTS_BENCHMARKS=1 pip install ...
BENCHMARKS_ENV = "TORCH_GREEN_CONTEXTS_BENCHMARKS"
# The core sources csrc/bench links; tests/test_packaging.py links them without a GPU.
BENCH_CORE_SOURCES = ("driver_api.cpp", "errors.cpp", "warnings.cpp")
if os.environ.get(BENCHMARKS_ENV) == "1":
    extensions.append(cpp_extension.CppExtension(
        name="torch_green_contexts._bench",
        sources=[os.path.join("csrc", "core", f) for f in BENCH_CORE_SOURCES]
        + ["csrc/bench/driver_baseline.cpp", "csrc/python/bench.cpp"],
        libraries=["dl"],
        **COMMON,
    ))

class BuildExtension(cpp_extension.BuildExtension):
    """Compiles the extension and records the torch it was compiled against, for the check at
    import (a compiled extension only works with the torch it was built against)."""

    def run(self):
        text = (
            '"""Written when the extension was compiled (setup.py build_ext)."""\n\n'
            f"TORCH_VERSION = {torch.__version__!r}\n"
            f"TORCH_CUDA_VERSION = {torch.version.cuda!r}\n"
        )
        targets = [os.path.join(HERE, "torch_green_contexts", "_build_info.py")]
        if not self.inplace:
            targets.append(os.path.join(self.build_lib, "torch_green_contexts", "_build_info.py"))
        for path in targets:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as build_info:
                build_info.write(text)
        super().run()


setup(
    ext_modules=extensions,
    cmdclass={"build_ext": BuildExtension},
)
