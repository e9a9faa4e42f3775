"""What the compiled core is made of, for both builds: setup.py (one build against the installed
torch) and scripts/build_wheel.py (one build per torch release, each against that release's
headers and libraries). Plain data, loaded with runpy, so that neither needs the other's tools.
"""

import glob
import os

HERE = os.path.dirname(os.path.abspath(__file__))

# The driver-facing core: includes neither torch nor Python, so one compilation serves every
# build that uses the same C++ standard and std::string ABI.
CORE_SOURCES = sorted(os.path.relpath(p, HERE) for p in glob.glob(os.path.join(HERE, "csrc", "core", "*.cpp")))
# The layer between the core and torch (c10's CUDA streams and devices).
TORCH_SOURCES = [os.path.join("csrc", "torch", "torch_bridge.cpp")]
# The pybind11 bindings of torch_green_contexts._C (bench.cpp belongs to the _bench module).
BINDING_SOURCES = sorted(
    os.path.relpath(p, HERE) for p in glob.glob(os.path.join(HERE, "csrc", "python", "*.cpp"))
    if not p.endswith("bench.cpp")
)
# The core sources the optional benchmark module (_bench) links; tests/test_packaging.py links
# them without a GPU.
BENCH_CORE_SOURCES = ("driver_api.cpp", "errors.cpp", "warnings.cpp")
BENCH_SOURCES = [os.path.join("csrc", "core", f) for f in BENCH_CORE_SOURCES] + [
    os.path.join("csrc", "bench", "driver_baseline.cpp"), os.path.join("csrc", "python", "bench.cpp")]

INCLUDE_DIRS = [os.path.join(HERE, "csrc")]
# -g0: no debug information (the Python that builds may ask for -g); TORCH_GREEN_CONTEXTS_DEBUG=1
# keeps it, and keeps the symbol table that the link strips otherwise.
DEBUG = os.environ.get("TORCH_GREEN_CONTEXTS_DEBUG") == "1"
COMPILE_ARGS = ["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"] + (["-g"] if DEBUG else ["-g0"])
LINK_ARGS = [] if DEBUG else ["-s"]
# c10 and c10_cuda are all the core needs of torch; the CUDA runtime comes with them.
TORCH_LIBRARIES = ["c10_cuda", "c10"]
SYSTEM_LIBRARIES = ["dl"]
