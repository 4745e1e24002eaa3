"""codegen.openmp: the OpenMP form of a schedule: the outermost parallel loop shared among
threads (collapsed where perfect), floating-point reductions in chunks combined in order and
integer ones through reduction clauses, one parallel region around a sequential loop,
``simd`` on proven inner loops (fixed lanes for a floating-point sum), guarded writes where
an error may occur, and the thread count from the setting or ``OMP_NUM_THREADS``."""

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from ..generators import load_kernel
from ..helpers import compiled_modules, identical

ROOT = Path(__file__).resolve().parents[4]
HEADER = "import math\nimport numpy as np\nfrom specializers.loopnest import LoopKernel\n\n\n"


def kernel_class(body: str, params: str):
    lines = "\n".join("        " + line for line in body.strip("\n").splitlines())
    return load_kernel(f"{HEADER}class Kernel(LoopKernel):\n"
                       f"    def kernel(self, {params}):\n{lines}\n")[0]


@pytest.fixture(autouse=True)
def _share_every_parallel_loop(monkeypatch, request):
    """The structure tests run on small arrays: share every parallel loop however little work
    it has (the rule that keeps such loops on one thread has its own test)."""
    if "too_little_work" not in request.node.name:
        from specializers.loopnest.codegen import openmp

        monkeypatch.setattr(openmp, "MIN_SHARED_WORK", 0)


def openmp_source(Kernel, *args, **options) -> str:
    kernel = Kernel(backend="openmp", strict=True, **options)
    got = kernel.kernel(*args)
    (module,) = compiled_modules(kernel)
    assert module.openmp and " * variant: openmp" in module.source
    # (from the functions of their own that the nest's function calls: ``_outline``)
    start = module.source.find("static void asp_block_")
    return module.source[start if start >= 0 else module.source.index("asp_nest_"):], got


PERFECT = kernel_class("""
for i in range(n):
    for j in range(m):
        C[i, j] = A[i, j] + B[j]
""", "A, B, C, n, m")


def test_a_perfect_parallel_nest_is_collapsed():
    """Two threads (whatever the machine or the environment says): with one, the 6 rows alone
    are enough work and nothing is collapsed."""
    body, _ = openmp_source(PERFECT, np.ones((6, 5)), np.ones(5), np.zeros((6, 5)), 6, 5,
                            num_threads=2)
    assert "#pragma omp parallel for collapse(2) num_threads(asp_nthreads)" in body
    assert body.count("#pragma omp") == 1


REDUCTION = kernel_class("""
total = 0.0
biggest = -1.0
for i in range(n):
    total += A[i]
    biggest = max(biggest, A[i])
return total, biggest
""", "A, n")


ROWS = kernel_class("""
for i in range(n):
    for j in range(i + 1):
        C[i, j] = A[i, j] * 2.0 + A[j, i]
""", "A, C, n")


def test_a_triangular_loop_is_dealt_out_in_chunks_and_a_square_one_in_blocks():
    """Row i of a triangle holds i + 1 iterations: contiguous blocks of rows would give the
    second of two threads three quarters of the work; chunks of 8 rows dealt out in turn
    balance it. A square nest keeps OpenMP's contiguous blocks (and its model says so)."""
    from specializers.loopnest.cost import models

    n = 64
    A = np.random.default_rng(1).random((n, n))
    C = np.random.default_rng(2).random((n, n))
    expected = C.copy()
    ROWS(backend="python").kernel(A, expected, n)
    body, _ = openmp_source(ROWS, A, C, n, num_threads=2)
    assert "#pragma omp parallel for schedule(static, asp_chunk_i) num_threads" in body
    assert f"{models.CYCLIC_CHUNK * models.CYCLIC_ROUNDS} * (uint64_t)asp_nthreads ? " \
        f"{models.CYCLIC_CHUNK} : 1;" in body
    assert identical(C, expected)
    square, _ = openmp_source(PERFECT, np.ones((6, 5)), np.ones(5), np.zeros((6, 5)), 6, 5,
                              num_threads=2)
    assert "schedule(static," not in square


