"""analysis.tests: each classical test agrees with brute-force enumeration where it is exact,
and never misses a solution (soundness) where it is not."""

import doctest
import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from specializers.loopnest.analysis import tests as t

small = st.integers(-4, 4)
nonzero = st.integers(-3, 3).filter(lambda x: x != 0)
extent = st.integers(0, 7)


def brute_directions(f, g, t_max):
    """Directions (t vs t') of all solutions of f(t) == g(t') with t, t' in [0, t_max]."""
    out = set()
    for a, b in itertools.product(range(t_max + 1), repeat=2):
        if f(a) == g(b):
            out.add("<" if a < b else ">" if a > b else "=")
    return out


def test_doctests():
    assert doctest.testmod(t).failed == 0


@settings(max_examples=300)
@given(nonzero, small, small, extent)
def test_strong_siv_is_exact(a, c1, c2, t_max):
    dist = t.strong_siv_test(a, c1, c2, t_max)
    brute = {(y - x) for x, y in itertools.product(range(t_max + 1), repeat=2)
             if a * x + c1 == a * y + c2}
    assert (dist is None) == (not brute)
    if dist is not None:
        assert brute == {dist}


@settings(max_examples=300)
@given(nonzero, small, small, extent, st.booleans())
def test_weak_zero_siv_is_exact(a, c1, c2, t_max, zero_in_source):
    dirs = t.weak_zero_siv_test(a, c1, c2, t_max, zero_in_source)
    if zero_in_source:   # S1 constant c2, S2 varying a*t' + c1
        brute = brute_directions(lambda x: c2, lambda y: a * y + c1, t_max)
    else:
        brute = brute_directions(lambda x: a * x + c1, lambda y: c2, t_max)
    assert (dirs or set()) == brute


@settings(max_examples=300)
@given(nonzero, small, small, extent)
def test_weak_crossing_siv_is_exact(a, c1, c2, t_max):
    dirs = t.weak_crossing_siv_test(a, c1, c2, t_max)
    brute = brute_directions(lambda x: a * x + c1, lambda y: -a * y + c2, t_max)
    assert (dirs or set()) == brute


@settings(max_examples=300)
@given(st.lists(small, min_size=1, max_size=3), small)
def test_gcd_test_is_sound(coeffs, const):
    solvable = any(sum(c * x for c, x in zip(coeffs, xs)) == const
                   for xs in itertools.product(range(-6, 7), repeat=len(coeffs)))
    if solvable:
        assert t.gcd_test(coeffs, const)


@settings(max_examples=300)
@given(small, small, small, small, small, extent, extent,
       st.sampled_from(["<", "=", ">", "*"]))
def test_banerjee_is_sound(a1, a2, b1, b2, const, u1, u2, direction):
    # f = a1*t1 + a2*t2, g = b1*t1' + b2*t2' with loop 1 common (direction), loop 2 free
    ok = t.banerjee_test({1: a1, 2: a2}, {1: b1, 2: b2}, const, {1: direction},
                         {1: u1, 2: u2})
    for x1, y1 in itertools.product(range(u1 + 1), repeat=2):
        rel = "<" if x1 < y1 else ">" if x1 > y1 else "="
        if direction != "*" and rel != direction:
            continue
        for x2, y2 in itertools.product(range(u2 + 1), repeat=2):
            if a1 * x1 + a2 * x2 - b1 * y1 - b2 * y2 == const:
                assert ok, "Banerjee missed a solution"
                return
