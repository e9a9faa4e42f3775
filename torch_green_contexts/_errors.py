"""DriverError: the exception raised when a CUDA driver call fails."""

from __future__ import annotations


class DriverError(RuntimeError):
    """A CUDA driver call failed.

    A ``RuntimeError`` (the type PyTorch raises for driver failures, so existing ``except
    RuntimeError`` clauses still catch it) whose message names the call, the ``CUresult`` name
    and number, and the driver's text. The same facts are attributes, so that callers tell
    failures apart without reading the message:

    - ``call``: the driver entry point, e.g. ``"cuGreenCtxCreate"``;
    - ``code``: the numeric ``CUresult``, e.g. ``915``;
    - ``name``: its name, e.g. ``"CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION"``.

    ::

        try:
            groups, rest = whole.split(num_sms=(k, 0), backfill=(False, True))
        except DriverError as error:
            if error.name != "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION":
                raise
    """

    call: str
    code: int
    name: str

    def __init__(self, message: str, call: str = "", code: int = 0, name: str = "") -> None:
        super().__init__(message)
        self.call = call
        self.code = code
        self.name = name