def test_the_model_prices_a_triangle_shared_in_chunks_as_balanced():
    from specializers.loopnest.cost import models

    kernel = ROWS(backend="python", strict=True)
    n = 200
    kernel.kernel(np.ones((n, n)), np.ones((n, n)), n)
    runner = kernel._asp_current.runners[0]
    profile = runner.estimator.profile(runner.signature(runner.last_inputs))
    assert profile.imbalance < 1.05
    loops = runner.last_plan.bound.loops
    node = runner.last_plan.schedule.root[0]
    sids = [s.sid for s in runner.analysis.statements]
    assert models._imbalance(runner.analysis, loops, node, sids) > 1.4   # blocks: 1.5


def test_float_reductions_run_in_chunks_combined_in_order():
    """Not OpenMP's reduction clause, whose order depends on the threads: chunks of the
    iterations, each reduced in order into its own partial result, combined in chunk order."""
    body, got = openmp_source(REDUCTION, np.arange(10.0), 10)
    assert got == (45.0, 9.0)
    pragma = next(line for line in body.splitlines() if "#pragma omp parallel for" in line)
    assert "schedule(static)" in pragma and "reduction(+" not in pragma and \
        "reduction(max" not in pragma
    assert "double asp_part0_total[256];" in body and "double asp_part0_biggest[256];" in body
    assert "if (asp_c == 0) total = asp_p; else total = total + asp_p;" in body
    assert "biggest = (asp_p > biggest) ? asp_p : biggest;" in body  # max(biggest, e)'s order


def test_integer_reductions_keep_their_clauses():
    """An integer reduction is exact in any order: OpenMP's clause combines it."""
    Kernel = kernel_class("""
total = 0
biggest = -1
for i in range(n):
    total += A[i]
    biggest = max(biggest, A[i])
return total, biggest
""", "A, n")
    body, got = openmp_source(Kernel, np.arange(10), 10)
    assert got == (45, 9)
    pragma = next(line for line in body.splitlines() if "#pragma omp parallel for" in line)
    assert "reduction(+: total)" in pragma and "reduction(max: biggest)" in pragma
    assert "asp_part" not in body


TIME_STEPS = kernel_class("""
for t in range(steps):
    for i in range(1, n - 1):
        B[i] = (A[i - 1] + A[i] + A[i + 1]) / 3.0
    for i in range(1, n - 1):
        A[i] = B[i]
""", "A, B, n, steps")


def test_a_sequential_loop_around_parallel_loops_stays_in_one_parallel_region():
    a, b = np.arange(50.0) ** 2, np.zeros(50)
    body, _ = openmp_source(TIME_STEPS, a, b, 50, 7)
    lines = [line.strip() for line in body.splitlines()]
    assert lines.count("#pragma omp parallel num_threads(asp_nthreads)") == 1
    assert lines.count("#pragma omp for") == 2
    assert not any("parallel for" in line for line in lines)
    region = lines.index("#pragma omp parallel num_threads(asp_nthreads)")
    t_loop = next(k for k, line in enumerate(lines) if line.startswith("for (int64_t t ="))
    assert region < t_loop  # the region opens once, outside the time loop
    want_a, want_b = np.arange(50.0) ** 2, np.zeros(50)
    TIME_STEPS().original_kernel(want_a, want_b, 50, 7)
    assert identical(a, want_a) and identical(b, want_b)


def test_a_parallel_loop_with_too_little_work_per_entry_runs_on_one_thread():
    """An inner parallel loop of a few iterations per outer iteration costs a barrier per
    outer iteration when shared: it runs on one thread (no region at all here)."""
    from specializers.loopnest.codegen.openmp import MIN_SHARED_WORK

    a, b = np.arange(50.0) ** 2, np.zeros(50)
    body, _ = openmp_source(TIME_STEPS, a, b, 50, 7)
    assert "#pragma omp" not in body
    want_a, want_b = np.arange(50.0) ** 2, np.zeros(50)
    TIME_STEPS().original_kernel(want_a, want_b, 50, 7)
    assert identical(a, want_a) and identical(b, want_b)
    n = 2 * MIN_SHARED_WORK   # enough work per step: shared, in one region
    body, _ = openmp_source(TIME_STEPS, np.arange(float(n)), np.zeros(n), n, 3)
    assert body.count("#pragma omp for") == 2


