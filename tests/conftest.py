import os

import pytest

# tests/sim runs against the simulated driver in processes of its own, which
# tests/test_simulated_driver.py starts; other runs leave it out.
collect_ignore = [] if os.environ.get("TORCH_GREEN_CONTEXTS_DRIVER_LIBRARY") else ["sim"]


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU and driver")
