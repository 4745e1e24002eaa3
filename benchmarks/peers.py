"""The peers ``asp bench`` times beside our variants: other ways to run an example's kernel.

* ``numpy``: the example's own NumPy formulation (``numpy_reference`` of ``examples/NAME.py``);
* ``numba``: Numba's ``@njit`` of the kernel method's own source
  (``numba_versions.same_source``);
* ``numba-parallel``: ``@njit(parallel=True)`` of the example written by hand with ``prange``
  on its legally parallel loops (``numba_versions.parallel``).

``available()`` says which of them this machine can run, and why the others are skipped (Numba
is the ``bench`` extra: ``pip install -e .[bench]``); ``make(name, cls)`` returns the function a
call of the peer runs, on the same arguments as ``cls().kernel``. The worker processes of
``benchmarks.selection_worker`` make peers through it, so the timing is the same as for our
variants. Numba is imported only by ``make``, in the worker.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Callable

PEERS = ("numpy", "numba", "numba-parallel")


def available() -> tuple[list[str], list[str]]:
    """The peers this machine can run, and one note per peer it cannot (why)."""
    if importlib.util.find_spec("numba") is None:
        return ["numpy"], ["Numba is not installed (pip install -e .[bench]): numba and "
                           "numba-parallel are skipped"]
    return list(PEERS), []


def make(name: str, cls: type) -> Callable:
    """The function a call of peer ``name`` runs for the example kernel class ``cls``."""
    module = importlib.import_module(cls.__module__)
    example = cls.__module__.rpartition(".")[2]
    if name == "numpy":
        return module.numpy_reference
    from . import numba_versions

    if name == "numba":
        return numba_versions.same_source(cls)
    if name == "numba-parallel":
        return numba_versions.parallel(example)
    raise ValueError(f"unknown peer {name!r}; the peers: {', '.join(PEERS)}")
