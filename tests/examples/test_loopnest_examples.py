"""The twelve ALPyNA benchmark programs: each against its NumPy formulation and plain Python,
specialized in strict mode (plain-Python executor, the order checkers, serial C and OpenMP C),
at small sizes. Also the shared harness."""

import importlib

import numpy as np
import pytest

from examples.harness import ExampleResult, run_example, same

SMALL = {
    "vadd": dict(n=1000), "saxpy": dict(n=1000), "hilbert": dict(n=17),
    "jacobi": dict(n=23), "conway": dict(n=19), "mandelbrot": dict(n=16, max_iter=20),
    "black_scholes": dict(n=500), "gemm": dict(n=9), "gemver": dict(n=11),
    "syr2k": dict(n=9, m=7), "conv2d": dict(n=13, k=3),
    "fbcorr": dict(batch=2, channels=2, size=8, nfilters=3, fsize=3),
}
KERNELS = {"vadd": "VAdd", "saxpy": "Saxpy", "hilbert": "Hilbert", "jacobi": "Jacobi",
           "conway": "Conway", "mandelbrot": "Mandelbrot", "black_scholes": "BlackScholes",
           "gemm": "Gemm", "gemver": "Gemver", "syr2k": "Syr2k", "conv2d": "Conv2D",
           "fbcorr": "FBCorr"}


@pytest.mark.parametrize("name", sorted(SMALL))
def test_example_matches_numpy_and_python(name):
    module = importlib.import_module(f"examples.{name}")
    cls = getattr(module, KERNELS[name])
    result = run_example(name, lambda backend=None: cls(backend="python", strict=True),
                         module.make_inputs(**SMALL[name]), module.numpy_reference)
    assert result.matches_numpy, result.line()
    assert result.matches_python, result.line()
    assert result.backends and all(b == "python" for b in result.backends)


@pytest.mark.parametrize("backend", ["c", "openmp"])
@pytest.mark.parametrize("name", sorted(SMALL))
def test_example_compiled(name, backend):
    """Each example compiled: every nest runs on the backend, with no fallback."""
    module = importlib.import_module(f"examples.{name}")
    cls = getattr(module, KERNELS[name])
    result = run_example(name, lambda backend=None: cls(backend=backend, strict=True),
                         module.make_inputs(**SMALL[name]), module.numpy_reference,
                         backend=backend)
    assert result.matches_python and result.matches_numpy, result.line()
    assert result.backends and all(b == backend for b in result.backends), result.backends


@pytest.mark.parametrize("order", ["python-shuffled", "python-reversed"])
@pytest.mark.parametrize("name", sorted(SMALL))
def test_example_in_any_parallel_order(name, order):
    """The order checker: parallel loops reversed or shuffled give plain Python's results."""
    module = importlib.import_module(f"examples.{name}")
    cls = getattr(module, KERNELS[name])
    result = run_example(name, lambda backend=None: cls(backend=order, strict=True),
                         module.make_inputs(**SMALL[name]), module.numpy_reference)
    assert result.matches_python and result.matches_numpy, result.line()
    assert result.backends and all(b == order for b in result.backends)


@pytest.mark.parametrize("name", sorted(SMALL))
def test_example_main_runs(name):
    module = importlib.import_module(f"examples.{name}")
    result = module.main(**SMALL[name], backend="python")
    assert isinstance(result, ExampleResult) and result.matches_numpy and result.matches_python


def test_same():
    assert same((1.0, np.array([1.0, np.nan])), (1.0 + 1e-12, np.array([1.0, np.nan])))
    assert not same(np.array([1, 2]), np.array([1, 3]))
    assert not same(np.zeros(2), np.zeros(3))


def test_the_main_job_times_medians_of_several_calls(monkeypatch):
    """Warm calls and plain-Python calls are each the median of several (so two runs agree);
    the first call is timed apart."""
    import examples.harness as harness
    from examples.vadd import VAdd, make_inputs

    seen = []
    real = harness.median_time

    def spy(call, inputs, calls, budget_s):
        out = real(call, inputs, calls, budget_s)
        seen.append(out[1])
        return out

    monkeypatch.setattr(harness, "median_time", spy)
    result = run_example("vadd", VAdd, make_inputs(1000))
    assert result.calls == tuple(seen) and result.calls[0] == harness.WARM_CALLS
    assert result.calls[1] >= 2 and result.first_call_s > 0
    assert result.matches_python
