"""A simulated GPU behind the engine's device interface, calibrated on a GPU: every scheduler's
real scheduling code runs on the CPU against measured costs (``python -m examples.pd.simulate``)."""
