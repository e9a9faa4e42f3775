"""Prefill and decode of an LLM-shaped engine on one GPU: schedulers on one trace, goodput under
two metrics.

Run from the repository root (needs a CUDA GPU; nothing is downloaded):

    python -m examples.pd --quick          # smoke run: 4 layers, short runs, 2 rates, one seed
    python -m examples.pd                  # the sweep: 32 layers, both seeds, both metrics
                                           # (about 165 runs, some 50 min on an H200; it prints
                                           # its own estimate first; --time-budget-s and --resume
                                           # split it into shorter calls)
    python -m examples.pd --layers 16 --rates 4,8,12 --schedulers chunked,pd-overlap --admission spf

The engine is Llama-3-8B-shaped (hidden 4096, 32 query and 8 KV heads of 128, SwiGLU 14336,
RMSNorm, rotary; random bf16 weights) with a KV cache of preallocated slots. A seeded trace of
Poisson arrivals (--workload: today, chat or long-prompt) is replayed in real time by each
scheduler, with the same KV slots, admission order, SLOs and a host that waits for every decode
step:

  chunked         chunked prefill as vLLM and SGLang run it by default: each iteration is one
                  forward pass over every decoding request's token and prompt chunks up to a token
                  budget (--budgets; the best per metric is reported). Decode-only iterations
                  replay the decode graphs, mixed ones a graph per token bucket.
  streams         decode (graphed, highest priority) and prefill on two plain streams.
  static          one disjoint split, never switched; candidates from both SLOs and neighbours.
  static-overlap  one overlapped layout (each side a floor of SMs, the rest shared), never switched.
  pd              PrefillDecodePolicy over disjoint layouts: a layout per decode step from the
                  step's batch and context, the waiting prompt tokens and both SLOs' slack.
  pd-overlap      PrefillDecodePolicy over overlapped layouts and the two whole-GPU ends.
  policy          SplitPolicy (TPOT only) over the disjoint layouts (not run by default).

Admission (--admission): first come first served, and shortest prompt first with aging; each
scheduler is reported at its better order. Goodput: DistServe's (the highest rate at which 90% of
requests meet both SLOs) and the P99 one (the highest rate at which the P99 of TTFT and the P99
of the time between tokens are within the SLOs). Rates: a coarse pass, then rates around each
scheduler's knee; every seed of --seeds. Writes results.json first, then the plots (matplotlib,
optional), to --out; prints Markdown tables. See examples/pd/README.md.
"""

from __future__ import annotations

import sys

from .bench.sweep import main

if __name__ == "__main__":
    sys.exit(main(doc=__doc__))
