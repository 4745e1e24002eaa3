"""rollback: after an exception, every backend leaves exactly what the original code leaves,
whatever order its schedule runs the nest in (distributed or interchanged loops, the order
checkers; OpenMP threads with ``exact_errors``), and a nest inside ``try`` leaves Python's
scalars; without ``exact_errors`` OpenMP keeps its stated guarantee."""

import copy
import re

import numpy as np
import pytest

from specializers.loopnest.checking.random_nests import random_nest
from specializers.loopnest.pipeline import analyse_kernel
from specializers.loopnest.rollback import in_source_order

from .generators import load_kernel
from .helpers import identical, random_kernel

BACKENDS = ["c", "openmp", "python", "python-reversed", "python-shuffled", None]
HEADER = "import math\nimport numpy as np\nfrom specializers.loopnest import LoopKernel\n\n\n"


def kernel_class(body: str, params: str):
    lines = "\n".join("        " + line for line in body.strip("\n").splitlines())
    return load_kernel(f"{HEADER}class Kernel(LoopKernel):\n"
                       f"    def kernel(self, {params}):\n{lines}\n")[0]


def outcome(call):
    try:
        return ("ok", call())
    except (ArithmeticError, LookupError, ValueError, TypeError) as exc:
        return ("error", type(exc))


def assert_leaves_what_python_leaves(Kernel, backend, make_args):
    got_args, want_args = make_args(), make_args()
    kernel = Kernel(backend=backend, strict=True, exact_errors=True)
    got = outcome(lambda: kernel.kernel(*got_args))
    want = outcome(lambda: Kernel().original_kernel(*want_args))
    assert got == want, (backend, got, want)
    assert identical(got_args, want_args), (backend, got_args, want_args)
    return got


DISTRIBUTED = kernel_class("""
for i in range(1, n):
    A[i] = A[i - 1] + 1.0          # carried: its own sequential loop
    B[i] = math.sqrt(B[i] - 5.0)   # parallel; raises at i = 3
""", "A, B, n")

INTERCHANGED = kernel_class("""
for j in range(m):
    for i in range(n):
        A[i, j] = math.log(A[i, j] + 1.0) + A[i, j]
""", "A, n, m")

GUARDED = kernel_class("""
s = 0.0
i = -1
try:
    for i in range(n):
        s += math.sqrt(A[i])
except ValueError:
    pass
return s, i
""", "A, n")


def test_the_reproducer_schedules_are_reordered():
    for Kernel, values in ((DISTRIBUTED, dict(A=np.zeros(8), B=np.zeros(8), n=8)),
                           (INTERCHANGED, dict(A=np.zeros((3, 4)), n=3, m=4))):
        analysis = analyse_kernel(Kernel.kernel.__wrapped__).nests[0]
        inputs = [values.get(n) for n in analysis.names.inputs]
        plan = analysis.plan(analysis.binder.key(inputs))
        assert not in_source_order(plan.schedule, analysis.sequential)
        assert in_source_order(analysis.sequential, analysis.sequential)


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_error_in_a_distributed_nest(backend):
    got = assert_leaves_what_python_leaves(
        DISTRIBUTED, backend, lambda: (np.zeros(8), np.array([9.0, 9, 9, 1, 9, 9, 9, 9]), 8))
    assert got == ("error", ValueError)


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_error_in_an_interchanged_nest(backend):
    got = assert_leaves_what_python_leaves(
        INTERCHANGED, backend,
        lambda: (np.array([[1.0, 2, 3, 4], [5, 6, -1, 8], [9, 10, 11, 12]]), 3, 4))
    assert got == ("error", ValueError)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_nest_inside_try_leaves_pythons_scalars(backend):
    got = assert_leaves_what_python_leaves(GUARDED, backend,
                                           lambda: (np.array([1.0, 4, 9, -1, 16]), 5))
    assert got == ("ok", (6.0, 3))


