"""Drop-in: make torch.cuda.green_contexts resolve to this package's API."""

from __future__ import annotations

import importlib
import sys
import types

# torch 2.15's torch.cuda.green_contexts.__all__: the whole module is replaced.
_NAMES = ("GreenContext", "SMPartition", "get_num_locality_domains", "is_localization_supported")
_MODULE = "torch.cuda.green_contexts"
_originals: dict[str, object] = {}
_created_module = False


def _ours() -> dict[str, object]:
    from . import GreenContext, SMPartition, get_num_locality_domains, is_localization_supported

    return {
        "GreenContext": GreenContext,
        "SMPartition": SMPartition,
        "get_num_locality_domains": get_num_locality_domains,
        "is_localization_supported": is_localization_supported,
    }


def install() -> None:
    """Make ``torch.cuda.green_contexts``' public names this package's: ``GreenContext``,
    ``SMPartition``, ``get_num_locality_domains`` and ``is_localization_supported``.

    Afterwards code written for ``torch.cuda.green_contexts`` (the API of torch 2.15) runs
    unchanged on any torch this package supports, including torches whose own module is
    older, needs cuda-python, or is missing. Call it before that code imports the names
    (``from torch.cuda.green_contexts import GreenContext`` binds whatever is there at that
    moment), or start the program with ``python -m torch_green_contexts.run script.py``.
    Calling it again does nothing; :func:`uninstall` restores torch's own.
    """
    global _created_module
    import torch.cuda

    ours = _ours()
    try:
        module = importlib.import_module(_MODULE)
    except Exception:  # noqa: BLE001 - no module, or one that cannot load here (cuda-python)
        sys.modules.pop(_MODULE, None)
        module = types.ModuleType(_MODULE, "torch.cuda.green_contexts, provided by torch_green_contexts")
        setattr(module, "__all__", list(_NAMES))
        sys.modules[_MODULE] = module
        _created_module = True
    setattr(torch.cuda, "green_contexts", module)
    for name in _NAMES:
        current = getattr(module, name, None)
        if current is not ours[name] and name not in _originals:
            _originals[name] = current
        setattr(module, name, ours[name])


def uninstall() -> None:
    """Undo :func:`install`: torch's own names (or none) again."""
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
    """Whether every public name of torch.cuda.green_contexts is currently this package's."""
    module = sys.modules.get(_MODULE)
    if module is None:
        return False
    return all(getattr(module, name, None) is value for name, value in _ours().items())
