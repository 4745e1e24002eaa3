"""analysis.budget: deep nests are analysed in bounded time, and a budget that stops a test
only ever adds dependences (every one the brute-force oracle finds is still reported)."""

import time

import numpy as np
import pytest

import specializers.loopnest.analysis.dependence as dependence
import specializers.loopnest.analysis.graph as graph
from specializers.loopnest.analysis import fourier_motzkin as fm
from specializers.loopnest.analysis.budget import MARK, Budget, BudgetExhausted
from specializers.loopnest.checking import load_source
from specializers.loopnest.checking.oracle import covers, exact_dependences, missed
from specializers.loopnest.checking.random_nests import make_arrays, random_nest
from specializers.loopnest.pipeline import analyse_kernel, make_plan


def deep_source(depth: int, *, triangular: bool = False, shift: int = 0) -> str:
    """A perfect nest ``depth`` deep over ``A[i0 + i1 + ... + shift]``: one MIV subscript,
    whose direction vectors number up to ``3**depth``."""
    lines = ["from specializers.loopnest import LoopKernel", "", "",
             "class Kernel(LoopKernel):", "    def kernel(self, A, n):"]
    for k in range(depth):
        bound = f"range(i{k - 1} + 1)" if triangular and k else "range(n)"
        lines.append("    " * (k + 2) + f"for i{k} in {bound}:")
    subscript = " + ".join(f"i{k}" for k in range(depth))
    lines.append("    " * (depth + 2) + f"A[{subscript} + {shift}] = A[{subscript}] + 1.0")
    return "\n".join(lines) + "\n"


def analysed(source: str, **values):
    analysis = analyse_kernel(load_source(source).kernel.__wrapped__).nests[0]
    values.update({v: None for v in analysis.names.outputs})
    key = analysis.binder.key(tuple(values[n] for n in analysis.names.inputs))
    return analysis, key, values


def test_budget_counts_and_charges_its_parent():
    nest = Budget(10)
    pair = Budget(6, nest)
    pair.spend(5)
    assert (pair.spent, nest.spent) == (5, 5) and not pair.exhausted
    with pytest.raises(BudgetExhausted):
        pair.spend(2)                       # the pair's own limit
    other = Budget(100, nest)
    with pytest.raises(BudgetExhausted):
        other.spend(4)                      # the nest's limit: 11 > 10
    assert other.exhausted and nest.exhausted


@pytest.mark.parametrize("depth", [13, 19])
def test_a_deep_nest_is_analysed_in_bounded_time_and_conservatively(depth):
    # Before the budget: depth 13 took 48 s and 360 MB, depth 19 gave no answer in 120 s.
    analysis, key, _ = analysed(deep_source(depth), A=np.zeros(2 * depth), n=2)
    start = time.perf_counter()
    plan = make_plan(analysis, key)
    assert time.perf_counter() - start < 10  # about 0.3 s here; generous for busy machines
    assert all(MARK in pair.outcome for pair in plan.graph.pairs)
    assert len(plan.graph.edges) <= 4 * depth
    assert plan.schedule.parallel_loops() == ()  # dependences assumed at every level


def test_the_budget_is_reported_by_explain():
    Kernel = load_source(deep_source(12))
    text = str(Kernel(backend="python", strict=True).explain(np.zeros(24), 2))
    assert f"dependent (GCD+Banerjee + {MARK}: directions not refined)" in text
    assert "2 pair(s) stopped at the analysis budget" in text


def covered_by(edges, reference) -> bool:
    """Every edge of ``reference`` is covered by one of ``edges`` (same statements, kind,
    array and carrying loop; a vector covering its vector)."""
    return all(any(e.source == r.source and e.sink == r.sink and e.kind == r.kind and
                   e.variable == r.variable and (e.level is None) == (r.level is None) and
                   covers(e.vector, r.vector) for e in edges) for r in reference)


@pytest.mark.parametrize("source, values", [
    (deep_source(4, triangular=True, shift=1), dict(A=np.zeros(12), n=3)),
    (deep_source(6), dict(A=np.zeros(12), n=2)),
    (deep_source(3, shift=2), dict(A=np.zeros(12), n=3)),
], ids=["triangular-4", "rectangular-6", "rectangular-3"])
def test_a_budget_only_adds_dependences(monkeypatch, source, values):
    analysis, key, values = analysed(source, **values)
    oracle = exact_dependences(analysis, values)
    full = make_plan(analysis, key)
    assert oracle and not missed(oracle, full.graph.edges)
    outcomes = set()
    for units in (0, 100, 1_000, 3_000, 10_000, 100_000):
        monkeypatch.setattr(graph, "NEST_UNITS", units)
        plan = make_plan(analysis, key)
        lost = missed(oracle, plan.graph.edges)
        assert not lost, f"a budget of {units} units misses {lost[:3]}"
        assert covered_by(plan.graph.edges, full.graph.edges), units
        assert not plan.rejected
        outcomes |= {p.outcome for p in plan.graph.pairs}
    assert any("directions not refined" in o for o in outcomes)
    if "range(i0 + 1)" in source:  # triangular: Fourier-Motzkin runs, and is stopped too
        assert any("Fourier-Motzkin stopped" in o for o in outcomes)


def test_merged_vectors_only_add_dependences(monkeypatch):
    analysis, key, values = analysed(deep_source(5, shift=1), A=np.zeros(12), n=2)
    full = make_plan(analysis, key)
    monkeypatch.setattr(dependence, "MAX_VECTORS", 2)
    plan = make_plan(analysis, key)
    assert any("merged" in p.outcome for p in plan.graph.pairs)
    assert not missed(exact_dependences(analysis, values), plan.graph.edges)
    assert covered_by(plan.graph.edges, full.graph.edges)


@pytest.mark.parametrize("units", [0, 300])
def test_random_nests_under_tiny_budgets_miss_no_dependence(monkeypatch, units):
    monkeypatch.setattr(graph, "NEST_UNITS", units)
    stopped = 0
    for seed in range(40):
        nest = random_nest(seed)
        analysis = analyse_kernel(load_source(nest.source).kernel.__wrapped__).nests[0]
        values = dict(make_arrays(nest), **nest.args)
        values.update({v: None for v in analysis.names.outputs})
        plan = make_plan(analysis, analysis.binder.key(
            tuple(values[n] for n in analysis.names.inputs)))
        lost = missed(exact_dependences(analysis, values), plan.graph.edges)
        assert not lost, f"seed {seed} misses {lost[:3]}\n{nest.source}"
        assert not plan.rejected
        stopped += sum(MARK in p.outcome for p in plan.graph.pairs)
    assert stopped  # the budget did stop tests


def test_fourier_motzkin_charges_its_budget():
    eq = [({"x": 1, "y": -1, "d": 1}, 0)]
    ineq = [({"x": 1}, 0), ({"x": -1}, 5), ({"y": 1}, 0), ({"y": -1}, 5)]
    assert fm.project(eq, ineq, keep={"d"}) is not None
    budget = Budget(10_000)
    assert fm.project(eq, ineq, keep={"d"}, budget=budget) is not None and budget.spent > 0
    with pytest.raises(BudgetExhausted):
        fm.project(eq, ineq, keep={"d"}, budget=Budget(budget.spent - 1))