@pytest.mark.parametrize("backend", ["c", "openmp"])
def test_no_copy_where_the_order_is_pythons_or_nothing_can_fail(backend):
    from specializers.loopnest.variants import CompiledVariant

    kernel = DISTRIBUTED(backend=backend, strict=True, exact_errors=True)
    kernel.kernel(np.zeros(8), np.full(8, 9.0), 8)
    (run,) = kernel._asp_current.runners[0]._executors.values()
    assert not isinstance(run, CompiledVariant)  # reordered and can fail: wrapped
    kernel = DISTRIBUTED(backend=backend, strict=True, exact_errors=False)
    kernel.kernel(np.zeros(8), np.full(8, 9.0), 8)
    (run,) = kernel._asp_current.runners[0]._executors.values()
    assert isinstance(run, CompiledVariant) == (backend == "openmp")  # serial C: always
    Plain = kernel_class("""
for i in range(n):
    A[i] = B[i] * 2.0
""", "A, B, n")
    kernel = Plain(backend=backend, strict=True)
    kernel.kernel(np.zeros(8), np.ones(8), 8)
    (run,) = kernel._asp_current.runners[0]._executors.values()
    assert isinstance(run, CompiledVariant) and not run.module.can_fail


def failing_nest(seed: int):
    """A random affine nest (see ``checking.random_nests``) whose last statement divides by
    ``Z - i``: a ZeroDivisionError at the first instance with ``i == Z``, part-way through."""
    nest = random_nest(seed, wrapped=seed % 2 == 1)
    lines = nest.source.splitlines()
    last = max(k for k, line in enumerate(lines) if " = " in line)
    lines[last] += " + 1.0 / (Z - i)"
    header = next(k for k, line in enumerate(lines) if "def kernel(" in line)
    lines[header] = lines[header].replace(", N):", ", N, Z):")
    source = "\n".join(lines) + "\n"
    return source, nest


@pytest.mark.parametrize("backend, seeds", [("python-shuffled", 300), ("python", 300),
                                            ("c", 60), ("openmp", 60)])
def test_generated_nests_that_fail_part_way(backend, seeds):
    failed = 0
    for seed in range(seeds):
        source, nest = failing_nest(seed)
        Kernel, args = random_kernel(nest, source, Z=seed % 4)
        got = assert_leaves_what_python_leaves(Kernel, backend, lambda: copy.deepcopy(args))
        failed += got[0] == "error"
    assert failed > seeds // 2  # most of them do raise part-way


#: Rectangular, fully permutable nests (tiled under ``ASP_TILE``) that fail where the
#: linear instance number reaches ``Z``: elementwise in 2-D and 3-D, and a gemm.
TILED_FAILING = [
    ("A, B, Z, N, M", """
for i in range(N):
    for j in range(M):
        B[i, j] = A[i, j] * 2.0 + 1.0 / (Z - (i * M + j))
""", lambda rng, n, m: (rng.random((n, m)), np.zeros((n, m)))),
    ("A, B, Z, N, M", """
for i in range(N):
    for j in range(M):
        for k in range(3):
            B[i, j, k] = A[i, j, k] - 1.0 / (Z - ((i * M + j) * 3 + k))
""", lambda rng, n, m: (rng.random((n, m, 3)), np.zeros((n, m, 3)))),
    ("A, B, C, Z, N, M", """
for i in range(N):
    for j in range(M):
        for k in range(M):
            C[i, j] += A[i, k] * B[k, j] + 1.0 / (Z - ((i * M + j) * M + k))
""", lambda rng, n, m: (rng.random((n, m)), rng.random((m, m)), np.zeros((n, m)))),
]


