"""checking.oracle and the dependence analysis against it: on 1000 random affine nests (2 to 4
deep, 1 to 4 statements, 1 to 3 arrays, symbolic coefficients and offsets, triangular bounds,
negative steps), and on 1000 more whose subscripts are spelled the ways Python's wrap-around
allows (every instance negative, some instances negative, constants from either end of the
axis, one array passed twice), the analysis misses no dependence the brute-force oracle finds;
and each nest, run with its parallel loops shuffled, gives the original code's result."""

import copy

import numpy as np
import pytest

from specializers.loopnest.checking import load_source
from specializers.loopnest.checking.oracle import OracleDependence, exact_dependences, missed
from specializers.loopnest.checking.random_nests import make_arrays, random_nest
from specializers.loopnest.pipeline import NestAnalysis, analyse_kernel

from ..helpers import identical

pytestmark = pytest.mark.slow   # the suite starts it first (about two minutes here)

SEEDS = 1000
CHUNK = 100


def analysed(seed: int, wrapped: bool = False):
    nest = random_nest(seed, wrapped)
    Kernel = load_source(nest.source)
    analysis = analyse_kernel(Kernel.kernel.__wrapped__).nests[0]
    values = dict(make_arrays(nest), **nest.args)
    values.update({v: None for v in analysis.names.outputs})
    return nest, Kernel, analysis, values


def test_oracle_on_a_known_nest():
    def kernel(self, A, n):
        for i in range(1, n):
            A[i] = A[i - 1] + 1.0

    analysis = analyse_kernel(kernel).nests[0]
    deps = exact_dependences(analysis, {"A": np.zeros(4), "n": 4, "i": None})
    assert deps == {OracleDependence(0, 0, "flow", "A", ("<",))}


def test_missed_detects_an_uncovered_dependence():
    dep = OracleDependence(0, 1, "flow", "A", ("<", "="))
    assert missed({dep}, []) == [dep]


def test_oracle_knows_wrapped_indices_and_arrays_passed_twice():
    def kernel(self, A, B, n):
        for i in range(1, n):
            A[i, 0] = A[i - 1, -1] + 1.0
            B[i, 7] = A[i, 0] * 1.0

    analysis = analyse_kernel(kernel).nests[0]
    A = np.zeros((4, 8))
    deps = exact_dependences(analysis, {"A": A, "B": A, "n": 4, "i": None})
    assert OracleDependence(1, 0, "flow", "B", ("<",)) in deps   # B[i, 7] then A[i, -1]


def test_the_issue_reproducer_is_carried():
    """A[i - 1, -1] reads what A[i, 7] wrote one iteration before (8 columns)."""
    def kernel(self, A, n):
        for i in range(1, n):
            A[i, 0] = A[i - 1, -1] + 1.0
            A[i, 7] = A[i, 0] * 1.0

    analysis = analyse_kernel(kernel).nests[0]
    values = {"A": np.zeros((6, 8)), "n": 6, "i": None}
    plan = analysis.plan(analysis.binder.key((values["A"], 6)))
    assert not missed(exact_dependences(analysis, values), plan.graph.edges)
    assert not plan.parallel


@pytest.mark.parametrize("wrapped", [False, True], ids=["plain", "wrapped"])
@pytest.mark.parametrize("start", range(0, SEEDS, CHUNK))
def test_no_dependence_missed_and_any_order_is_correct(start, wrapped):
    for seed in range(start, start + CHUNK):
        nest, Kernel, analysis, values = analysed(seed, wrapped)
        assert isinstance(analysis, NestAnalysis), (seed, analysis)
        inputs = tuple(values[n] for n in analysis.names.inputs)
        plan = analysis.plan(analysis.binder.key(inputs))
        lost = missed(exact_dependences(analysis, values), plan.graph.edges, plan.bound.canonical)
        assert not lost, f"seed {seed} misses {lost[:3]}\n{nest.source}{nest.args}"
        assert plan.rejected == (), f"seed {seed}: schedule rejected {plan.rejected}"
        args = [values[p] for p in Kernel.kernel.__wrapped__.__code__.co_varnames[1:
                Kernel.kernel.__wrapped__.__code__.co_argcount]]
        plain = copy.deepcopy(args)
        Kernel(backend="python").original_kernel(*plain)
        checked = copy.deepcopy(args)
        kernel = Kernel(backend="python-shuffled", strict=True)
        kernel.kernel(*checked)
        assert identical(checked, plain), f"seed {seed}: shuffled run differs\n{nest.source}"