TRIANGLE = kernel_class("""
for i in range(n):
    for j in range(i):
        C[i, j] = A[i, j] * 2.0 + A[j, i]
""", "A, C, n")


def test_inner_loops_left_to_the_compiler_where_it_can_vectorize_alone():
    body, _ = openmp_source(TRIANGLE, np.ones((8, 8)), np.zeros((8, 8)), 8)
    lines = [line.strip() for line in body.splitlines()]
    assert "#pragma omp parallel for schedule(static, asp_chunk_i) num_threads(asp_nthreads)" \
        in lines  # j's bounds need i (a triangle: its rows dealt out in turn)
    assert "#pragma omp simd" not in lines  # restrict arrays, no reduction: GCC does better


def test_simd_where_the_compiler_would_not_vectorize():
    m = np.arange(64.0).reshape(8, 8)
    body, _ = openmp_source(TRIANGLE, m, m, 8)  # one array: no restrict
    lines = [line.strip() for line in body.splitlines()]
    simd = lines.index("#pragma omp simd")
    assert lines[simd + 1].startswith("for (int64_t j =")
    rows = kernel_class("""
for i in range(n):
    s = 0.0
    for j in range(i):
        s += A[i, j]
    C[i] = s
""", "A, C, n")
    body, _ = openmp_source(rows, np.ones((8, 8)), np.zeros(8), 8)
    lines = [line.strip() for line in body.splitlines()]
    simd = lines.index("#pragma omp simd")  # on fixed lanes (``_laned``), not a reduction
    assert lines[simd + 1] == "for (int asp_l = 0; asp_l < 8; asp_l++) {"
    assert "double asp_lane_s[8];" in lines and "reduction(+: s)" not in body


def test_no_simd_and_guarded_writes_where_an_error_may_occur():
    Kernel = kernel_class("""
for i in range(n):
    for j in range(i):
        C[i, j] = A[i, j] + (i + 1) // (j - k)
""", "A, C, n, k")
    body, _ = openmp_source(Kernel, np.ones((8, 8), dtype=np.int64),
                            np.zeros((8, 8), dtype=np.int64), 8, -1)
    assert "#pragma omp simd" not in body
    assert "asp_ok(asp_err)" in body and "goto" not in body


def test_restrict_kept_where_no_overlap():
    body, _ = openmp_source(PERFECT, np.ones((6, 5)), np.ones(5), np.zeros((6, 5)), 6, 5)
    nest = body.index("asp_nest_")
    assert body[nest:].count("* restrict") == 3
    assert body[:nest].count("* restrict") in (0, 3)   # (an iteration's function of its own)


SUM = kernel_class("""
total = 0.0
for i in range(n):
    total += A[i]
return total
""", "A, n")


def absorbing(n: int) -> np.ndarray:
    """1e16 then ones: added in order the ones vanish (1e16 + 1 rounds back to 1e16); summed
    in parts, the ones of every part but the first survive."""
    a = np.ones(n)
    a[0] = 1e16
    return a


def native_threads(kernel) -> int:
    """The thread count the kernel's last OpenMP call passed to its native code (its
    ``asp_threads`` argument, the last one; 0: OpenMP's default)."""
    (call,) = [run._call for runner in kernel._asp_current.runners
               for run in runner._executors.values() if hasattr(run, "_call")]
    return int(re.search(r"(\d+),?\s*\)\s*$", call.__asp_source__).group(1))


def threads_and_result(*args, **options) -> tuple[int, float]:
    kernel = SUM(backend="openmp", strict=True, **options)
    got = kernel.kernel(*args)
    return native_threads(kernel), got


