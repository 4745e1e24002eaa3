"""Call guards of nests (``guards``): a guard that lets a warm call skip its signature must
never let through a call whose signature or binding differs.

Two tests of the class: (1) for generated inputs (shapes, dtypes, layouts, read-only arrays,
views that share memory, ints in and out of the bounds, floats, NumPy scalars, unbound
outputs), every guard built for one call answers True for another only where the runner's own
signature of the other is the same; (2) generated sequences of calls whose inputs change from
call to call run each forced backend against the original code. Then: which inputs are keyed,
and where no guard is made.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from asp_core import call_guard as cg
from asp_core.errors import UnsupportedArgument
from specializers.loopnest import LoopKernel
from specializers.loopnest.guards import atom_inputs, guard_checks

from .helpers import identical

pytestmark = pytest.mark.skipif(cg.unavailable() is not None,
                                reason=f"call guards cannot be built here: {cg.unavailable()}")


class Shifted(LoopKernel):
    def kernel(self, a, c, n, alpha):
        for i in range(n):
            c[i + 1] = a[i] * alpha + c[i + 1]


class Rows(LoopKernel):
    def kernel(self, a, b, m):
        s = 0.0
        for i in range(a.shape[0]):
            for j in range(m // 2, a.shape[1]):
                b[i, j] = a[i, j] + 1
                s += a[i, j]
        return s


LAYOUTS = ("separate", "strided", "reversed", "alias", "overlap", "readonly")


def shifted_inputs(rng: random.Random, layout: str | None = None):
    """One call's arguments for Shifted: a fresh buffer each time (views of it may alias)."""
    size = rng.choice((8, 9, 12))
    dtype = rng.choice((np.float64, np.float64, np.float32, np.int64))
    buffer = np.arange(3 * size, dtype=dtype)
    layout = layout or rng.choice(("separate",) + LAYOUTS)
    a = np.arange(size, dtype=dtype) + 1
    c = np.zeros(size + 1, dtype=dtype)
    if layout == "strided":
        a = buffer[: 2 * size : 2]
    elif layout == "reversed":
        c = buffer[size::-1][: size + 1]
    elif layout == "alias":
        c = a = buffer[: size + 1]
    elif layout == "overlap":
        a, c = buffer[2:size + 2], buffer[: size + 1]
    elif layout == "readonly":
        a.flags.writeable = False
    n = rng.choice((size - 1, size, size - 3, 0))
    alpha = rng.choice((2.0, 0.5, 3, np.float64(1.5)))
    return (a, c, n, alpha)


def runner_of(kernel, args):
    kernel.kernel(*args)
    state = next(iter(kernel._asp_states.values()))
    return state.runners[0]


@pytest.mark.parametrize("seed", range(4))
def test_a_guard_passes_only_calls_of_its_signature(seed):
    rng = random.Random(seed)
    kernel = Shifted(backend="c")
    runner = runner_of(kernel, shifted_inputs(rng))
    # each kind of call twice (new arrays), and in every layout (the same shapes, aliasing)
    seeds = [rng.random() for _ in range(10)]
    calls = [shifted_inputs(random.Random(seed), layout) for seed in seeds
             for layout in LAYOUTS + ("separate",)]
    signatures = []
    for args in calls:
        inputs = runner._gather({"self": kernel, "a": args[0], "c": args[1], "n": args[2],
                                 "alpha": args[3]})
        try:
            signatures.append((inputs, runner.signature(inputs)))
        except UnsupportedArgument:
            signatures.append((inputs, None))
    guards = passed = refused = 0
    for inputs, sig in signatures:
        if sig is None:
            continue
        guard = runner.guard(sig, inputs)
        assert guard is not None  # the extension is loaded (unavailable() waited for it)
        if guard is False:
            assert sig[1].aliases, "a guard is made unless arrays share memory"
            continue
        guards += 1
        assert guard(tuple(inputs))
        for other, other_sig in signatures:
            if guard(tuple(other)):
                assert other_sig == sig
                passed += other is not inputs
            else:
                refused += 1
    assert guards >= 10 and passed >= 10 and refused >= 100


@pytest.mark.parametrize("backend", ["python", "c", "openmp"])
def test_changing_calls_match_the_original_code(backend):
    """Forced backends run warm through their guards; each call's inputs may differ from the
    last in any way a guard checks. Every call matches the original code, errors included."""
    rng = random.Random(11)
    kernel = Shifted(backend=backend, strict=True)
    for _ in range(120):
        seed = rng.random()
        got_args = shifted_inputs(random.Random(seed))
        want_args = shifted_inputs(random.Random(seed))
        try:
            got = ("value", kernel.kernel(*got_args))
        except Exception as exc:  # noqa: BLE001 - compared with the original's
            got = ("error", type(exc))
        try:
            want = ("value", kernel.original_kernel(*want_args))
        except Exception as exc:  # noqa: BLE001
            want = ("error", type(exc))
        assert got == want
        assert identical(list(got_args[:2]), list(want_args[:2])), (got_args, want_args)


@pytest.mark.parametrize("backend", ["c", "openmp"])
def test_a_changed_stride_or_dtype_takes_the_slow_path(backend):
    kernel = Rows(backend=backend, strict=True)
    a = np.arange(30.0).reshape(5, 6)
    for _ in range(100):  # (warm calls ask for a guard after GUARD_AFTER fast paths)
        b = np.zeros((5, 6))
        assert kernel.kernel(a, b, 4) == kernel.original_kernel(a, np.zeros((5, 6)), 4)
    runner = next(iter(kernel._asp_states.values())).runners[0]
    assert runner._fast[5] is not None, "a warm call runs through its guard"
    for a2, b2, m in [(a[:, ::-1], np.zeros((5, 6)), 4),       # strided
                      (a.astype(np.float32), np.zeros((5, 6), np.float32), 4),
                      (a, np.zeros((5, 6)), 2),                 # m // 2 is a bound
                      (a, np.zeros((5, 6)), 5),                 # the same bound: 5 // 2 == 4 // 2
                      (np.arange(35.0).reshape(5, 7), np.zeros((5, 7)), 4)]:
        want_b = b2.copy()
        want = kernel.original_kernel(a2.copy(), want_b, m)
        assert kernel.kernel(a2, b2, m) == want
        assert identical(b2, want_b)


def test_keyed_inputs_are_those_the_bounds_read():
    kernel = Rows(backend="c")
    runner = runner_of(kernel, (np.zeros((3, 4)), np.zeros((3, 4)), 2))
    assert atom_inputs(runner.analysis.binder) == {"m"}
    inputs = runner._gather({"self": kernel, "a": np.zeros((3, 4)), "b": np.zeros((3, 4)),
                             "m": 2, "s": 0.0})
    types, key = runner.signature(inputs)
    checks, pairs = guard_checks(runner.analysis, types, key, inputs)
    by_name = dict(zip(runner.analysis.names.inputs, checks))
    assert by_name["a"].kind == by_name["b"].kind == cg.ARRAY
    assert by_name["m"] == cg.int_equal(2) and by_name["s"] == cg.any_float()
    assert pairs  # b is written: b and a must not overlap


def test_no_guard_where_arrays_share_memory():
    kernel = Shifted(backend="c")
    buffer = np.zeros(10)
    args = (buffer[:8], buffer[1:10], 8, 2.0)
    runner = runner_of(kernel, args)
    inputs = runner._gather(dict(zip(("a", "c", "n", "alpha"), args), self=kernel))
    types, key = runner.signature(inputs)
    assert key.aliases and guard_checks(runner.analysis, types, key, inputs) is None
