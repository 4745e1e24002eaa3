"""Arrays a call overwrites whole go to the device uncopied (``coverage``): which arrays
qualify, and the class of nests around the rule run as Python runs them on every device (the
emulation's uncopied buffers start as all ones: an element left unwritten reads as NaN)."""

import copy

import numpy as np
import pytest

from specializers.loopnest.checking import load_source
from specializers.loopnest.coverage import overwritten

from .test_device import ON_GPU, needs_opencl, run_strict

HEADER = "import math\nfrom specializers.loopnest import LoopKernel\n\n"

#: name -> (kernel body over out, x, n, m, steps; whether ``out`` qualifies)
CASES = {
    "row": ("for i in range(n):\n    out[i, 0] = x[i, 0]", False),
    "whole": ("for i in range(n):\n    for j in range(m):\n        out[i, j] = x[i, j] * 2.0",
              True),
    "transposed loops": ("for j in range(m):\n    for i in range(n):\n"
                         "        out[i, j] = x[i, j] + 1.0", True),
    "shifted range": ("for i in range(1, n + 1):\n    for j in range(m):\n"
                      "        out[i - 1, j] = x[i - 1, j]", True),
    "short": ("for i in range(n - 1):\n    for j in range(m):\n        out[i, j] = 1.0", False),
    "strided": ("for i in range(0, n, 2):\n    for j in range(m):\n        out[i, j] = 1.0",
                False),
    "reversed": ("for i in range(n - 1, -1, -1):\n    for j in range(m):\n"
                 "        out[i, j] = 1.0", False),
    "diagonal": ("for i in range(n):\n    for j in range(m):\n        out[i, i % m] = 1.0",
                 False),
    "triangle": ("for j in range(m):\n    for i in range(j + 1):\n        out[i, j] = 1.0",
                 False),
    "conditional": ("for i in range(n):\n    for j in range(m):\n"
                    "        if x[i, j] > 0.5:\n            out[i, j] = 1.0", False),
    "read too": ("for i in range(n):\n    for j in range(m):\n"
                 "        out[i, j] = 1.0\n        x[i, j] = out[i, j] + x[i, j]", False),
    "accumulated": ("for i in range(n):\n    for j in range(m):\n"
                    "        out[i, j] += x[i, j]", False),
    "time loop": ("for t in range(steps):\n    for i in range(n):\n        for j in range(m):\n"
                  "            out[i, j] = x[i, j] + t", True),
    "early break": ("for i in range(n):\n    for j in range(m):\n        out[i, j] = 1.0\n"
                    "        if x[i, j] > 2.0:\n            break", False),
}


def _kernel(body: str):
    lines = ["class Case(LoopKernel):", "    def kernel(self, out, x, n, m, steps):"]
    lines += ["        " + line for line in body.splitlines()]
    return load_source(HEADER + "\n".join(lines) + "\n", "Case")


def _arguments(n=6, m=5, steps=2, seed=0):
    rng = np.random.default_rng(seed)
    return rng.random((n, m)), rng.random((n, m)), n, m, steps


def _overwritten(Case, args):
    kernel = Case(backend="python")
    kernel.kernel(*copy.deepcopy(args))
    runner = kernel._asp_current.runners[0]
    return overwritten(runner.analysis, runner.last_plan)


@pytest.mark.parametrize("name", list(CASES))
def test_which_arrays_a_call_overwrites_whole(name):
    body, whole = CASES[name]
    assert (_overwritten(_kernel(body), _arguments()) == {"out"}) is whole


def test_the_binding_decides():
    """The same nest qualifies or not as the call's sizes say: out's rows all written (n its
    length) or not; a time loop that runs no step writes nothing."""
    Case = _kernel(CASES["whole"][0])
    assert _overwritten(Case, _arguments()) == {"out"}
    out, x, n, m, steps = _arguments()
    assert _overwritten(Case, (out, x, n - 1, m, steps)) == frozenset()
    Steps = _kernel(CASES["time loop"][0])
    assert _overwritten(Steps, (out, x, n, m, 0)) == frozenset()


def test_an_array_passed_twice_is_read_through_the_other_name():
    Case = _kernel(CASES["whole"][0])
    out, _, n, m, steps = _arguments()
    assert _overwritten(Case, (out, out, n, m, steps)) == frozenset()


DEVICES = [pytest.param("opencl", marks=needs_opencl), "cuda-emulated", ON_GPU]


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("backend", DEVICES)
def test_each_case_runs_as_python_runs_it(name, backend):
    Case = _kernel(CASES[name][0])
    for args in (_arguments(), _arguments(7, 3, 0, seed=1), _arguments(1, 1, 1, seed=2)):
        want = copy.deepcopy(args)
        Case().original_kernel(*want)
        _, got, _ = run_strict(Case, backend, args)
        assert all(np.array_equal(g, w) for g, w in zip(got[:2], want[:2])), name


@pytest.mark.parametrize("backend", DEVICES)
def test_an_array_passed_twice_runs_as_python_runs_it(backend):
    Case = _kernel(CASES["whole"][0])
    out, _, n, m, steps = _arguments()
    want = out.copy()
    Case().original_kernel(want, want, n, m, steps)
    Case(backend=backend, strict=True).kernel(out, out, n, m, steps)
    assert np.array_equal(out, want)


def test_an_overwritten_array_is_not_copied_in_and_its_bytes_are_not_priced(monkeypatch):
    """vadd's output: allocated on the device, not uploaded; the cost model's profile
    uploads the two inputs' bytes only."""
    from specializers.loopnest import device_variants
    from specializers.loopnest.cost.device import device_profile
    from specializers.loopnest.cost.machine import machine
    from specializers.loopnest.typeinfer import infer_types

    Case = _kernel(CASES["whole"][0])
    args = _arguments(40, 30)
    kernel = Case(backend="cuda-emulated", strict=True)
    kernel.kernel(*copy.deepcopy(args))
    target = device_variants.EmulatedCudaTarget
    uploaded, allocated = [], []
    real_up, real_alloc = target.upload, target.allocate
    monkeypatch.setattr(target, "upload", lambda self, a: uploaded.append(a.shape) or
                        real_up(self, a))
    monkeypatch.setattr(target, "allocate", lambda self, a: allocated.append(a.shape) or
                        real_alloc(self, a))
    kernel.kernel(*copy.deepcopy(args))
    assert allocated == [(40, 30)] and sorted(s for s in uploaded if s != (1,)) == [(40, 30)]
    runner = kernel._asp_current.runners[0]
    types, key = runner.signature(runner.last_inputs)
    plan = runner.last_plan
    profile = runner._profile_of((types, key))
    found = device_profile(runner.analysis, plan, infer_types(runner.analysis, types), profile,
                           machine())
    assert found.uploaded == 40 * 30 * 8 and found.downloaded == 40 * 30 * 8