def test_the_thread_count_setting_is_used():
    """It reaches the native code; the sum is the same whatever it is (the chunks depend on
    the trip count alone)."""
    n = 1 << 16
    one, two = (threads_and_result(absorbing(n), n, num_threads=k) for k in (1, 2))
    assert one[0] == 1 and two[0] == 2
    # only the ones on 1e16's lane (the first of 8) of the first chunk (of 256) vanish
    assert one[1] == two[1] == 1e16 + (n - 1) - (n // 256 // 8 - 1)
    assert SUM().original_kernel(absorbing(n), n) == 1e16


def test_the_thread_count_follows_omp_num_threads(monkeypatch):
    n = 1 << 16
    monkeypatch.delenv("ASP_NUM_THREADS", raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert threads_and_result(absorbing(n), n)[0] == 2
    monkeypatch.setenv("ASP_NUM_THREADS", "1")  # the project's own setting wins
    assert threads_and_result(absorbing(n), n)[0] == 1


def test_num_threads_must_be_positive():
    with pytest.raises(ValueError, match="positive"):
        SUM(num_threads=0)


GUARDED = kernel_class("""
for t in range(steps):
    s = A[t] * 2.0
    if s > 0.0:
        for i in range(n):
            B[i] = B[i] + s
""", "A, B, n, steps")


def test_a_shared_predicate_read_by_every_thread_ends_the_iteration_with_a_barrier():
    """A thread that skips the guarded loop must not reach the next iteration's ``single``
    (which rewrites the predicate) before the others have read it."""
    # (in this process, only a call that never skips the loop, which cannot deadlock)
    body, _ = openmp_source(GUARDED, np.ones(400), np.zeros(64), 64, 400, num_threads=2)
    lines = [line.strip() for line in body.splitlines()]
    assert lines.count("#pragma omp parallel num_threads(asp_nthreads)") == 1
    assert "#pragma omp barrier" in lines
    # without the barrier this deadlocks within a few calls: run it where a hang is a failure
    script = textwrap.dedent(f"""
        import numpy as np
        from {GUARDED.__module__} import Kernel
        a = np.where(np.arange(400) % 3 == 0, 1.0, -1.0)
        for _ in range(50):
            got, want = np.zeros(64), np.zeros(64)
            Kernel(backend="openmp", strict=True, num_threads=2).kernel(a, got, 64, 400)
            Kernel().original_kernel(a, want, 64, 400)
            assert np.array_equal(got, want)
        print("done")
    """)
    folder = Path(GUARDED.kernel.__wrapped__.__code__.co_filename).parent
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(folder)]))
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and "done" in done.stdout, done.stderr


def test_region_statements_before_a_sequential_nest_stay_before_it():
    """Statements at region level wait for an ``omp single``; a sequential loop nest that one
    thread runs after them must not pull them inside its inner loop."""
    Kernel = kernel_class("""
s = 1.0
for i in range(n):
    for j in range(m):
        B[j] = B[j] + s * A[i]
    s = B[0] * 0.5
    for j in range(m - 1):
        C[j + 1] = C[j] + s
        for k in range(m - 1):
            D[k + 1] = D[k] * 0.5 + C[j]
""", "A, B, C, D, n, m")

    def args():
        return np.arange(6.0), np.zeros(5), np.ones(5), np.ones(5), 6, 5
    body, _ = openmp_source(Kernel, *args())
    assert body.count("#pragma omp parallel num_threads(asp_nthreads)") == 1
    assert body.count("#pragma omp single") == 1
    got, want = args(), args()
    Kernel(backend="openmp", strict=True).kernel(*got)
    Kernel().original_kernel(*want)
    assert identical(got, want)


VECTOR = kernel_class("""
for i in range(n):
    t = math.sqrt(A[i]) + math.exp(B[i])
    C[i] = t * 0.5
    D[i] = np.log(A[i] + 1.0)
""", "A, B, C, D, n")


