"""intrinsics: pure functions recognised by object, under canonical names."""

import math

import numpy as np

from specializers.loopnest import intrinsics


def test_by_object_and_by_name():
    assert intrinsics.by_object(math.sqrt).name == "math.sqrt"
    assert intrinsics.by_object(np.abs).name in ("numpy.abs", "numpy.absolute")
    assert intrinsics.by_object(abs).name == "abs" and intrinsics.by_object(print) is None
    entry = intrinsics.by_name("max")
    assert entry.func is max and (entry.min_args, entry.max_args) == (2, 8)


def test_module_constants():
    assert intrinsics.module_constant(math, "pi") == math.pi
    assert intrinsics.module_constant(np, "inf") == np.inf
    assert intrinsics.module_constant(math, "sqrt") is None
