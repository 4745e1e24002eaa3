"""asp_core.backends.launches: CUDA launches and host loops in compiled code, checked through a
recording launch of cuLaunchKernel's signature (every launch's grid, block and arguments) and
through the host emulation of CUDA, which runs the same compiled code.

The class of inputs: any number of axes (0 to 3), any trip count, first value and step, and
device limits small enough that the grid must be split along any axis."""

import itertools

import cffi
import numpy as np
import pytest

from asp_core.backends import emulation, launches
from asp_core.backends.launches import Arguments, GridLimits, HostLoop

_FFI = cffi.FFI()
_SIGNATURE = ("int32_t(void *, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, "
              "uint32_t, void *, void **, void **)")


class Recorder:
    """A launch of cuLaunchKernel's signature that records each launch: its function, grid,
    block and its int64 arguments at the time of the launch (``nargs`` of them, or
    ``nargs[function]``)."""

    def __init__(self, nargs: int | dict[int, int], fail_at: int = -1):
        self.launches = []
        self.fail_at = fail_at

        def launch(function, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
            function = int(_FFI.cast("uintptr_t", function))
            count = nargs[function] if isinstance(nargs, dict) else nargs
            args = [_FFI.cast("int64_t *", params[k])[0] for k in range(count)]
            self.launches.append((function, (gx, gy, gz), (bx, by, bz), args))
            return 700 if len(self.launches) - 1 == self.fail_at else 0

        self._callback = _FFI.callback(_SIGNATURE, launch)
        self.address = int(_FFI.cast("uintptr_t", self._callback))


def _covered(record, naxes: int, base: int) -> list[tuple]:
    """The iterations (one value per axis) the threads of the recorded launches run: thread g
    along an axis runs first + g * step where g is below the launch's trip count."""
    _, grid, block, args = record
    per_axis = []
    for a in range(naxes):
        lo, step, n = args[base + 3 * a:base + 3 * a + 3]
        threads = grid[a] * block[a]
        assert threads >= n, "a launch that does not cover its trip count"
        per_axis.append([lo + g * step for g in range(n)])
    return list(itertools.product(*per_axis))


def _check_limits(record, limits: GridLimits) -> None:
    _, grid, block, _ = record
    assert np.prod(block) <= limits.threads
    for a in range(3):
        assert 1 <= block[a] <= limits.block[a] and 1 <= grid[a] <= limits.grid[a]


def _cases(count: int, seed: int):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        naxes = int(rng.integers(0, 4))
        limits = GridLimits(int(2 ** rng.integers(0, 8)),
                            tuple(int(2 ** rng.integers(0, 4)) for _ in range(3)),
                            tuple(int(rng.integers(1, 5)) for _ in range(3)))
        sizes = [int(rng.integers(1, 30)) for _ in range(naxes)]
        firsts = [int(rng.integers(-10, 10)) for _ in range(naxes)]
        steps = [int(rng.choice([-3, -1, 1, 2, 5])) for _ in range(naxes)]
        yield naxes, limits, sizes, firsts, steps


@pytest.mark.parametrize("seed", range(4))
def test_a_launch_runs_each_iteration_once_within_the_limits(seed):
    """Generated launches (0 to 3 axes, trip counts up to 29, grids of 1 to 4 blocks a side at
    most): the blocks stay within the limits, each iteration runs on exactly one thread, and
    the arguments hold their values again after the launch."""
    for naxes, limits, sizes, firsts, steps in _cases(60, seed):
        base = 2
        values = [np.int64(11), np.int64(12)]
        for a in range(naxes):
            values += [np.int64(firsts[a]), np.int64(steps[a]), np.int64(sizes[a])]
        arguments = Arguments(values)
        recorder = Recorder(len(values))
        assert launches.cuda_launch(recorder.address, 42, limits, sizes, arguments,
                                    base=base) == 0
        covered = []
        for record in recorder.launches:
            _check_limits(record, limits)
            assert record[0] == 42 and record[3][:2] == [11, 12]
            covered += _covered(record, naxes, base)
        want = list(itertools.product(*[[f + g * s for g in range(n)]
                                        for f, s, n in zip(firsts, steps, sizes)]))
        assert sorted(covered) == sorted(want), (limits, sizes)
        assert [arguments.int64(k) for k in range(len(values))] == [int(v) for v in values]


def test_the_block_spans_a_short_x_axis_and_gives_its_threads_to_y():
    """Two columns by 70,000 rows (a nest whose fastest loop has two iterations): blocks of 2 x
    64 threads, 1094 blocks along y; one launch, within a GPU's limits (65535 along y)."""
    values = [np.int64(0), np.int64(1), np.int64(2), np.int64(0), np.int64(1), np.int64(70000)]
    recorder = Recorder(len(values))
    launches.cuda_launch(recorder.address, 1, launches.CUDA_LIMITS, [2, 70000],
                         Arguments(values), base=0)
    assert [(grid, block) for _, grid, block, _ in recorder.launches] == \
        [((1, 1094, 1), (2, 64, 1))]


def test_a_long_y_axis_is_split_at_the_grid_limit():
    """One column by 10,000,000 rows: 65535 blocks of 128 rows cover 8,388,480 of them; a
    second launch covers the rest, from its own first value."""
    values = [np.int64(0), np.int64(1), np.int64(1), np.int64(5), np.int64(2),
              np.int64(10_000_000)]
    recorder = Recorder(len(values))
    launches.cuda_launch(recorder.address, 1, launches.CUDA_LIMITS, [1, 10_000_000],
                         Arguments(values), base=0)
    assert [(grid, block, args[3:]) for _, grid, block, args in recorder.launches] == [
        ((1, 65535, 1), (1, 128, 1), [5, 2, 8_388_480]),
        ((1, 12590, 1), (1, 128, 1), [5 + 2 * 8_388_480, 2, 10_000_000 - 8_388_480])]


def test_work_groups_and_single_threads():
    """A kernel of fixed work-groups runs in whole blocks of them; one without axes on one
    thread; one that cannot be split (no axis arguments) and would need to be is refused."""
    recorder = Recorder(1)
    args = Arguments([np.int64(0)])
    launches.cuda_launch(recorder.address, 1, launches.CUDA_LIMITS, [4 * 128], args, group=128)
    launches.cuda_launch(recorder.address, 1, launches.CUDA_LIMITS, [], args)
    assert [(grid, block) for _, grid, block, _ in recorder.launches] == \
        [((4, 1, 1), (128, 1, 1)), ((1, 1, 1), (1, 1, 1))]
    tiny = GridLimits(128, (1024, 1024, 64), (2, 1, 1))
    assert launches.cuda_launch(recorder.address, 1, tiny, [3 * 128], args, group=128) == \
        launches.CANNOT_SPLIT


def test_an_empty_axis_launches_nothing_and_an_error_stops_the_launches():
    recorder = Recorder(3)
    values = [np.int64(0), np.int64(1), np.int64(0)]
    assert launches.cuda_launch(recorder.address, 1, launches.CUDA_LIMITS, [0], Arguments(values),
                                base=0) == 0
    assert recorder.launches == []
    tiny = GridLimits(2, (2, 2, 2), (1, 1, 1))
    failing = Recorder(3, fail_at=1)
    values = [np.int64(0), np.int64(1), np.int64(9)]
    assert launches.cuda_launch(failing.address, 1, tiny, [9], Arguments(values), base=0) == 700
    assert len(failing.launches) == 2


def test_a_host_loop_launches_each_kernel_per_iteration_at_its_bounds():
    """t = 3, 5, 7 (three iterations): kernel 0 over i in range(t, 10) and kernel 1, of two
    axes, over (j, i) in range(0, t) x range(t, 10); the loop variable passed to each; an
    iteration whose extent is empty launches nothing of that kernel."""
    loop = HostLoop(trips=4, first=3, step=2, naxes=(1, 2), base=(1, 1), host=(4, 7),
                    forms=(3, 2, 7, -2, 1,            # kernel 0: i from 3 + 2t, 7 - 2t of them
                           0, 0, 3, 2, 1,             # kernel 1, x: j in range(0, 3 + 2t)
                           3, 2, 7, -2, 1))           # kernel 1, y: i as kernel 0's
    first = Arguments([np.int64(-1)] + [np.int64(0)] * 4)
    second = Arguments([np.int64(-1)] + [np.int64(0)] * 7)
    recorder = Recorder({10: 5, 20: 8})
    assert launches.cuda_host_loop(recorder.address, [10, 20], [first, second],
                                   launches.CUDA_LIMITS, loop) == 0
    seen = []
    for function, grid, block, args in recorder.launches:
        if function == 10:
            seen.append((10, args[4], _covered((0, grid, block, args[:4]), 1, 1)))
        else:
            seen.append((20, args[7], _covered((0, grid, block, args), 2, 1)))
    want = []
    for t, value in enumerate((3, 5, 7, 9)):
        i = list(range(3 + 2 * t, 10))
        if not i:
            continue
        want.append((10, value, [(x,) for x in i]))
        want.append((20, value, [(j, x) for j in range(3 + 2 * t) for x in i]))
    assert seen == want


SCALE_ROWS = """
extern "C" __global__ void rows(double *x, long long ncol, long long lo, long long step,
                                long long n, long long scale) {
    long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= n) return;
    long long i = lo + g * step;
    for (long long j = 0; j < ncol; j++) x[i * ncol + j] = x[i * ncol + j] * scale + i;
}
"""


def test_the_emulation_runs_the_compiled_launches():
    """The emulated module's launch (cuLaunchKernel's signature) runs its kernel for the
    compiled launcher, split into launches of one block where the limits say so."""
    module = emulation.emulate_cuda_module(SCALE_ROWS)
    x = np.arange(30.0).reshape(10, 3)
    want = x.copy()
    for i in range(1, 10, 2):
        want[i] = want[i] * 3 + i
    tiny = GridLimits(2, (2, 1, 1), (1, 1, 1))
    arguments = Arguments([x.ctypes.data, np.int64(3), np.int64(1), np.int64(2), np.int64(5),
                           np.int64(3)])
    assert launches.cuda_launch(module.launch_address(), module.function_address("rows"), tiny,
                                [5], arguments, base=2) == 0
    assert np.array_equal(x, want)


def test_the_python_block_shape_is_the_compiled_one():
    """``block_shape`` (Python: OpenCL's launches outside host loops) and the compiled rule
    (CUDA's launches, every host loop) give the same blocks: generated sizes and limits."""
    rng = np.random.default_rng(17)
    for _ in range(500):
        naxes = int(rng.integers(0, 4))
        limits = GridLimits(int(2 ** rng.integers(0, 11)),
                            tuple(int(2 ** rng.integers(0, 11)) for _ in range(3)),
                            launches.CUDA_LIMITS.grid)
        sizes = [int(rng.choice([1, 2, 3, 7, 64, 100, 129, 5000, 70000])) for _ in range(naxes)]
        assert launches.block_shape(sizes, limits) == \
            launches.compiled_block_shape(sizes, limits), (sizes, limits)
