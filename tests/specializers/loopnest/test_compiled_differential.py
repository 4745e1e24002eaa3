"""Differential tests of the compiled variants against plain Python: at least 500 generated
kernels each for serial C and for OpenMP (strict mode: a kernel that does not compile fails),
on top of the random affine nests of the dependence oracle run through both backends.

The contract has one stated exception: where plain Python computes an int beyond 64 bits, a
forced compiled backend raises ``BeyondInt64`` there, whatever Python does with the larger int
next (the default choice reruns such a call as Python: ``test_beyond_int64``)."""

import copy
import warnings

import pytest
from hypothesis import HealthCheck, given, settings

from specializers.loopnest.checking import load_source
from specializers.loopnest.checking.random_nests import make_arrays, random_nest
from specializers.loopnest.pipeline import analyse_kernel
from specializers.loopnest.variants import BeyondInt64

from .generators import load_kernel, make_typed_arguments, typed_kernels
from .helpers import close

COUNT = {"c": 0, "openmp": 0}


def outcome(call):
    try:
        return ("ok", call())
    except BeyondInt64:
        return ("beyond int64", BeyondInt64)
    except (ArithmeticError, IndexError, ValueError) as exc:
        return ("error", type(exc))


def check(source: str, backend: str) -> None:
    Kernel, _ = load_kernel(source)
    args = make_typed_arguments()
    plain_args = copy.deepcopy(args)
    want = outcome(lambda: Kernel().original_kernel(*plain_args))
    kernel = Kernel(backend=backend, strict=True)
    got_args = copy.deepcopy(args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = outcome(lambda: kernel.kernel(*got_args))
    if got[0] == "beyond int64":
        return  # Python's ints grew past 64 bits: the stated exception (see the module)
    assert got[0] == want[0], (got, want, source)
    if got[0] == "ok":
        assert close((got[1], got_args), (want[1], plain_args)), source
        assert all(n.backend == backend and n.fallback is None for n in kernel.last_call.nests)
        for runner in kernel._asp_current.runners:
            assert runner.last_plan is None or runner.last_plan.rejected == ()
    else:
        assert got[1] is want[1], source
    COUNT[backend] += 1


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
