"""runtime: reading a nest's inputs from the kernel frame, argument checks, the executor."""

import numpy as np
import pytest

from asp_core.errors import UnsupportedArgument
from asp_core.signature import signature_of
from specializers.loopnest.pipeline import analyse_kernel
from specializers.loopnest.rewrite import NO_VALUE
from specializers.loopnest.runtime import NestRunner, check_arguments, gather_source

GLOBAL_SCALE = 3


def make_kernel():
    captured = 2

    def kernel(self, A, n):
        for i in range(n):
            A[i] = A[i] * GLOBAL_SCALE + captured + self.shift
            s = A[i]
        return s

    return kernel


def test_gather_reads_locals_globals_closure_and_attributes():
    kernel = make_kernel()
    analysis = analyse_kernel(kernel)
    nest = analysis.nests[0]
    assert nest.names.inputs == ("A", "GLOBAL_SCALE", "captured", "n", "self.shift", "s", "i")
    text = gather_source(nest, analysis.source.ctx, "g")
    assert "G['GLOBAL_SCALE']" in text and "C['captured'].cell_contents" in text
    assert "L['self'].shift" in text and "L.get('s', UNBOUND)" in text

    class Obj:
        shift = 0.5

    runner = NestRunner(nest, analysis.source.ctx, backend="python", strict=True)
    A = np.ones(3)
    values = runner._gather({"self": Obj(), "A": A, "n": 3})
    assert values == (A, 3, 2, 3, 0.5, NO_VALUE, NO_VALUE)


def test_missing_input_falls_back_to_the_original_code():
    kernel = make_kernel()
    analysis = analyse_kernel(kernel)
    runner = NestRunner(analysis.nests[0], analysis.source.ctx, backend="python")
    from specializers.loopnest.rewrite import RUN_ORIGINAL

    with pytest.warns(UserWarning, match="has no value"):
        assert runner.enter({"self": object(), "A": np.ones(2), "n": 2}) is RUN_ORIGINAL


def test_check_arguments():
    def kernel(self, A, B, n):
        for i in range(n):
            A[i] = B[i, 0]

    nest = analyse_kernel(kernel).nests[0]
    ok = signature_of([np.zeros(2), np.zeros((2, 2)), 2, NO_VALUE])
    check_arguments(nest, ok)
    with pytest.raises(UnsupportedArgument, match="not a NumPy array"):
        check_arguments(nest, signature_of([[0, 0], np.zeros((2, 2)), 2, NO_VALUE]))
    with pytest.raises(UnsupportedArgument, match="complex128"):
        check_arguments(nest, signature_of([np.zeros(2, complex), np.zeros((2, 2)), 2, NO_VALUE]))
