"""Differential tests of the compiled variants against plain Python: at least 500 generated
kernels each for serial C and for OpenMP (strict mode: a kernel that does not compile fails),
on top of the random affine nests of the dependence oracle run through both backends.

The contract has one stated exception: where plain Python computes an int beyond 64 bits, a
forced compiled backend raises ``BeyondInt64`` there, whatever Python does with the larger int
next (the default choice reruns such a call as Python: ``test_beyond_int64``)."""

import copy

import pytest
from hypothesis import HealthCheck, given, settings

from specializers.loopnest.checking import load_source
from specializers.loopnest.checking.random_nests import make_arrays, random_nest

from .generators import typed_kernels
from .helpers import check_generated, close

pytestmark = pytest.mark.slow   # the suite starts it first (the generated kernels: about five minutes here)

COUNT = {"c": 0, "openmp": 0}


def check(source: str, backend: str) -> None:
    COUNT[backend] += check_generated(source, backend)


@settings(max_examples=520, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(typed_kernels())
def test_generated_kernels_in_serial_c(source):
    check(source, "c")


@settings(max_examples=520, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(typed_kernels())
def test_generated_kernels_in_openmp(source):
    check(source, "openmp")


def test_at_least_500_each():
    if COUNT["c"] < 500:
        test_generated_kernels_in_serial_c()
    if COUNT["openmp"] < 500:
        test_generated_kernels_in_openmp()
    assert COUNT["c"] >= 500 and COUNT["openmp"] >= 500, COUNT


@pytest.mark.parametrize("wrapped,seeds", [(False, 200), (True, 80)], ids=["plain", "wrapped"])
@pytest.mark.parametrize("backend", ["c", "openmp"])
def test_random_affine_nests(backend, wrapped, seeds):
    """Random affine nests (and, ``wrapped``, their subscripts spelled with Python's
    wrap-around, one array now and then passed twice) against the original code."""
    for seed in range(0, seeds):
        nest = random_nest(seed, wrapped)
        Kernel = load_source(nest.source)
        values = dict(make_arrays(nest), **nest.args)
        params = Kernel.kernel.__wrapped__.__code__.co_varnames[1:Kernel.kernel.__wrapped__.__code__.co_argcount]
        args = [values[p] for p in params]
        plain = copy.deepcopy(args)
        Kernel().original_kernel(*plain)
        got = copy.deepcopy(args)
        kernel = Kernel(backend=backend, strict=True)
        kernel.kernel(*got)
        assert close(got, plain), f"seed {seed}\n{nest.source}"
