"""Drop-in: make torch.cuda.green_contexts resolve to this package's classes."""

from __future__ import annotations

import importlib
import sys
import types

_NAMES = ("GreenContext", "SMPartition")
_MODULE = "torch.cuda.green_contexts"
_originals: dict[str, object] = {}
_created_module = False


def install() -> None:
    """Make ``torch.cuda.green_contexts.GreenContext`` and ``SMPartition`` this package's.

    Afterwards code written for ``torch.cuda.green_contexts`` (the API of torch 2.15) runs
    unchanged on any torch this package supports, including torches whose own module is
    older, needs cuda-python, or is missing. Call it before that code imports the names
    (``from torch.cuda.green_contexts import GreenContext`` binds whatever is there at that
    moment), or start the program with ``python -m torch_green_contexts.run script.py``.
    Calling it again does nothing; :func:`uninstall` restores torch's own classes.
    """
    global _created_module
    import torch.cuda

    from . import GreenContext, SMPartition

    try:
        module = importlib.import_module(_MODULE)
    except Exception:  # noqa: BLE001 - no module, or one that cannot load here (cuda-python)
        sys.modules.pop(_MODULE, None)
        module = types.ModuleType(_MODULE, "torch.cuda.green_contexts, provided by torch_green_contexts")
        setattr(module, "__all__", list(_NAMES))
        sys.modules[_MODULE] = module
        _created_module = True
    setattr(torch.cuda, "green_contexts", module)
    ours = {"GreenContext": GreenContext, "SMPartition": SMPartition}
    for name in _NAMES:
        current = getattr(module, name, None)
        if current is not ours[name] and name not in _originals:
            _originals[name] = current
        setattr(module, name, ours[name])


def uninstall() -> None:
    """Undo :func:`install`: torch's own classes (or none) again."""
    global _created_module
    import torch.cuda

    module = sys.modules.get(_MODULE)
    if module is None:
        return
    if _created_module:
        del sys.modules[_MODULE]
        if getattr(torch.cuda, "green_contexts", None) is module:
            delattr(torch.cuda, "green_contexts")
        _created_module = False
    else:
        for name, original in _originals.items():
            if original is None:
                if hasattr(module, name):
                    delattr(module, name)
            else:
                setattr(module, name, original)
    _originals.clear()


def installed() -> bool:
    """Whether torch.cuda.green_contexts currently resolves to this package's classes."""
    from . import GreenContext

    module = sys.modules.get(_MODULE)
    return module is not None and getattr(module, "GreenContext", None) is GreenContext
