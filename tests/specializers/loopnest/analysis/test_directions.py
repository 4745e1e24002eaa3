"""analysis.directions: the incremental enumeration gives exactly the vectors the Banerjee
inequalities accept (checked against ``tests.banerjee_test``), and merging only covers more."""

import doctest
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specializers.loopnest.analysis import directions
from specializers.loopnest.analysis.budget import Budget, BudgetExhausted
from specializers.loopnest.analysis.directions import (KEEP_VECTORS, direction_vectors,
                                                        merge_vectors)
from specializers.loopnest.analysis.tests import banerjee_test
from specializers.loopnest.checking.oracle import covers


def reference(common, options, refine, equations, t_max):
    """The enumeration as ``test_pair`` did it before: every prefix ending at a refined loop
    checked from scratch with ``banerjee_test``."""
    def feasible(chosen):
        fixed = {lid: v for lid, v in chosen.items() if v != "*"}
        return all(banerjee_test(f, g, c, fixed, t_max) for f, g, c in equations)

    if equations and not feasible({}):
        return []
    out = []

    def extend(level, chosen):
        if level == len(common):
            out.append(tuple(chosen[lid] for lid in common))
            return
        lid = common[level]
        for option in options[lid]:
            trial = {**chosen, lid: option}
            if lid in refine and equations and not feasible(trial):
                continue
            extend(level + 1, trial)

    extend(0, {})
    return out


coefficient = st.integers(-3, 3)


@st.composite
def problems(draw):
    ncommon = draw(st.integers(0, 4))
    common = list(range(ncommon))
    own = [10, 11]  # loops of one reference only
    t_max = {lid: draw(st.integers(0, 4)) for lid in common + own}
    equations = []
    for _ in range(draw(st.integers(0, 2))):
        f = {lid: c for lid in common + [10] if (c := draw(coefficient))}
        g = {lid: c for lid in common + [11] if (c := draw(coefficient))}
        equations.append((f, g, draw(st.integers(-8, 8))))
    options = {lid: draw(st.sampled_from([["<", "=", ">"], ["<", "="], ["="], ["*"], [">"]]))
               for lid in common}
    refine = {lid for lid in common if draw(st.booleans())}
    return common, options, refine, equations, t_max


@settings(max_examples=400, deadline=None)
@given(problems())
def test_the_incremental_enumeration_equals_banerjee_from_scratch(problem):
    common, options, refine, equations, t_max = problem
    found, merged = direction_vectors(common, options, refine, equations, t_max, lambda n: None)
    assert not merged
    assert found == reference(common, options, refine, equations, t_max)


def test_the_enumeration_charges_and_stops():
    common = list(range(8))
    options = {lid: ["<", "=", ">"] for lid in common}
    budget = Budget(1000)
    with pytest.raises(BudgetExhausted):
        direction_vectors(common, options, set(), [], {lid: 3 for lid in common}, budget.spend)


def test_many_vectors_are_merged_while_enumerating():
    common = list(range(9))  # 3**9 > KEEP_VECTORS vectors, none refined
    options = {lid: ["<", "=", ">"] for lid in common}
    found, merged = direction_vectors(common, options, set(), [], {lid: 3 for lid in common},
                                      lambda n: None)
    assert 3 ** 9 > KEEP_VECTORS and merged and len(found) <= 3 * len(common) + 1
    for vector in itertools.product("<=>", repeat=len(common)):
        assert any(covers(m, vector) for m in found)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(*[st.sampled_from("<=>*")] * 4), min_size=1, max_size=40))
def test_merging_covers_every_vector_and_keeps_the_carrying_loop(vectors):
    merged = merge_vectors(vectors)
    assert len(merged) <= 3 * 4 + 1
    for v in vectors:
        assert any(covers(m, v) for m in merged)
    first = {v[:next((k for k, x in enumerate(v) if x != "="), 3) + 1] for v in vectors}
    assert {m[:next((k for k, x in enumerate(m) if x != "="), 3) + 1] for m in merged} == first


def test_doctests():
    assert doctest.testmod(directions).failed == 0
