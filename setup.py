"""Build of torch_green_contexts: one C++ extension against the installed PyTorch.

Needs PyTorch and the CUDA runtime headers (a CUDA toolkit, or the nvidia-cuda-runtime wheel
that PyTorch's CUDA builds install); needs neither nvcc nor a GPU, and never links libcuda.
Build with `pip install --no-build-isolation .` (or `-e .` in a checkout) so that it compiles
against the torch you run: without --no-build-isolation pip would compile against a torch it
downloads into a temporary environment. A source distribution installs the same way:
`pip install --no-build-isolation torch_green_contexts-VERSION.tar.gz`.

scripts/build_wheel.py builds the wheels that hold one build per torch release; it runs this file
with TORCH_GREEN_CONTEXTS_PYTHON_ONLY=1 for the source distribution and the parts of the wheel
that are not compiled (no extension, no torch needed).
"""

import glob
import os
import runpy
import sys

import setuptools
from setuptools import setup

HERE = os.path.dirname(os.path.abspath(__file__))
# SPDX license expressions (pyproject's `license = "BSD-3-Clause"`) need setuptools 77.
if tuple(int(p) for p in setuptools.__version__.split(".")[:2] if p.isdigit()) < (77, 0):
    sys.exit(
        f"torch_green_contexts needs setuptools 77 or newer to build; setuptools {setuptools.__version__} "
        "is installed: pip install 'setuptools>=77'"
    )
SOURCES = runpy.run_path(os.path.join(HERE, "build_sources.py"))
BENCHMARKS_ENV = "TORCH_GREEN_CONTEXTS_BENCHMARKS"
BENCHMARKS = os.environ.get(BENCHMARKS_ENV) == "1"
# The stubs of the compiled modules that are built (the benchmark module only when asked for;
# the source distribution holds both, and setuptools would install every file it holds).
PACKAGE_DATA = dict(
    package_data={"torch_green_contexts": ["py.typed", "_C.pyi"] + (["_bench.pyi"] if BENCHMARKS else [])},
    exclude_package_data={} if BENCHMARKS else {"torch_green_contexts": ["_bench.pyi"]},
)

if os.environ.get("TORCH_GREEN_CONTEXTS_PYTHON_ONLY") == "1":
    setup(**PACKAGE_DATA)
    sys.exit(0)

try:
    import torch
    from torch.utils import cpp_extension
except ImportError:  # pragma: no cover - only without torch
    sys.exit(
        "torch_green_contexts builds against the installed PyTorch: install torch first, "
        "then run `pip install --no-build-isolation .` (a wheel from scripts/build_wheel.py needs no build)"
    )

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


COMMON = dict(
    include_dirs=SOURCES["INCLUDE_DIRS"] + cuda_include_dirs(),
    extra_compile_args=SOURCES["COMPILE_ARGS"],
    extra_link_args=SOURCES["LINK_ARGS"],
)

extensions = [cpp_extension.CppExtension(
    name="torch_green_contexts._C",
    sources=SOURCES["CORE_SOURCES"] + SOURCES["TORCH_SOURCES"] + SOURCES["BINDING_SOURCES"],
    libraries=SOURCES["TORCH_LIBRARIES"] + SOURCES["SYSTEM_LIBRARIES"],
    **COMMON,
)]
# The raw driver calls the benchmarks compare against (benchmarks/), in a module of their own
# that installs only when asked for: TORCH_GREEN_CONTEXTS_BENCHMARKS=1 pip install ...
if BENCHMARKS:
    extensions.append(cpp_extension.CppExtension(
        name="torch_green_contexts._bench",
        sources=SOURCES["BENCH_SOURCES"],
        libraries=SOURCES["SYSTEM_LIBRARIES"],
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
    **PACKAGE_DATA,
    ext_modules=extensions,
    cmdclass={"build_ext": BuildExtension},
)
