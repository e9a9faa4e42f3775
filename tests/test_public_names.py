"""Each public module exports exactly what docs/api.rst documents for it: ``__all__`` lists those
names, and every other name in the module without a leading underscore is a module, a name of
the standard library's typing modules, or a documented name of another public module that it
uses (``SMPartition`` in ``sizing``). An undocumented helper must be private: start with an
underscore or live in a private module."""

import __future__

import collections.abc
import importlib
import inspect
import pathlib
import re
import textwrap
import types
import typing

import pytest

API = pathlib.Path(__file__).resolve().parent.parent / "docs" / "api.rst"

PUBLIC = [
    "torch_green_contexts",
    "torch_green_contexts.sizing",
    "torch_green_contexts.layouts",
    "torch_green_contexts.policy",
    "torch_green_contexts.pd_policy",
    "torch_green_contexts.step_policy",
    "torch_green_contexts.run",
    "torch_green_contexts.compat",
    "torch_green_contexts.compat.flashinfer",
    "torch_green_contexts.compat.sglang",
]


def documented() -> dict[str, set[str]]:
    """The names docs/api.rst documents, per module: the targets of its auto* and py:data
    directives, and the ``:members:`` listed under an ``automodule``."""
    names: dict[str, set[str]] = {module: set() for module in PUBLIC}
    text = API.read_text()
    for target in re.findall(r"^\.\. (?:autoclass|autofunction|autoexception|autodata|py:data):: +(\S+)", text, re.M):
        module, _, name = target.rpartition(".")
        names.setdefault(module, set()).add(name)
    for module, options in re.findall(r"^\.\. automodule:: +(\S+)\n((?:[ \t]+\S.*\n?)*)", text, re.M):
        members = re.search(r":members:(.*(?:\n[ \t]{4,}[^:\s].*)*)", options)
        if members:
            names.setdefault(module, set()).update(n.strip() for n in members.group(1).split(",") if n.strip())
    return names


def _from_typing(name: str, value: object) -> bool:
    if name == "annotations" and value is __future__.annotations:
        return True
    return any(getattr(source, name, None) is value for source in (typing, collections.abc))


def public_names(module: types.ModuleType, allowed: typing.Iterable[object] = ()) -> set[str]:
    """The names of ``module`` without a leading underscore that it exports in effect: not
    modules, typing names or objects of ``allowed`` (other modules' documented names)."""
    allowed_ids = {id(value) for value in allowed}
    names = set()
    for name, value in vars(module).items():
        if name.startswith("_") or inspect.ismodule(value) or _from_typing(name, value):
            continue
        if id(value) in allowed_ids:
            continue
        names.add(name)
    return names


def _documented_objects(docs: dict[str, set[str]], but: str) -> list[object]:
    objects = []
    for module_name in PUBLIC:
        if module_name != but:
            module = importlib.import_module(module_name)
            objects += [getattr(module, name) for name in docs[module_name] if hasattr(module, name)]
    return objects


@pytest.mark.parametrize("module_name", PUBLIC)
def test_all_is_exactly_the_documented_names(module_name):
    module = importlib.import_module(module_name)
    docs = documented()
    exported = module.__all__
    assert len(exported) == len(set(exported)), f"{module_name}.__all__ repeats a name"
    assert set(exported) == docs[module_name], f"{module_name}.__all__ against docs/api.rst"
    for name in exported:
        assert hasattr(module, name), f"{module_name}.{name} is in __all__ but not defined"


@pytest.mark.parametrize("module_name", PUBLIC)
def test_no_undocumented_name_is_public(module_name):
    module = importlib.import_module(module_name)
    docs = documented()
    extra = public_names(module, _documented_objects(docs, but=module_name)) - set(module.__all__)
    assert not extra, f"{module_name} has public names it does not document: {sorted(extra)}"


def test_the_checks_find_an_undocumented_helper_and_an_undocumented_export():
    fake = types.ModuleType("fake")
    exec(textwrap.dedent('''
        from __future__ import annotations
        import math
        from typing import Any, Callable
        from collections.abc import Iterable

        from torch_green_contexts import SMPartition

        __all__ = ["measure"]

        def measure(fn: Callable[[], Any]) -> None: ...
        def positive_int(name: str, value: Any) -> int: ...
        _private = 1
    '''), fake.__dict__)
    import torch_green_contexts

    assert public_names(fake, [torch_green_contexts.SMPartition]) == {"measure", "positive_int"}
    assert public_names(fake) == {"measure", "positive_int", "SMPartition"}
    docs = documented()
    assert "ORDERINGS" in docs["torch_green_contexts.layouts"] and "Handoff" in docs["torch_green_contexts.layouts"]
    flashinfer = docs["torch_green_contexts.compat.flashinfer"]
    assert "split_device_green_ctx_by_sm_count" in flashinfer and "CUdevSmResource" in flashinfer
    assert "round_up" not in flashinfer
