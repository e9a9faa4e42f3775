"""Benchmarks of torch_green_contexts against what users would use instead.

Run on a GPU machine with ``python -m benchmarks [--out DIR]``: it prints a table and writes
``results.json``, ``table.md``, ``fidelity.png`` and ``latency.png`` to DIR.
"""
