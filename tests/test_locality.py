"""get_num_locality_domains and is_localization_supported: torch 2.15's signatures, the
simulated 13.0 and 13.4 drivers, and the NVML answer used before CUDA is initialised."""

import ctypes
import inspect

import pytest
import torch

import torch_green_contexts as tgc
from torch_green_contexts import _nvml_locality

from ._sim import needs_sim, run_on_sim

POS = inspect.Parameter.POSITIONAL_OR_KEYWORD
FUNCTIONS = [(tgc.get_num_locality_domains, "int"), (tgc.is_localization_supported, "bool")]


@pytest.mark.parametrize("function, returns", FUNCTIONS, ids=lambda v: getattr(v, "__name__", v))
def test_signature(function, returns):
    parameters = [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]
    assert parameters == [("device_id", POS, None)]
    assert inspect.signature(function).return_annotation == returns
    assert function.__doc__


def _upstream():
    try:
        from torch.cuda import green_contexts
    except Exception:  # pragma: no cover - older torch
        return None
    return green_contexts if hasattr(green_contexts, "get_num_locality_domains") else None


@pytest.mark.skipif(_upstream() is None, reason="this torch's green_contexts has no locality-domain queries")
@pytest.mark.parametrize("function, returns", FUNCTIONS, ids=lambda v: getattr(v, "__name__", v))
def test_matches_upstream(function, returns):
    theirs = getattr(_upstream(), function.__name__)
    assert inspect.signature(function) == inspect.signature(theirs)
    assert function.__name__ in _upstream().__all__


@pytest.mark.skipif(tgc._C.installed_driver_version() != 0, reason="a CUDA driver is installed here")
def test_without_a_driver_the_software_cannot_say():
    assert tgc.get_num_locality_domains() == 1 and tgc.get_num_locality_domains(0) == 1
    assert tgc.is_localization_supported() is False and tgc.is_localization_supported(3) is False


# Against the simulated driver, each in a fresh interpreter: they ask before the driver is
# initialised and count its calls since the process began. tests/sim/test_locality.py has a
# bad device on every driver.
@needs_sim
def test_driver_13_0_cannot_say_and_makes_no_context():
    out = run_on_sim(
        """
        import torch, torch_green_contexts as tgc
        assert tgc.get_num_locality_domains() == 1 and tgc.is_localization_supported() is False
        assert not tgc._C.driver_initialized() and not torch.cuda.is_initialized()
        # A device index is checked against the machine (no NVML here: the driver is asked).
        assert tgc.get_num_locality_domains(0) == 1 and tgc.is_localization_supported(0) is False
        assert not torch.cuda.is_initialized() and calls("cuCtxPushCurrent") == 0
        assert calls("cuDevicePrimaryCtxGetState") == 0
        print("ok")
        """,
        13000,
    )
    assert out.strip() == "ok"


@needs_sim
@pytest.mark.parametrize("domains, supported", [(2, True), (1, False), (4, True)])
def test_driver_13_4_reports_the_count(domains, supported):
    out = run_on_sim(
        f"""
        import torch, torch_green_contexts as tgc


        # Before CUDA is initialised only NVML may be asked, and there is none here.
        error = raised(lambda: tgc.is_localization_supported())
        assert type(error) is RuntimeError and "initialise CUDA first" in str(error), error
        assert not tgc._C.driver_initialized()
        assert tgc.get_num_locality_domains(0) == {domains}
        # The count initialised the driver and made no context.
        assert tgc._C.driver_initialized() and not torch.cuda.is_initialized()
        assert calls("cuDevicePrimaryCtxGetState") == 0
        assert calls("cuCtxPushCurrent") == 0
        assert tgc.is_localization_supported(0) is {supported}
        assert tgc.is_localization_supported() is {supported}  # device 0: torch has not initialised CUDA
        assert type(raised(lambda: tgc.get_num_locality_domains(3))) is RuntimeError
        assert type(raised(lambda: tgc.is_localization_supported(3))) is RuntimeError
        assert type(raised(lambda: tgc.get_num_locality_domains(-1))) is RuntimeError
        assert type(raised(lambda: tgc.get_num_locality_domains(1.5))) is TypeError
        fail_next("cuDeviceGetAttribute", 999)
        error = raised(lambda: tgc.get_num_locality_domains(0))
        assert type(error) is tgc.DriverError and error.call == "cuDeviceGetAttribute", error
        print("ok")
        """,
        13040, TGC_SIM_LOCALITY_DOMAINS=str(domains),
    )
    assert out.strip() == "ok"


# ---- NVML, asked while CUDA is not initialised -------------------------------------------