def test_math_loops_vectorize_with_the_first_failing_iterations_error():
    n = 4096
    a, b = np.linspace(1.0, 2.0, n), np.linspace(-1.0, 1.0, n)
    body, _ = openmp_source(VECTOR, a, b, np.zeros(n), np.zeros(n), n)
    assert "#pragma omp parallel for simd" in body and "reduction(min: asp_first_i)" in body
    assert "asp_simd_exp" in body and "asp_simd_log" in body
    assert "asp_simd_sqrt" not in body  # an instruction: vectorizes as it is
    # the same bits as the C library's scalar functions, and as plain Python (math.*)
    got = (a, b, np.zeros(n), np.zeros(n), n)
    VECTOR(backend="openmp", strict=True).kernel(*got)
    want = (a, b, np.zeros(n), np.zeros(n), n)
    VECTOR().original_kernel(*want)
    assert identical(got[2], want[2])
    serial = (a, b, np.zeros(n), np.zeros(n), n)
    VECTOR(backend="c", strict=True).kernel(*serial)
    assert identical(got[3], serial[3])
    for first, second, error in ((100, 3000, ValueError), (3000, 100, OverflowError)):
        bad_a, bad_b = a.copy(), b.copy()
        bad_a[first] = -1.0    # math.sqrt: ValueError
        bad_b[second] = 1e6    # math.exp: OverflowError
        c, dd = np.full(n, -7.0), np.full(n, -7.0)
        with pytest.raises(error):
            VECTOR(backend="openmp", strict=True).kernel(bad_a, bad_b, c, dd, n)
        with pytest.raises(error):
            VECTOR().original_kernel(bad_a, bad_b, np.zeros(n), np.zeros(n), n)
        assert c[first] == -7.0 and c[second] == -7.0  # failing iterations wrote nothing
        ok = c != -7.0
        assert identical(c[ok], want[2][ok])  # the others wrote Python's values


TWO_CALLS = kernel_class("""
for i in range(n):
    C[i] = math.sqrt(math.exp(A[i])) + math.log(B[i])
""", "A, B, C, n")


@pytest.mark.parametrize("overflow, domain, error", [
    (True, True, OverflowError),    # exp (inside sqrt) fails first: the iteration's error
    (False, True, ValueError),
    (True, False, OverflowError),
])
def test_vector_checks_raise_the_first_failing_call_of_the_first_failing_iteration(
        overflow, domain, error):
    n = 1000
    a, b = np.linspace(-1.0, 1.0, n), np.linspace(1.0, 2.0, n)
    body, _ = openmp_source(TWO_CALLS, a, b, np.zeros(n), n)
    assert "uint64_t asp_code = 0;" in body  # one field per checked call
    a, b = a.copy(), b.copy()
    if overflow:
        a[500] = 1e6
    if domain:
        b[500] = -1.0
    b[900] = -1.0  # a later iteration's error is not the one raised
    c = np.full(n, -7.0)
    with pytest.raises(error):
        TWO_CALLS(backend="openmp", strict=True).kernel(a, b, c, n)
    with pytest.raises(error):
        TWO_CALLS().original_kernel(a, b, np.zeros(n), n)
    assert c[500] == -7.0 and c[900] == -7.0


MANY_CALLS = kernel_class("""
for i in range(n):
    t = math.exp(A[i])
    total = t + math.exp(A[i] + 1.0) + math.exp(A[i] + 2.0) + math.exp(A[i] + 3.0)
    total += math.exp(A[i] + 4.0) + math.exp(A[i] + 5.0) + math.exp(A[i] + 6.0)
    total += math.exp(A[i] + 7.0) + math.exp(A[i] + 8.0) + math.exp(A[i] + 9.0)
    total += math.exp(A[i] + 10.0) + math.exp(A[i] + 11.0) + math.exp(A[i] + 12.0)
    total += math.exp(A[i] + 13.0) + math.sqrt(B[i])
    C[i] = total
""", "A, B, C, n")

