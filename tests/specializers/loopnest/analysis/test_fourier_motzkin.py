"""analysis.fourier_motzkin: integer-sound feasibility; infeasible only when no integer point."""

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from specializers.loopnest.analysis import fourier_motzkin as fm


def test_simple_systems():
    assert fm.feasible([], [({"x": 1}, 0), ({"x": -1}, 3)])            # 0 <= x <= 3
    assert not fm.feasible([], [({"x": 1}, -4), ({"x": -1}, 3)])       # x >= 4 and x <= 3
    assert not fm.feasible([({"x": 2}, -1)], [])                       # 2x = 1: GCD
    assert not fm.feasible([({"x": 2, "y": -2}, -1)], [])
    # i' = j, j' = i with j < i and j' < i' (a transpose over a triangle): no solution
    eq = [({"i": 1, "jd": -1}, 0), ({"j": 1, "id": -1}, 0)]
    ineq = [({"i": 1, "j": -1}, -1), ({"id": 1, "jd": -1}, -1)]
    assert not fm.feasible(eq, ineq)


def test_integer_tightening():
    # 2x >= 1 and 2x <= 1 has the rational solution 1/2 but no integer one
    assert not fm.feasible([], [({"x": 2}, -1), ({"x": -2}, 1)])


def test_projection_keeps_what_it_should():
    proj = fm.project([({"x": 1, "y": -1, "d": 1}, 0)],  # d = y - x
                      [({"x": 1}, 0), ({"x": -1}, 5), ({"y": 1}, 0), ({"y": -1}, 5)],
                      keep={"d"})
    assert proj is not None and proj.names == ("d",)
    assert proj.feasible_with([], [({"d": 1}, -5)])       # d >= 5 possible (x=0, y=5)
    assert not proj.feasible_with([], [({"d": 1}, -6)])   # d >= 6 impossible


coef = st.integers(-3, 3)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(coef, coef, coef, st.integers(-6, 6)), min_size=1, max_size=5),
       st.lists(st.tuples(coef, coef, coef, st.integers(-6, 6)), max_size=2))
def test_never_infeasible_when_an_integer_point_exists(ineqs, eqs):
    box = [({"x": 1}, 3), ({"x": -1}, 3), ({"y": 1}, 3), ({"y": -1}, 3), ({"z": 1}, 3), ({"z": -1}, 3)]
    inequalities = box + [({"x": a, "y": b, "z": c}, k) for a, b, c, k in ineqs]
    equalities = [({"x": a, "y": b, "z": c}, k) for a, b, c, k in eqs]
    point_exists = any(
        all(a * x + b * y + c * z + k >= 0 for a, b, c, k in ineqs)
        and all(a * x + b * y + c * z + k == 0 for a, b, c, k in eqs)
        for x, y, z in itertools.product(range(-3, 4), repeat=3))
    if point_exists:
        assert fm.feasible(equalities, inequalities)