class FakeNvml:
    """NVML's C calls as ctypes makes them: outputs through byref()."""

    def __init__(self, gpus, driver=b"580.65.06", init=0):
        self.gpus = gpus  # per GPU: (major, virtualization mode, MIG mode, NUMA result)
        self.driver = driver
        self.init = init
        self.shut_down = False

    def nvmlInit_v2(self):
        return self.init

    def nvmlShutdown(self):
        self.shut_down = True
        return 0

    def nvmlSystemGetDriverVersion(self, buffer, length):
        buffer.value = self.driver
        return 0

    def nvmlDeviceGetCount_v2(self, count):
        count._obj.value = len(self.gpus)
        return 0

    def nvmlDeviceGetHandleByIndex_v2(self, index, handle):
        handle._obj.value = 1000 + index
        return 0

    def _gpu(self, handle):
        return self.gpus[handle.value - 1000]

    def nvmlDeviceGetCudaComputeCapability(self, handle, major, minor):
        major._obj.value, minor._obj.value = self._gpu(handle)[0], 0
        return 0

    def nvmlDeviceGetVirtualizationMode(self, handle, mode):
        mode._obj.value = self._gpu(handle)[1]
        return 0

    def nvmlDeviceGetMigMode(self, handle, current, pending):
        current._obj.value = pending._obj.value = self._gpu(handle)[2]
        return 0

    def nvmlDeviceGetNumaNodeId(self, handle, node):
        return self._gpu(handle)[3]


BLACKWELL = (10, 0, 0, 3)  # one GPU of two domains: no vGPU, no MIG, not a NUMA node


@pytest.fixture
def nvml(monkeypatch):
    for name in list(__import__("os").environ):
        if name.startswith("CUDA_MPS_"):
            monkeypatch.delenv(name)
    monkeypatch.setattr(_nvml_locality, "MPS_PIPE_DIRECTORIES", ())
    monkeypatch.setattr(torch.cuda, "_device_count_nvml", lambda: 2, raising=False)
    monkeypatch.setattr(torch.cuda, "_parse_visible_devices", lambda: [0, 1], raising=False)

    def use(fake):
        monkeypatch.setattr(_nvml_locality, "_load", lambda: fake)
        return fake

    return use


@pytest.mark.parametrize(
    "gpus, driver, expected",
    [
        ([BLACKWELL, BLACKWELL], b"580.65.06", True),
        ([(9, 0, 0, 3), (9, 0, 0, 3)], b"580.65.06", False),  # Hopper: one domain
        ([(12, 0, 0, 3)], b"590.1", False),
        ([BLACKWELL, BLACKWELL], b"575.57.08", False),  # a driver branch without domains
        ([BLACKWELL, BLACKWELL], b"r580", None),
        ([BLACKWELL, (9, 0, 0, 3)], b"580.65.06", None),  # GPUs disagree: CUDA must say
        ([(10, 2, 0, 3)], b"580.65.06", False),  # vGPU
        ([(10, 1, 0, 3)], b"580.65.06", None),  # pass-through
        ([(10, 0, 1, 3)], b"580.65.06", None),  # MIG
        ([(10, 0, 0, 0)], b"580.65.06", None),  # a NUMA node
        ([(11, 0, 0, 3)], b"580.65.06", None),  # not known
    ],
)
def test_nvml_answers(nvml, gpus, driver, expected):
    fake = nvml(FakeNvml(gpus, driver))
    assert _nvml_locality.localization_support(0) is expected
    assert fake.shut_down


def test_nvml_cannot_say(nvml, monkeypatch):
    nvml(FakeNvml([BLACKWELL], init=1))
    assert _nvml_locality.localization_support(0) is None
    nvml(FakeNvml([BLACKWELL]))
    assert _nvml_locality.localization_support(2) is None  # beyond NVML's device count
    monkeypatch.setenv("CUDA_MPS_PIPE_DIRECTORY", "/tmp/mps")
    assert _nvml_locality.localization_support(0) is None
    monkeypatch.delenv("CUDA_MPS_PIPE_DIRECTORY")

    def missing():
        raise OSError("libnvidia-ml.so.1: cannot open shared object file")

    monkeypatch.setattr(_nvml_locality, "_load", missing)
    assert _nvml_locality.localization_support(0) is None


def test_nvml_with_gpus_named_by_uuid_asks_only_that_gpu(nvml, monkeypatch):
    monkeypatch.setattr(torch.cuda, "_parse_visible_devices", lambda: ["GPU-aaaa", "GPU-bbbb"], raising=False)
    monkeypatch.setattr(torch.cuda, "_get_nvml_device_index", lambda device: 1, raising=False)
    nvml(FakeNvml([(9, 0, 0, 3), BLACKWELL]))
    assert _nvml_locality.localization_support(0) is True


def test_nvml_fake_speaks_ctypes():
    value = ctypes.c_uint()
    FakeNvml([BLACKWELL]).nvmlDeviceGetCount_v2(ctypes.byref(value))
    assert value.value == 1


@needs_sim
def test_a_device_index_nvml_cannot_count_is_checked_by_the_driver():
    out = run_on_sim(
        """
        import torch, torch_green_contexts as tgc
        assert tgc.is_localization_supported(0) is True  # no NVML here: the driver checked device 0
        assert tgc._C.driver_initialized() and not torch.cuda.is_initialized()
        assert calls("cuCtxPushCurrent") == 0
        print("ok")
        """,
        13040, TGC_SIM_LOCALITY_DOMAINS="2",
    )
    assert out.strip() == "ok"
