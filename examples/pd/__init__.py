"""A prefill/decode LLM engine on one GPU, with four schedulers and goodput figures: run
``python -m examples.pd --help`` from the repository root (the docstring of ``__main__``)."""
