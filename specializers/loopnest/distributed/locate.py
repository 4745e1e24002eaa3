"""Naming a kernel class so that a worker process finds it, source included.

A worker analyses the kernel method again (its blocks run through the specializer), which
needs the method's source. A class pickled by value (defined in ``__main__`` or inside a
function) loses it: cloudpickle rewrites the code's file name. So ``KernelRef`` names the
class by module and qualified name, and a worker imports it: a module by its import name
(``__main__`` run with ``python -m pkg.mod`` by that name), a script run as ``python
script.py`` by its path (loaded as a module, so its ``if __name__ == "__main__":`` part does
not run). On a real cluster the module must be importable on every worker: the same code on
every machine, or ``client.upload_file``. A class defined inside a function cannot be named:
``kernel_ref`` refuses it.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import sys
from dataclasses import dataclass

from .refusal import PartitionRefused


@dataclass(frozen=True)
class KernelRef:
    module: str
    qualname: str
    path: str | None = None    # a script run as __main__: loaded from its file

    def resolve(self) -> type:
        return _resolve(self)


def kernel_ref(cls: type) -> KernelRef:
    """How a worker finds ``cls`` (raises ``PartitionRefused`` where it cannot)."""
    if "<locals>" in cls.__qualname__:
        raise PartitionRefused(
            f"on_dask: {cls.__qualname__} is defined inside a function; the workers find a "
            "kernel (and its source) through its module: define it at the top level of a "
            "module")
    ref = _ref(cls)
    _KNOWN[ref] = cls    # this process has the class itself
    return ref


def _ref(cls: type) -> KernelRef:
    module = cls.__module__
    if module == "__main__":
        main = sys.modules.get("__main__")
        spec = getattr(main, "__spec__", None)
        if spec is not None and spec.name:
            return KernelRef(spec.name, cls.__qualname__)
        path = getattr(main, "__file__", None)
        if path is None:
            raise PartitionRefused(
                f"on_dask: {cls.__qualname__} is defined in an interactive session; the "
                "workers find a kernel (and its source) through its module: define it in a "
                "module")
        return KernelRef("__main__", cls.__qualname__, path)
    return KernelRef(module, cls.__qualname__)


#: The classes this process named (found without importing anything).
_KNOWN: dict[KernelRef, type] = {}


@functools.lru_cache(maxsize=64)
def _resolve(ref: KernelRef) -> type:
    known = _KNOWN.get(ref)
    if known is not None:
        return known
    if ref.path is not None:
        name = "__asp_main_" + str(abs(hash(ref.path)))
        module = sys.modules.get(name)
        if module is None:
            spec = importlib.util.spec_from_file_location(name, ref.path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
    else:
        module = importlib.import_module(ref.module)
    found = module
    for part in ref.qualname.split("."):
        found = getattr(found, part)
    return found


def clear_cache() -> None:
    _resolve.cache_clear()
    _KNOWN.clear()
