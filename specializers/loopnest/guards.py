"""The call guard of a nest's binding: what a warm call's inputs must be for the signature and
binding key of the last call to hold again, checked in C (``asp_core.call_guard``).

``NestRunner.signature`` computes, per call, the inputs' types (``signature_of``), the range of
their ints, and the binding key (``analysis.binding.Binder``: the values of the invariant
atoms, the arrays' shapes, the arrays that share memory). A guard replaces all of that for a
call whose inputs give the same answers:

* an array input: an exact ``numpy.ndarray`` with the same dtype object, dimensions,
  C-contiguity, writeability and shape (the shapes are in the key);
* an input the atoms read (``n`` in ``range(n - 1)``, ``self.m``): an exact int (or float)
  equal to this call's value; any other int: an exact int within int64, any other float: an
  exact float; any other input: the same type (its signature is its type);
* each written array and every other array: no shared memory, when this call had none (the
  key's aliases are empty).

``guard_checks`` returns them, or None where no guard can stand for the key: an atom that
reads an array's elements or an input of another kind, or arrays that share memory. It is
pure: what it returns depends on the analysis, the signature, the key and the inputs' dtype
objects and values.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from asp_core import call_guard as cg
from asp_core.signature import ArraySig

from . import dast as d


def atom_inputs(binder) -> frozenset[str] | None:
    """The inputs the binding's atoms (and their ``//`` and ``%`` operands) read, or None if
    one reads anything but inputs and shapes (an array's elements)."""
    names: set[str] = set()
    for atom in binder.atoms + binder.checkpoints:
        for node in atom.walk():
            if isinstance(node, d.ArrayRef):
                return None
            if isinstance(node, d.Var):
                names.add(node.name)
    return frozenset(names)


def guard_checks(analysis, types: Sequence[Any], key, inputs: Sequence[Any]
                 ) -> tuple[list[cg.Check], list[tuple[int, int]]] | None:
    """The checks and disjoint pairs of a guard for this call (see the module), or None."""
    binder = analysis.binder
    if key.aliases:
        return None
    keyed = atom_inputs(binder)
    if keyed is None:
        return None
    names = analysis.names
    shapes = dict(zip(names.arrays, key.shapes))
    checks: list[cg.Check] = []
    for name, sig, value in zip(names.inputs, types, inputs):
        if isinstance(sig, ArraySig):
            if type(value) is not np.ndarray or name not in shapes:
                return None
            checks.append(cg.array(value.dtype, sig.ndim, sig.layout == "C", sig.writeable,
                                   shapes[name]))
        elif type(value) is int:
            checks.append(cg.int_equal(value) if name in keyed else cg.int64())
        elif type(value) is float:
            checks.append(cg.float_equal(value) if name in keyed else cg.any_float())
        elif type(value) is bool:
            checks.append(cg.is_object(value) if name in keyed else cg.type_is(bool))
        elif name in keyed:
            return None
        else:
            checks.append(cg.type_is(type(value)))
    position = {name: i for i, name in enumerate(names.inputs)}
    arrays = [position[a] for a in names.arrays]
    pairs = []
    for w in binder.written:
        for j in range(len(arrays)):
            if j != w and not (j < w and j in binder.written):
                pairs.append((arrays[w], arrays[j]))
    return checks, pairs


def make_guard(analysis, types: Sequence[Any], key, inputs: Sequence[Any]):
    """The native guard of this call's signature and binding; False where none can stand for
    it; None where guards cannot be made now (``asp_core.call_guard``: not loaded yet, or
    not buildable here)."""
    found = guard_checks(analysis, types, key, inputs)
    if found is None:
        return False
    return cg.make_guard(*found)