FAR_LOOP = kernel_class("""
for i in range(start, start + n):
    C[i - start] = math.exp(A[i - start]) + math.sqrt(B[i - start])
""", "A, B, C, n, start")


@pytest.mark.parametrize("Kernel, extra", [(MANY_CALLS, ()), (FAR_LOOP, (2**40,))],
                         ids=["15 checked calls", "loop variable beyond 32 bits"])
def test_vector_checks_beyond_the_fields_keep_the_first_failures_code(Kernel, extra):
    n = 1000
    a, b = np.linspace(-1.0, 1.0, n), np.linspace(1.0, 2.0, n)
    body, _ = openmp_source(Kernel, a, b, np.zeros(n), n, *extra)
    assert "int32_t asp_code = 0;" in body and "#pragma omp parallel for simd" in body
    got, want = (a, b, np.zeros(n), n, *extra), (a, b, np.zeros(n), n, *extra)
    Kernel(backend="openmp", strict=True).kernel(*got)
    Kernel().original_kernel(*want)
    assert identical(got[2], want[2])
    for row, error in ((300, OverflowError), (700, ValueError)):
        bad_a, bad_b = a.copy(), b.copy()
        bad_a[row] = 1e6      # math.exp: OverflowError
        bad_b[1000 - row] = -1.0  # math.sqrt: ValueError, in the other row
        c = np.full(n, -7.0)
        with pytest.raises(error):
            Kernel(backend="openmp", strict=True).kernel(bad_a, bad_b, c, n, *extra)
        with pytest.raises(error):
            Kernel().original_kernel(bad_a, bad_b, np.zeros(n), n, *extra)


LIBRARY_CALLS = kernel_class("""
for i in range(n):
    C[i] = math.atan2(A[i], B[i]) + math.exp(A[i])
for i in range(n):
    F[i] = np.exp(G[i]) + np.arctan2(G[i], H[i])
""", "A, B, C, F, G, H, n")  # two loops: GCC 12 vectorizes no loop storing both widths here


def _clone_calls(module, folder: Path) -> tuple[set, set]:
    """The SIMD clones the module's assembly calls, and those it defines (GCC on x86-64)."""
    from asp_core.backends.c import default_compiler

    compiler = default_compiler()
    if os.uname().machine != "x86_64" or "gcc" not in compiler.version.lower():
        pytest.skip(f"the clones are written by hand for GCC on x86-64 only, not for "
                    f"{compiler.version.splitlines()[0]} on {os.uname().machine}")
    tc = compiler.toolchain
    macros = subprocess.run([tc.cc, *tc.cflags, "-dM", "-E", "-x", "c", "/dev/null"], check=True,
                            capture_output=True, text=True).stdout
    if "__AVX__" not in macros:  # no masked stores: the guarded writes keep GCC from vectorizing
        pytest.skip(f"the target of {' '.join(tc.cflags)} has no AVX")
    source, asm = folder / "module.c", folder / "module.s"
    source.write_text(module.source)
    subprocess.run([tc.cc, *tc.cflags, "-fopenmp", "-S", str(source), "-o", str(asm)], check=True)
    text = asm.read_text()
    return set(re.findall(r"call\s+(_ZGV\w+)", text)), set(re.findall(r"^(_ZGV\w+):", text, re.M))


def test_math_loops_call_the_simd_clones_written_for_them(tmp_path):
    """One and two arguments, float64 and float32: the loop calls the clones the module
    defines (GCC on x86-64; elsewhere GCC makes the clones), and the results are the C
    library's bits, those of plain Python for math.* and of serial C for NumPy's functions
    (NumPy's own SIMD code may differ by a few ulps: test_semantics)."""
    n = 1003  # a remainder for the scalar wrappers too
    a, b = np.linspace(-1.0, 1.0, n), np.linspace(0.5, 2.0, n)
    g, h = a.astype(np.float32), b.astype(np.float32)
    got = (a, b, np.zeros(n), np.zeros(n, np.float32), g, h, n)
    kernel = LIBRARY_CALLS(backend="openmp", strict=True)
    kernel.kernel(*got)
    want = (a, b, np.zeros(n), np.zeros(n, np.float32), g, h, n)
    LIBRARY_CALLS().original_kernel(*want)
    serial = (a, b, np.zeros(n), np.zeros(n, np.float32), g, h, n)
    LIBRARY_CALLS(backend="c", strict=True).kernel(*serial)
    assert identical(got[2], want[2])
    assert identical(got[3], serial[3])  # NumPy's own functions: see test_semantics
    modules = compiled_modules(kernel)
    for module, functions in zip(modules, ({"atan2", "exp"}, {"atan2f", "expf"})):
        called, defined = _clone_calls(module, tmp_path)
        assert {name.rsplit("_", 1)[-1] for name in called} == functions
        assert called <= defined


