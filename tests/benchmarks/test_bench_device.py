"""benchmarks.bench_device's host-loop figure: its kernel runs as the original does on every
backend it times, and each cost comes out a number (no timing is asserted: figures belong in
the benchmark's output)."""

import math

import numpy as np

from benchmarks.bench_device import TwoSweeps, host_loop_cost
from tests.specializers.loopnest.test_device import needs_opencl


@needs_opencl
def test_the_host_loop_kernel_is_right_and_its_costs_are_measured():
    for backend in ("opencl", "cuda-emulated"):
        a, b = np.arange(16.0), np.zeros(16)
        want_a, want_b = a.copy(), b.copy()
        TwoSweeps(backend=backend, strict=True).kernel(a, b, 5, 16)
        TwoSweeps().original_kernel(want_a, want_b, 5, 16)
        assert np.array_equal(a, want_a) and np.array_equal(b, want_b)
    costs = host_loop_cost(1)
    assert list(costs) == ["opencl, compiled host loop", "opencl, loop in Python",
                           "cuda-emulated, compiled host loop", "cuda-emulated, loop in Python"]
    assert all(math.isfinite(seconds) for seconds in costs.values())
