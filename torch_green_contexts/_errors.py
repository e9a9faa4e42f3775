"""The package's own exceptions: DriverError (a driver call failed), FeatureUnavailableError
(the driver lacks a feature) and SplitError (the SMs cannot give a split), each with its facts as
attributes."""

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


class FeatureUnavailableError(RuntimeError):
    """The installed CUDA driver lacks a feature the call needs.

    A ``RuntimeError`` whose message names the feature, the driver version it needs and the
    version found; the three are attributes too:

    - ``feature``: what was asked for, e.g. ``"workqueue configuration"``;
    - ``needed_version``: the driver version it needs, e.g. ``13010`` (13.1);
    - ``found_version``: the installed driver's version, e.g. ``13000``.
    """

    feature: str
    needed_version: int
    found_version: int

    def __init__(self, message: str, feature: str = "", needed_version: int = 0, found_version: int = 0) -> None:
        super().__init__(message)
        self.feature = feature
        self.needed_version = needed_version
        self.found_version = found_version


class SplitError(ValueError):
    """The SMs being split cannot give what a group asks for, on either split path (the
    driver's own ``cuDevSmResourceSplit`` on 13.1+, the emulated split before).

    A ``ValueError`` whose message names the group, the count and the nearest counts that can
    be given there; the same facts are attributes:

    - ``group``: the index of the group (``None`` when the groups together ask for more SMs
      than there are);
    - ``num_sms``: the SM count it asked for (0 for a discovery group);
    - ``nearest_counts``: the nearest counts that can be given in its place, ascending (empty
      when none were found).

    ::

        try:
            groups, rest = whole.split(num_sms=(20, 0), backfill=(False, True))
        except SplitError as error:
            print(error.nearest_counts)  # e.g. [16, 24]
    """

    group: int | None
    num_sms: int
    nearest_counts: list[int]

    def __init__(self, message: str, group: int | None = None, num_sms: int = 0,
                 nearest_counts: list[int] | None = None) -> None:
        super().__init__(message)
        self.group = group
        self.num_sms = num_sms
        self.nearest_counts = list(nearest_counts or [])