def test_black_scholes_vectorizes(tmp_path):
    """Five checked math calls, branches turned into selects: a loop GCC vectorizes only
    while the checks stay free of short-circuit branches (see asp_vmath1 in the runtime)."""
    from examples import black_scholes

    kernel = black_scholes.BlackScholes(backend="openmp", strict=True)
    kernel.kernel(*black_scholes.make_inputs(100))
    (module,) = compiled_modules(kernel)
    called, defined = _clone_calls(module, tmp_path)
    assert {name.rsplit("_", 1)[-1] for name in called} == {"exp", "log"}
    assert called <= defined


TRIANGLES = {
    "lower": """
for i in range(n):
    for j in range(i + 1):
        C[i, j] = A[i, j] * 2.0 + A[j, i]
""",
    "upper": """
for i in range(n):
    for j in range(i, n):
        C[i, j] = A[i, j] - A[j, j]
""",
    "reversed outer": """
for i in range(n - 1, -1, -1):
    for j in range(i):
        C[i, j] = A[i, j] + 1.0
""",
    "stepped outer": """
for i in range(1, n, 3):
    for j in range(i, n):
        C[i, j] = A[j, i] * A[i, j]
""",
    "two deep": """
for i in range(n):
    for j in range(i + 1):
        for k in range(j, i + 1):
            C[i, j] = C[i, j] + A[i, k] * A[k, j]
""",
    "row sum": """
for i in range(n):
    s = 0.0
    for j in range(i + 1):
        s += A[i, j]
    C[i, 0] = s
""",
}


@pytest.mark.parametrize("n", [5, 70, 301])
@pytest.mark.parametrize("shape", sorted(TRIANGLES))
def test_triangles_dealt_out_in_turn_match_the_original(shape, n):
    """Triangular parallel loops, dealt out in chunks of 1 (few rows) or 8 (enough), or, tiled,
    block by block, against
    the original code, on two threads: every row once, each row's own order kept (bit for
    bit: a row's sum in Python's order, ``exact_reductions``, not in the fixed lanes an
    OpenMP variant sums floats in by default)."""
    Kernel = kernel_class(TRIANGLES[shape], "A, C, n")
    rng = np.random.default_rng(n)
    A = rng.random((n, n))
    expected = rng.random((n, n))
    C = expected.copy()
    Kernel(backend="python").original_kernel(A, expected, n)
    body, _ = openmp_source(Kernel, A, C, n, num_threads=2, exact_reductions=True)
    # (too big for the cache, a triangle is tiled: its blocks are dealt out one at a time)
    assert "schedule(static, asp_chunk_i)" in body or "schedule(dynamic, 1)" in body, body
    assert identical(C, expected)


TRIANGLE_SUM = kernel_class("""
total = 0.0
for i in range(n):
    for j in range(i + 1):
        total += A[i, j] * A[j, i]
return total
""", "A, n")


