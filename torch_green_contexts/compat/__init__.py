"""Drop-in replacements for other libraries' green-context helpers, built on this package (no
cuda-python):

- :mod:`torch_green_contexts.compat.flashinfer`: the functions of ``flashinfer.green_ctx``;
- :mod:`torch_green_contexts.compat.sglang`: ``create_greenctx_stream_by_value`` and
  ``get_sm_available`` of ``sgl_kernel`` (its ``spatial`` module).

Code written for them runs unchanged but for the import line, e.g.
``import torch_green_contexts.compat.flashinfer as green_ctx``. Beyond the originals, the
groups of one call never share SMs, the returned streams keep their green contexts alive, and
contexts whose streams are dropped are reused, so calling them in a loop leaks nothing.
"""

__all__: list[str] = []  # the API is the two modules'
