"""The papers' examples, with the schedules the papers describe (../shared/papers/).

alpyna-cost-model.txt, Listing 1, with (im, jm, k) = (32, 1024, 64), (32, 1024, 8) and
(16, 1024, 16); alpyna-staged-dependence.txt, Listing 2, with (p1, p2, p3) = (0, 1, -2),
(1, 1, -1) and (10, 99, -1) over the domain (10, 100, 100, 100). Each is checked on the
analysis alone (the papers' sizes) and, at a smaller size, by running the kernel with its
parallel loops shuffled against plain Python.
"""

import copy

import numpy as np
import pytest

from specializers.loopnest import LoopKernel

from .helpers import identical


class Listing1(LoopKernel):
    def kernel(self, arg_a, k, limits):
        im, jm = limits
        for i in range(0, im, 1):
            for j in range(0, jm, 1):
                # Statement - S1
                arg_a[i + k, j] = arg_a[i, j] + 4
                # Statement - S2
                arg_a[i + 16, j] = arg_a[i, j]


class Listing2(LoopKernel):
    def kernel(self, arg_a, arg_b, constants, limits):
        im, jm, km, mm = limits
        p1, p2, p3 = constants
        for i in range(0, im, 1):
            for j in range(2, jm, 1):
                for k in range(0, km, 1):
                    for m in range(0, mm, 1):
                        # Statement - S1
                        arg_a[i + p1, j, k, m] = arg_a[i, j, k, m] + 4 + arg_b[i]
                        # Statement - S2
                        arg_a[i, j + p2, k, m] = arg_a[i, j + p3, k, m] + 43


def schedule(kernel, *args):
    """(sequential, parallel) per statement, as sets of loop names."""
    from specializers.loopnest.pipeline import analyse_kernel

    call = kernel.last_call
    return [(set(s.sequential), set(s.parallel)) for s in call.nests[0].statements]


@pytest.mark.parametrize("im, jm, k, expected", [
    # k > im: every instance of S1 may run at once; S2 runs i sequentially, j in parallel
    (32, 1024, 64, [(set(), {"i", "j"}), ({"i"}, {"j"})]),
    # k < im: S1 too must run i sequentially
    (32, 1024, 8, [({"i"}, {"j"}), ({"i"}, {"j"})]),
    # (16, 1024) with k = 16: all instances of both statements may run in parallel
    (16, 1024, 16, [(set(), {"i", "j"}), (set(), {"i", "j"})]),
])
def test_cost_model_listing_1(im, jm, k, expected):
    arg_a = np.zeros((im + max(k, 16), jm))
    kernel = Listing1(backend="python", strict=True)
    kernel.kernel(arg_a, k, (im, jm))
    assert schedule(kernel) == expected


@pytest.mark.parametrize("constants, expected", [
    # cyclic dependences between S1 and S2 on j: j sequential, (i, k, m) parallel
    ((0, 1, -2), [({"j"}, {"i", "k", "m"}), ({"j"}, {"i", "k", "m"})]),
    # S1 parallel along j, k, m with i sequential; S2 along k, m with i, j sequential
    ((1, 1, -1), [({"i"}, {"j", "k", "m"}), ({"i", "j"}, {"k", "m"})]),
    # both statements parallel along all four loops
    ((10, 99, -1), [(set(), {"i", "j", "k", "m"}), (set(), {"i", "j", "k", "m"})]),
])
def test_staged_dependence_listing_2(constants, expected):
    limits = (10, 100, 100, 100)
    arg_a = np.zeros((20, 200, 100, 100), dtype=np.float32)
    from specializers.loopnest.pipeline import analyse_kernel

    nest = analyse_kernel(Listing2.kernel.__wrapped__).nests[0]
    values = dict(arg_a=arg_a, arg_b=np.zeros(10), im=10, jm=100, km=100, mm=100,
                  p1=constants[0], p2=constants[1], p3=constants[2])
    values.update({v: None for v in nest.names.outputs})
    plan = nest.plan(nest.binder.key(tuple(values[n] for n in nest.names.inputs)))
    got = [(set(s.sequential), set(s.parallel)) for s in plan.schedule.statements]
    assert got == expected


@pytest.mark.parametrize("constants", [(0, 1, -2), (1, 1, -1), (10, 99, -1)])
@pytest.mark.parametrize("order", ["python-shuffled", "python-reversed"])
def test_listing_2_runs_correctly_in_any_parallel_order(constants, order):
    limits = (4, 8, 3, 3)
    rng = np.random.default_rng(1)
    arg_a = rng.random((16, 110, 3, 3))
    args = (arg_a, rng.random(4), constants, limits)
    checked = Listing2(backend=order, strict=True)
    got = copy.deepcopy(args)
    checked.kernel(*got)
    want = copy.deepcopy(args)
    checked.original_kernel(*want)
    assert identical(got, want)
    assert checked.last_call.nests[0].backend == order