@pytest.mark.parametrize("backend, block", [("c", 2), ("c", 3), ("openmp", 3)])
def test_nests_that_fail_part_way_in_tiled_blocks(backend, block, monkeypatch):
    """Tiled bands (``ASP_TILE``: every band the analysis allows, in blocks that divide no
    range) run their blocks, never Python's order: an error part-way leaves Python's state
    all the same (a tiled serial C module once counted as running in source order, and left
    the writes of later blocks behind)."""
    from specializers.loopnest import variants

    tiled = []
    generate = variants.generate

    def recording(*args, **kwargs):
        module = generate(*args, **kwargs)
        tiled.append(bool(module.tiles))
        return module

    monkeypatch.setattr(variants, "generate", recording)
    monkeypatch.setenv("ASP_TILE", str(block))
    rng = np.random.default_rng(block)
    failed = 0
    for params, body, make in TILED_FAILING:
        Kernel = kernel_class(body, params)
        for _ in range(6):
            n, m = (int(x) for x in rng.integers(3, 9, size=2))
            arrays = make(rng, n, m)
            last = int(np.prod(arrays[-1].shape)) * (m if "C[i, j] +=" in body else 1)
            z = float(rng.integers(0, last + 1))   # (last: no error)
            got = assert_leaves_what_python_leaves(
                Kernel, backend, lambda: [a.copy() for a in arrays] + [z, n, m])
            failed += got[0] == "error"
    assert failed > 8 and sum(tiled) >= len(TILED_FAILING)   # errors part-way, tiled


def test_failing_nests_are_generated_as_described():
    source, _ = failing_nest(3)
    assert re.search(r"\+ 1\.0 / \(Z - i\)$", source.rstrip()) and ", N, Z):" in source


@pytest.mark.parametrize("backend", ["c", "openmp"])
def test_a_failed_compiled_run_is_redone_by_serial_c_in_source_order(backend, monkeypatch):
    """Not by the original Python code, which would crawl to the error."""
    from specializers.loopnest import variants

    built = []
    real = variants.compile_variant

    def spy(which, analysis, plan, *rest, **options):
        built.append((which, in_source_order(plan.schedule, analysis.sequential) and
                      options.get("tiled", True) is False))
        return real(which, analysis, plan, *rest, **options)

    monkeypatch.setattr(variants, "compile_variant", spy)
    # (the kernel's instances share their compiled executors: start without any)
    analyse_kernel(DISTRIBUTED.kernel.__wrapped__).nests[0].executors.clear()
    n = 200_000
    make = lambda: (np.zeros(n), np.r_[np.full(n - 5, 9.0), np.ones(5)], n)  # noqa: E731
    got = assert_leaves_what_python_leaves(DISTRIBUTED, backend, make)
    assert got == ("error", ValueError)
    assert built == [(backend, False), ("c", True)]


def test_openmp_without_exact_errors_keeps_its_stated_guarantee():
    """The exception is one the nest raises; every element holds its value before the call or
    the value Python computes for it."""
    n = 100_000
    B = np.full(n, 9.0)
    B[[5, 40_000, 70_000]] = 1.0           # math.sqrt(B[i] - 5.0) fails at these i
    got = (np.full(n, -1.0), B.copy(), n)
    with pytest.raises(ValueError, match="math domain error"):
        DISTRIBUTED(backend="openmp", strict=True).kernel(*got)
    finished = (np.full(n, -1.0), np.where(B > 5, B, 9.0), n)
    DISTRIBUTED().original_kernel(*finished)  # what each element is when nothing fails
    for array, before, full in ((got[0], -1.0, finished[0]), (got[1], B, finished[1])):
        assert np.all((array == before) | (array == full))


def test_exact_errors_can_be_set_in_the_environment(monkeypatch):
    monkeypatch.setenv("ASP_EXACT_ERRORS", "1")
    kernel = DISTRIBUTED(backend="openmp", strict=True)
    args = (np.zeros(8), np.array([9.0, 9, 9, 1, 9, 9, 9, 9]), 8)
    with pytest.raises(ValueError):
        kernel.kernel(*args)
    want = (np.zeros(8), np.array([9.0, 9, 9, 1, 9, 9, 9, 9]), 8)
    with pytest.raises(ValueError):
        DISTRIBUTED().original_kernel(*want)
    assert identical(args, want)
