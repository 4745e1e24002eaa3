"""random_nests: reproducible random affine nests whose subscripts stay in range."""

import numpy as np

from specializers.loopnest.checking import load_source
from specializers.loopnest.checking.random_nests import SIZE, make_arrays, random_nest
from specializers.loopnest.pipeline import RejectedNest, analyse_kernel


def test_the_same_seed_gives_the_same_nest_and_arrays():
    a, b = random_nest(7), random_nest(7)
    assert a == b
    assert all(np.array_equal(x, y) for x, y in zip(make_arrays(a).values(),
                                                   make_arrays(b).values()))
    assert len({random_nest(seed).source for seed in range(20)}) == 20


def test_nests_are_accepted_and_run_in_range_as_plain_python():
    for seed in range(40):
        nest = random_nest(seed)
        Kernel = load_source(nest.source)
        analysis = analyse_kernel(Kernel.kernel.__wrapped__)
        assert len(analysis.nests) == 1 and not isinstance(analysis.nests[0], RejectedNest)
        depth = nest.source.count(" in range(")
        assert 2 <= depth, nest.source
        arrays = make_arrays(nest)
        assert all(a.shape == (SIZE,) * nd for (name, nd), a in zip(nest.arrays, arrays.values()))
        # no IndexError from Python: every subscript (negative ones too) is in range
        Kernel(backend="python").original_kernel(**arrays, **nest.args)
