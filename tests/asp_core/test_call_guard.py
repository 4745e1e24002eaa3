"""asp_core.call_guard: the native guards say True only for arguments that pass every check.

Each kind of check is tested on values that pass and on the nearest values that must not; the
memory test is compared with ``numpy.may_share_memory`` on generated views of one buffer.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from asp_core import call_guard as cg

pytestmark = pytest.mark.skipif(cg.unavailable() is not None,
                                reason=f"call guards cannot be built here: {cg.unavailable()}")


def guard(*checks, disjoint=()):
    made = cg.make_guard(list(checks), list(disjoint))
    assert made is not None
    return made


def test_scalars():
    ints = guard(cg.int64())
    assert ints((3,)) and ints((-2**63,)) and ints((2**63 - 1,))
    assert not ints((2**63,)) and not ints((True,)) and not ints((3.0,)) and not ints((np.int64(3),))
    equal = guard(cg.int_equal(7))
    assert equal((7,)) and not equal((8,)) and not equal((2**70,)) and not equal((7.0,))
    floats = guard(cg.any_float())
    assert floats((1.5,)) and not floats((1,)) and not floats((np.float64(1.5),))
    same = guard(cg.float_equal(0.5))
    assert same((0.5,)) and not same((0.25,)) and not same((float("nan"),))
    nan = guard(cg.float_equal(float("nan")))
    assert not nan((float("nan"),))  # NaN equals nothing: the slow path decides
    typed = guard(cg.type_is(np.float32))
    assert typed((np.float32(1),)) and not typed((np.float64(1),))
    marker = object()
    identity = guard(cg.is_object(marker))
    assert identity((marker,)) and not identity((object(),))


def test_the_number_of_arguments_must_match():
    g = guard(cg.int64(), cg.int64())
    assert g((1, 2)) and not g((1,)) and not g((1, 2, 3)) and not g([1, 2])


def test_arrays():
    a = np.zeros((4, 5))
    g = guard(cg.array(a.dtype, 2, True, True, (4, 5)))
    assert g((a,)) and g((np.ones((4, 5)),))
    for other in (np.zeros((5, 4)), np.zeros((4, 5), np.float32), np.zeros(20),
                  np.asfortranarray(np.zeros((4, 5))), np.zeros((4, 10))[:, ::2],
                  np.zeros((4, 5)).view(np.matrix), [[0.0] * 5] * 4, 1.0):
        assert not g((other,)), other
    readonly = np.zeros((4, 5))
    readonly.flags.writeable = False
    assert not g((readonly,))
    assert guard(cg.array(a.dtype, 2, True, False, (4, 5)))((readonly,))
    strided = guard(cg.array(a.dtype, 2, False, True, (4, 5)))
    assert strided((np.zeros((4, 10))[:, ::2],)) and not strided((a,))


def test_a_changed_array_is_seen():
    a = np.zeros(6)
    g = guard(cg.array(a.dtype, 1, True, True, (6,)))
    assert g((a,))
    a.shape = (2, 3)
    assert not g((a,))
    b = np.zeros(6)
    b.dtype = np.int64  # same bytes, another dtype
    assert not g((b,))
    b.dtype = np.float64
    assert g((b,))
    b.flags.writeable = False
    assert not g((b,))


def test_disjoint_arrays_as_numpy_says():
    """Random views of one buffer (offsets, steps, negative steps, 2-D, empty): the guard's
    overlap answer is numpy.may_share_memory's."""
    rng = random.Random(5)
    base = np.zeros(64)
    grid = base.reshape(8, 8)

    def view():
        if rng.random() < 0.3:
            r0, c0 = rng.randrange(8), rng.randrange(8)
            r1, c1 = rng.randrange(r0, 9), rng.randrange(c0, 9)
            step = rng.choice((1, 2, -1))
            v = grid[r0:r1, c0:c1][:, ::step]
        else:
            start, stop = rng.randrange(64), rng.randrange(65)
            step = rng.choice((1, 2, 3, -1, -2))
            v = base[start:stop:step] if step > 0 else base[stop:start:step]
        return v

    checked = 0
    for _ in range(600):
        x, y = view(), view()
        g = guard(cg.array(x.dtype, x.ndim, x.flags.c_contiguous, True, x.shape),
                  cg.array(y.dtype, y.ndim, y.flags.c_contiguous, True, y.shape),
                  disjoint=[(0, 1)])
        assert g((x, y)) == (not np.may_share_memory(x, y)), (x.__array_interface__,
                                                              y.__array_interface__)
        checked += 1
    assert checked == 600
    same = np.zeros(3)
    g = guard(cg.array(same.dtype, 1, True, True, (3,)), cg.array(same.dtype, 1, True, True, (3,)),
              disjoint=[(0, 1)])
    assert not g((same, same)) and g((same, np.zeros(3)))


def test_malformed_specs_are_refused():
    with pytest.raises(ValueError):
        cg.make_guard([cg.int64()], [(0, 0)])  # a pair of non-arrays
    with pytest.raises((ValueError, TypeError)):
        cg.make_guard([cg.Check(cg.ARRAY, ("float64",))], [])


def test_a_counting_guard_counts_the_calls_it_vouches_for():
    """``count``: a passing call answers True where nothing is due, the calls left after it
    where none of the mask's bits is set (it is to be timed), -1 once none is left; a failing
    call answers False and is not counted; ``take`` counts without checking; ``left`` reads
    the count; a negative count stops counting."""
    g = guard(cg.int64())
    assert cg.left(g) == -1 and g((1,)) is True            # not counting: True, as before
    assert cg.count(g, 9, 3)
    answers = []
    for x in range(12):
        answers.append(g(("no",)))                           # refused: not counted
        answers.append(g((x,)))
    assert answers[0::2] == [False] * 12
    assert answers[1::2] == [8, True, True, True, 4, True, True, True, 0, -1, -1, -1]
    assert cg.left(g) == 0
    assert cg.count(g, 5, 1) and cg.take(g) == 4 and cg.take(g) is True and cg.left(g) == 3
    assert not cg.count(g, -1, 0) and g((1,)) is True and cg.left(g) == -1
    assert not cg.count(lambda args: True, 5, 1)             # not native: the caller counts
    with pytest.raises(ValueError):
        cg.count(g, 5, -1)
