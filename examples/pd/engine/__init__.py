"""An LLM serving engine that shares one GPU between prefill and decode, liftable into a server.

- ``request``: a request and the SLOs it is served for.
- ``admission``, ``planning``: who gets a KV slot and whose prompt is prefilled next; how work
  is cut (decode buckets, chunked-prefill iterations, prefill pieces).
- ``steps``, ``chunked``, ``overlap``: step-shaped schedulers (``add(request)``, ``step(now)``)
  over a device protocol: chunked prefill, and decode beside prefill pieces on lanes.
- ``lanes``: where each step runs (plain streams, a static layout, a ``StepPolicy``'s choice).
- ``serve``: the loop that feeds a scheduler requests as they arrive and hands each step's
  report to a recorder.
- ``gpu``, ``model``, ``mixed``, ``events``, ``shape``: the GPU device (needs torch and CUDA).

It knows nothing of traces, sweeps, goodput or files; ``examples.pd.bench`` measures it.
"""
