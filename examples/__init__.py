"""Examples of torch_green_contexts (``python -m examples.pd``; ``python examples/serving.py``)."""
