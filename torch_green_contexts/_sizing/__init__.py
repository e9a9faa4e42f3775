"""The internals of :mod:`torch_green_contexts.sizing` and of the policies that read its
results: the measuring loops, the timing primitives, the result and profile classes, their
JSON, and the per-step timing and corrections of the policies. Private: the public names are
re-exported by ``sizing`` (and ``policy``, ``pd_policy`` use the rest)."""