def test_a_triangles_float_reduction_deals_its_chunks_out_one_at_a_time():
    """Its chunks (``_chunked``) are dealt out in turn, balanced; their partial results are
    combined in chunk order whoever computed them, so the sum is the same on one thread or
    two, and within rounding of Python's."""
    n = 300
    A = np.random.default_rng(3).random((n, n))
    body, two = openmp_source(TRIANGLE_SUM, A, n, num_threads=2)
    assert "#pragma omp parallel for schedule(static, 1)" in body
    _, one = openmp_source(TRIANGLE_SUM, A, n, num_threads=1)
    assert two == one
    assert two == pytest.approx(TRIANGLE_SUM(backend="python").original_kernel(A, n), rel=1e-12)


FILTER = kernel_class("""
for i in range(n):
    for j in range(n):
        for p in range(3):
            for q in range(3):
                out[i, j] += img[i + p, j + q] * w[p, q]
""", "img, w, out, n")


def test_a_parallel_loops_iteration_runs_in_a_function_of_its_own():
    """GCC reads an OpenMP body's pointers through the caller's frame, without ``restrict``:
    a row of a filter reloaded the filter and checked the arrays' overlap (conv2d on two
    threads ran slower than serial C). One iteration of a top-level parallel loop with no
    clauses runs in a function of its own, its pointers ``restrict`` parameters; the result
    is the original code's."""
    img, w = np.arange(100.0).reshape(10, 10), np.arange(9.0).reshape(3, 3) / 7
    out = np.zeros((8, 8))
    body, _ = openmp_source(FILTER, img, w, out, 8)
    head = body[:body.index("{")]
    assert head.startswith("static void asp_block_0(") and "double * restrict w" in head
    assert "const int64_t i)" in head
    nest = body[body.index("asp_nest_"):]
    call = nest.index("asp_block_0(img, ")
    assert "#pragma omp parallel for num_threads(asp_nthreads)" in nest[:call]
    expected = np.zeros((8, 8))
    FILTER(backend="python").kernel(img, w, expected, 8)
    assert np.array_equal(out, expected)


def test_an_iteration_with_clauses_stays_inline():
    """A reduction, or a scalar whose last value the code after the loop reads (lastprivate):
    the iteration shares what only the nest's function has, and stays in it; a scalar the
    method computed before the nest is a parameter, and goes with the iteration."""
    body, _ = openmp_source(TRIANGLE_SUM, np.ones((8, 8)), 8)
    assert "asp_block_" not in body
    Last = kernel_class("""
for i in range(n):
    t = A[i] * 2.0
    B[i] = t
return t
""", "A, B, n")
    body, got = openmp_source(Last, np.arange(8.0), np.zeros(8), 8)
    assert "asp_block_" not in body and "lastprivate" in body and got == 14.0
    Scaled = kernel_class("""
s = A[0] + 2.0
for i in range(n):
    B[i] = A[i] * s
""", "A, B, n")
    B = np.zeros(8)
    body, _ = openmp_source(Scaled, np.arange(8.0), B, 8)
    assert ", double s, const int64_t i)" in body and np.array_equal(B, np.arange(8.0) * 2)


def test_a_collapsed_nests_iteration_runs_in_a_function_of_its_own():
    """fbcorr's shape: two short parallel loops collapsed, the work inside; the iteration of
    the innermost collapsed loop takes both variables (fbcorr on 256 x 256 images: 4.8 ms on
    two threads, 6.1 inline)."""
    Batch = kernel_class("""
for b in range(nb):
    for f in range(nf):
        for y in range(n):
            for x in range(n):
                out[b, f, y, x] = img[b, y, x] * w[f]
""", "img, w, out, nb, nf, n")
    img, w = np.arange(2 * 9.0).reshape(2, 3, 3), np.arange(3.0)
    out = np.zeros((2, 3, 3, 3))
    body, _ = openmp_source(Batch, img, w, out, 2, 3, 3)
    collapsed = int(re.search(r"collapse\((\d)\)", body).group(1))
    assert collapsed >= 2
    head = body[:body.index("{")]
    variables = ", ".join(f"const int64_t {v}" for v in "bfyx"[:collapsed])
    assert head.startswith("static void asp_block_0(") and head.endswith(f"{variables}) ")
    assert np.array_equal(out, img[:, None] * w[None, :, None, None])
