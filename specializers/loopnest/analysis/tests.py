"""The classical dependence tests (Allen and Kennedy, ch. 3), as small pure functions.

Every test decides whether two references ``f(t)`` (statement S1 at iteration ``t``) and
``g(t')`` (statement S2 at ``t'``) can touch the same element, in *normalized* iteration space:
each loop counts its iterations ``0 .. t_max`` in execution order, whatever its start and step.
A direction ``<`` for a loop means S1's iteration comes first (``t < t'``), ``>`` that S2's
does, ``=`` the same iteration. Each test either proves independence (returns ``None``) or
returns what it learned; a test that cannot decide reports a dependence.
"""

from __future__ import annotations

from math import gcd
from typing import Iterable, Mapping

LT, EQ, GT = "<", "=", ">"
ANY = frozenset((LT, EQ, GT))


def ziv_test(c1: int, c2: int) -> bool:
    """ZIV (zero index variables): ``c1 == c2`` is the only way both constants meet.

    >>> ziv_test(3, 3), ziv_test(3, 4)
    (True, False)
    """
    return c1 == c2


def strong_siv_test(a: int, c1: int, c2: int, t_max: int) -> int | None:
    """Strong SIV: ``a*t + c1 == a*t' + c2`` (same nonzero coefficient ``a``).

    The dependence distance ``t' - t = (c1 - c2) / a`` must be an integer no larger in
    magnitude than the loop's extent. Returns the distance, or None (independent).

    >>> strong_siv_test(1, 8, 0, 31)      # A[i + 8] vs A[i] over 32 iterations
    8
    >>> strong_siv_test(1, 64, 0, 31) is None, strong_siv_test(2, 1, 0, 10) is None
    (True, True)
    """
    diff = c1 - c2
    if diff % a:
        return None
    distance = diff // a
    return distance if abs(distance) <= t_max else None


def direction_of_distance(distance: int) -> str:
    return LT if distance > 0 else GT if distance < 0 else EQ


def weak_zero_siv_test(a: int, c1: int, c2: int, t_max: int, zero_in_source: bool
                       ) -> frozenset[str] | None:
    """Weak-zero SIV: one side does not vary with the loop (``a*t + c1 == c2``).

    The varying side meets the constant at the single iteration ``t0 = (c2 - c1) / a``, which
    must be an integer within ``[0, t_max]``; the other side may be at any iteration. Returns
    the possible directions (``t0`` first or last limits them), or None.
    ``zero_in_source``: the constant side is S1's reference (so ``t0`` is S2's iteration).

    >>> sorted(weak_zero_siv_test(1, 0, 0, 9, False))    # A[i] vs A[0]: S1 meets it at i = 0
    ['<', '=']
    >>> weak_zero_siv_test(2, 0, 5, 9, False) is None     # 2*i never equals 5
    True
    """
    diff = c2 - c1
    if diff % a:
        return None
    t0 = diff // a
    if not 0 <= t0 <= t_max:
        return None
    # t0 is the iteration of the varying side; the other side is anywhere in [0, t_max].
    other_before = t0 < t_max   # the other side's iteration can be after t0
    other_after = t0 > 0        # ... or before it
    dirs = {EQ}
    if zero_in_source:          # S1 constant (any t), S2 varying at t' = t0
        if other_after:
            dirs.add(LT)        # t < t0 = t'
        if other_before:
            dirs.add(GT)
    else:                       # S1 varying at t = t0, S2 anywhere
        if other_before:
            dirs.add(LT)        # t = t0 < t'
        if other_after:
            dirs.add(GT)
    return frozenset(dirs)


def weak_crossing_siv_test(a: int, c1: int, c2: int, t_max: int) -> frozenset[str] | None:
    """Weak-crossing SIV: ``a*t + c1 == -a*t' + c2``, i.e. ``t + t' = (c2 - c1) / a``.

    Dependences cross the point ``(c2 - c1) / (2a)``. The sum must be an integer in
    ``[0, 2*t_max]``; directions follow from where the crossing lies.

    >>> sorted(weak_crossing_siv_test(1, 0, 9, 9))       # A[i] vs A[9 - i]
    ['<', '>']
    >>> sorted(weak_crossing_siv_test(1, 0, 8, 9))
    ['<', '=', '>']
    """
    diff = c2 - c1
    if diff % a:
        return None
    total = diff // a  # t + t'
    if not 0 <= total <= 2 * t_max:
        return None
    dirs = set()
    if total % 2 == 0:
        dirs.add(EQ)
    lo = max(0, total - t_max)  # the smallest t with t' = total - t in range
    if lo < total / 2:
        dirs.add(LT)            # t < t'
    hi = min(t_max, total)
    if hi > total / 2:
        dirs.add(GT)
    return frozenset(dirs) if dirs else None


def gcd_test(coefficients: Iterable[int], constant: int) -> bool:
    """GCD test: ``sum(c_k * x_k) == constant`` has an integer solution only if the GCD of
    the coefficients divides the constant (bounds ignored).

    >>> gcd_test([2, -2], 1), gcd_test([2, 4], 6), gcd_test([], 0)
    (False, True, True)
    """
    g = 0
    for c in coefficients:
        g = gcd(g, c)
    if g == 0:
        return constant == 0
    return constant % g == 0


def pair_range(a: int, b: int, t_max: int, direction: str) -> tuple[int, int] | None:
    """Min and max of ``a*x - b*y`` over the region of (x, y) = (t, t') allowed by
    ``direction`` with ``0 <= x, y <= t_max``; None if the region is empty."""
    u = t_max
    if u < 0:
        return None
    if direction == EQ:
        points = [(0, 0), (u, u)]
    elif direction == LT:
        if u < 1:
            return None
        points = [(0, 1), (0, u), (u - 1, u)]
    elif direction == GT:
        if u < 1:
            return None
        points = [(1, 0), (u, 0), (u, u - 1)]
    else:
        points = [(0, 0), (0, u), (u, 0), (u, u)]
    values = [a * x - b * y for x, y in points]
    return min(values), max(values)


def banerjee_test(f: Mapping[int, int], g: Mapping[int, int], constant: int,
                  directions: Mapping[int, str], t_max: Mapping[int, int]) -> bool:
    """Banerjee inequalities: can ``sum f[l]*t_l - sum g[l]*t'_l == constant`` hold within the
    loop bounds under the given direction per common loop (``*`` or absent: any)?

    ``f`` and ``g`` map loop ids to coefficients; loops in ``directions`` are common to both
    references, the others belong to one side only. Bounds are rectangular (``t_max`` per
    loop, an upper bound over the whole iteration space, which keeps the test sound for
    triangular loops). Returns False only if the equation cannot hold.

    >>> banerjee_test({1: 1}, {1: 1}, 1, {1: "<"}, {1: 9})   # i == i' + 1 with i < i'
    False
    >>> banerjee_test({1: 1}, {1: 1}, 1, {1: ">"}, {1: 9})
    True
    """
    lo = hi = 0
    loops = set(f) | set(g)
    for loop in loops:
        a, b = f.get(loop, 0), g.get(loop, 0)
        u = t_max[loop]
        if loop in directions:
            r = pair_range(a, b, u, directions[loop])
            if r is None:
                return False
        else:
            ra = pair_range(a, 0, u, "*") if loop in f else (0, 0)
            rb = pair_range(0, b, u, "*") if loop in g else (0, 0)
            if ra is None or rb is None:
                return False
            r = (ra[0] + rb[0], ra[1] + rb[1])
        lo += r[0]
        hi += r[1]
    return lo <= constant <= hi
