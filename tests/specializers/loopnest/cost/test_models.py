"""The cost model's structure counts of the OpenMP variant: parallel regions entered, barriers
met and reductions combined, per call, from the schedule and the bound loops."""

import dataclasses
import math

import numpy as np
import pytest

from examples.fbcorr import FBCorr   # seven loops over four-dimensional arrays
from specializers.loopnest import LoopKernel
from specializers.loopnest.cost import models


class Total(LoopKernel):
    def kernel(self, A):
        s = 0.0
        for i in range(A.shape[0]):
            s += A[i]
        return s


class Steps(LoopKernel):
    """A sum over a row in each step of a sequential loop, used by the next row (rows long
    enough for OpenMP to share: ``codegen.openmp.MIN_SHARED_WORK``)."""

    def kernel(self, A):
        for t in range(1, A.shape[0]):
            s = 0.0
            for j in range(A.shape[1]):
                s += A[t - 1, j]
            for j in range(A.shape[1]):
                A[t, j] = A[t, j] + s * 1e-3


class Scale(LoopKernel):
    def kernel(self, A):
        for i in range(A.shape[0]):
            A[i] = 2.0 * A[i]


def profile_of(kernel, *args) -> models.NestProfile:
    kernel.kernel(*args)
    runner = kernel._asp_current.runners[0]
    return runner.estimator.profile(runner.signature(runner.last_inputs))


def test_a_top_level_reduction_is_combined_once():
    p = profile_of(Total(backend="python", strict=True), np.ones(1000))
    assert (p.regions, p.combines) == (1, 1)


def test_a_reduction_inside_a_sequential_loop_is_combined_at_each_entry():
    p = profile_of(Steps(backend="python", strict=True), np.ones((9, 20_000)))
    assert p.regions == 1 and p.combines == 8   # t = 1 .. 8


def test_no_reduction_no_combine():
    p = profile_of(Scale(backend="python", strict=True), np.ones(1000))
    assert (p.regions, p.combines) == (1, 0)


def test_combines_are_priced():
    p = profile_of(Steps(backend="python", strict=True), np.ones((9, 20_000)))
    params = models.MachineParams(omp_combine_ns={2: 1e6})   # a millisecond each
    seconds, terms = models.openmp_cost(p, params, threads=2, cores=2)
    assert terms["reductions"] == 8e-3 and seconds > 8e-3


class Clip(LoopKernel):
    def kernel(self, A, B):
        for i in range(A.shape[0]):
            if A[i] > 0.5:
                B[i] = A[i] * A[i] + 1.0


def test_statements_under_an_if_count_half_in_the_interpreter(monkeypatch):
    p = profile_of(Clip(backend="python", strict=True), np.ones(1000), np.zeros(1000))
    assert [s.guarded for s in p.statements].count(True) == 1
    params = models.MachineParams()
    half = models.python_cost(p, params)[1]["statements"]
    full = models.python_cost(p, params, guarded=1.0)[1]["statements"]
    none = models.python_cost(p, params, guarded=0.0)[1]["statements"]
    guarded = next(s for s in p.statements if s.guarded)
    alone = guarded.instances * (params.py_statement_ns + guarded.features.cost(params.py_op_ns)
                                 + guarded.features["subscript"] * params.py_subscript_ns)
    assert full - half == pytest.approx(alone * models.GUARDED_SHARE * 1e-9)
    assert half - none == pytest.approx(alone * models.GUARDED_SHARE * 1e-9)


def test_compiled_code_skips_a_guarded_statement_only_where_it_branches():
    """Serial C and OpenMP outside a vectorized loop branch as the interpreter does (half of
    a guarded statement's instances); a vectorized loop runs every instance, masked."""
    p = profile_of(Clip(backend="python", strict=True), np.ones(1000), np.zeros(1000))
    params = models.MachineParams()

    def compute(vector: bool, guarded: bool) -> float:
        statements = tuple(dataclasses.replace(s, vector=vector, vector_omp=vector,
                                               guarded=s.guarded and guarded)
                           for s in p.statements)
        profile = dataclasses.replace(p, statements=statements)
        return models.c_cost(profile, params)[1]["compute"], \
            models.openmp_cost(profile, params, threads=2, cores=2)[1]["parallel compute"]

    guarded = next(s for s in p.statements if s.guarded)
    whole = guarded.instances * guarded.features.cost(params.c_op_ns) * 1e-9
    branchy, straight = compute(False, True), compute(False, False)
    assert straight[0] - branchy[0] == pytest.approx(whole * (1 - models.GUARDED_SHARE))
    assert straight[1] > branchy[1]
    assert compute(True, True) == compute(True, False)


def test_the_interpreters_estimate_spans_its_branches_taken_never_to_always():
    clip = Clip(backend="python", strict=True)
    profile_of(clip, np.ones(1000), np.zeros(1000))
    runner = clip._asp_current.runners[0]
    signature = runner.signature(runner.last_inputs)
    original = runner.estimator.estimates(signature, lambda label: False)[0]
    low, high = original.spread
    assert low < original.seconds < high   # (the best guess: half the branch's instances)
    assert original.seconds - low == pytest.approx(high - original.seconds)
    scale = Scale(backend="python", strict=True)
    profile_of(scale, np.ones(1000))
    runner = scale._asp_current.runners[0]
    plain = runner.estimator.estimates(runner.signature(runner.last_inputs),
                                       lambda label: False)[0]
    assert plain.spread is None   # no branch: as sure as any estimate


def test_a_busy_machine_leaves_a_team_less_bandwidth():
    p = profile_of(Scale(backend="python", strict=True), np.ones(1000))
    p = models.NestProfile(p.statements, p.iterations, p.regions, p.barriers, p.combines,
                           p.imbalance, footprint=2**40, work=p.work, exact=p.exact,
                           lines=p.lines)   # (a footprint far beyond the cache)
    params = models.MachineParams(bandwidth={1: 10e9, 2: 20e9})
    quiet = models.openmp_cost(p, params, threads=2, cores=2)[1]["memory"]
    busy = models.openmp_cost(p, params, threads=2, cores=2, busy=1.0)[1]["memory"]
    serial = models.c_cost(p, params)[1]["memory"]
    assert quiet == pytest.approx(serial / 2)   # two threads, twice the bandwidth
    assert serial / 2 < busy < serial            # a third of the cores' time is taken


@pytest.mark.parametrize("footprint", [1 << 10, 1 << 40], ids=["in cache", "in memory"])
def test_a_busy_machine_slows_serial_code_too(footprint):
    """With two busy processes on two cores, a serial variant runs on two thirds of a core
    and a team of two on one core in all: the team is predicted faster for a large parallel
    loop, as it measured (1.5 to 1.8 times here), where pricing the load for OpenMP alone
    kept serial C."""
    p = profile_of(Scale(backend="python", strict=True), np.ones(1 << 20))
    p = dataclasses.replace(p, footprint=footprint)
    params = models.MachineParams(bandwidth={1: 10e9, 2: 20e9})
    for cost in (models.c_cost, models.python_cost):
        quiet, busy = cost(p, params, 1, 2, 0.0)[0], cost(p, params, 1, 2, 2.0)[0]
        assert busy == pytest.approx(1.5 * quiet, rel=0.01)   # (the call itself: as it was)
    assert models.c_cost(p, params, 1, 2, 0.5)[0] == models.c_cost(p, params)[0]  # it fits
    team = models.openmp_cost(p, params, threads=2, cores=2, busy=2.0)[0]
    assert team < models.c_cost(p, params, 1, 2, 2.0)[0] / 1.3


class Product(LoopKernel):
    def kernel(self, A, B, C):
        for i in range(A.shape[0]):
            for k in range(B.shape[0]):
                for j in range(B.shape[1]):
                    C[i, j] += A[i, k] * B[k, j]


def test_a_tiled_band_adds_lines_to_compile(monkeypatch):
    """The serial C of a product whose matrices do not fit half the L2 is tiled and jammed: a
    longer module, priced as a longer compile (it was 50 ms more for gemm at 256 x 256). (An
    L2 of 4 KiB here: matrices of 32 x 32 exceed its half, and run quickly as Python.)"""
    from asp_core import platform

    small = profile_of(Product(backend="python", strict=True),
                       *[np.ones((8, 8)) for _ in range(3)])
    caches = platform.data_caches()
    monkeypatch.setattr(platform, "data_caches", lambda: dataclasses.replace(caches, l2=4096))
    tiny_l2 = profile_of(Product(backend="python", strict=True),
                         *[np.ones((32, 32)) for _ in range(3)])
    assert tiny_l2.lines - small.lines == models.TILED_BAND_LINES + models.JAMMED_BLOCK_LINES


class Fill(LoopKernel):
    """A band whose one statement writes an element each loop moves: tiled, not jammed."""

    def kernel(self, H):
        for i in range(H.shape[0]):
            for j in range(H.shape[1]):
                H[i, j] = 1.0 / (i + j + 1)


class ProductKIJ(LoopKernel):
    """``k`` outermost as written: the schedule interchanges it inside (i, k, j), then jammed."""

    def kernel(self, A, B, C):
        for k in range(B.shape[0]):
            for i in range(A.shape[0]):
                for j in range(B.shape[1]):
                    C[i, j] += A[i, k] * B[k, j]


class Outer(LoopKernel):
    """A three-deep band whose one write moves with every loop: tiled, not jammed."""

    def kernel(self, A, B, D):
        for i in range(D.shape[0]):
            for j in range(D.shape[1]):
                for k in range(D.shape[2]):
                    D[i, j, k] = A[i, j] * B[j, k]


@pytest.mark.parametrize("make, jammed", [
    (lambda: (Product, [np.ones((32, 32)) for _ in range(3)]), True),
    (lambda: (Fill, [np.ones((64, 64))]), False),
    (lambda: (ProductKIJ, [np.ones((32, 32)) for _ in range(3)]), True),
    (lambda: (Outer, [np.ones((16, 16)), np.ones((16, 16)), np.ones((16, 16, 16))]), False),
], ids=["product", "fill", "product-kij", "outer"])
def test_the_model_knows_which_tiled_bands_the_emitter_jams(make, jammed, monkeypatch):
    """A jammed block is priced as ``JAMMED_BLOCK_LINES`` more to compile (its unrolled chains
    cost gcc far more than their lines), so the model's test for it must agree with what the
    C emitter does (``CModule.jams``), on bands tiled in a 4 KiB L2."""
    from asp_core import platform
    from specializers.loopnest.typeinfer import infer_types
    from specializers.loopnest.variants import generate

    caches = platform.data_caches()
    monkeypatch.setattr(platform, "data_caches", lambda: dataclasses.replace(caches, l2=4096))
    cls, arrays = make()
    kernel = cls(backend="python", strict=True)
    p = profile_of(kernel, *arrays)
    runner = kernel._asp_current.runners[0]
    types, _ = runner.signature(runner.last_inputs)
    module = generate("c", runner.analysis, runner.last_plan,
                      infer_types(runner.analysis, types), types, "jams")
    assert module.tiles   # (tiled in the 4 KiB L2)
    assert bool(module.jams) == jammed
    plain = models.MODULE_LINES + models.NEST_LINES
    assert (p.lines - plain >= models.JAMMED_BLOCK_LINES) == jammed


def test_build_times_count_openmp_and_a_processs_first_build(monkeypatch):
    from asp_core.backends import c as c_backend
    from specializers.loopnest.cost import estimates, machine as machine_module

    chosen = dataclasses.replace(machine_module.DEFAULTS, compile_openmp_s=0.04,
                                 compile_first_s=0.03)
    monkeypatch.setattr(estimates, "machine", lambda: chosen)
    kernel = Scale(backend="python", strict=True)
    kernel.kernel(np.ones(1 << 16))
    runner = kernel._asp_current.runners[0]
    sig = runner.signature(runner.last_inputs)

    def builds(first: bool) -> dict[str, float]:
        monkeypatch.setattr(c_backend, "initialized", lambda: not first)
        return {e.label: e.build_s for e in runner.estimator.estimates(sig, lambda _: False)}

    later, first = builds(False), builds(True)
    assert first["c"] == pytest.approx(later["c"] + 0.03)
    assert later["openmp@2"] == pytest.approx(later["c"] + 0.04)
    assert later["original"] == 0.0


class Eliminate(LoopKernel):
    """LU's update: the rows below k, each of the same work, shared anew for each k."""

    def kernel(self, A):
        n = A.shape[0]
        for k in range(n):
            for i in range(k + 1, n):
                for j in range(k + 1, n):
                    A[i, j] = A[i, j] - A[i, k] * A[k, j]


def test_loops_of_uniform_iterations_are_balanced_per_entry():
    """The rows of one entry of a shared loop all do the same work where no loop inside
    depends on it: its contiguous blocks are balanced (one iteration apart), however the
    loops around it change its bounds (the rows below k); and that is known without
    counting each iteration's work (a million of them took 0.1 s of a first call)."""
    lu = profile_of(Eliminate(backend="python", strict=True), np.ones((40, 40)))
    assert lu.imbalance < 1.06
    odd = profile_of(Scale(backend="python", strict=True), np.ones(1_000_001))
    assert odd.imbalance == pytest.approx(500_001 / 500_000.5)


class Several(LoopKernel):
    """Statements of several operations over vectors."""

    def kernel(self, a, b, c):
        for i in range(a.shape[0]):
            t = a[i] * b[i] + 1.0
            u = t * t - b[i]
            c[i] = u / (t + 2.0) + a[i] * 3.0


@pytest.mark.parametrize("make", [
    lambda: (Scale, [np.ones(64)]),
    lambda: (Product, [np.ones((8, 8)) for _ in range(3)]),
    lambda: (Several, [np.ones(64) for _ in range(3)]),
    lambda: (FBCorr, [np.ones((2, 3, 9, 9)), np.ones((4, 3, 3, 3)), np.zeros((2, 4, 7, 7))]),
], ids=["scale", "product", "several", "fbcorr"])
def test_the_predicted_lines_of_c_are_near_the_generated_ones(make):
    """A compile is priced by its lines of C (calibrated per line), so the estimate of a
    nest's lines must follow what the code generation writes: within 8 lines (0.8 ms of gcc
    here). (Without a term per array dimension, a seven-deep nest over four-dimensional
    arrays was estimated at 62 lines where it has 81.)"""
    from asp_core.templates import render
    from specializers.loopnest.typeinfer import infer_types
    from specializers.loopnest.variants import generate

    cls, arrays = make()
    kernel = cls(backend="python", strict=True)
    predicted = profile_of(kernel, *arrays).lines - models.MODULE_LINES
    runner = kernel._asp_current.runners[0]
    types, _ = runner.signature(runner.last_inputs)
    module = generate("c", runner.analysis, runner.last_plan,
                      infer_types(runner.analysis, types), types, "lines")
    header = render("loopnest/c_runtime.h.mako").count("\n")
    assert abs(predicted - (module.source.count("\n") - header)) <= 8


class Options(LoopKernel):
    """Black-Scholes' shape: math functions in a parallel, vectorized loop (exp and log go
    through SIMD-clone wrappers in the OpenMP variant; sqrt is an instruction)."""

    def kernel(self, s, out):
        for i in range(s.shape[0]):
            out[i] = math.exp(-s[i]) * math.log(s[i] + 1.0) + math.sqrt(s[i])


@pytest.mark.parametrize("make", [
    lambda: (Options, [np.ones(64), np.zeros(64)]),
    lambda: (Scale, [np.ones(64)]),
], ids=["exp-log", "no-math"])
def test_the_openmp_variants_simd_wrappers_are_priced_as_the_lines_they_add(make):
    """The OpenMP variant's wrappers for the math functions its vector loops call add lines,
    compiled at the per-line rate: the predicted ones are within 8 of the lines the OpenMP
    code has beyond the serial C's, and priced in its build (black_scholes' OpenMP variant,
    with 69 such lines, took 48 ms longer to compile than its serial C, which a constant
    OpenMP extra priced at about 10)."""
    from specializers.loopnest.typeinfer import infer_types
    from specializers.loopnest.variants import generate

    cls, arrays = make()
    kernel = cls(backend="python", strict=True)
    p = profile_of(kernel, *arrays)
    runner = kernel._asp_current.runners[0]
    types, _ = runner.signature(runner.last_inputs)
    sources = {backend: generate(backend, runner.analysis, runner.last_plan,
                                 infer_types(runner.analysis, types), types, "lines").source
               for backend in ("c", "openmp")}
    added = sources["openmp"].count("\n") - sources["c"].count("\n")
    assert abs(p.simd_lines - added) <= 8
    assert (p.simd_lines > 40) == ("asp_simd_exp" in sources["openmp"])
    params = models.MachineParams(compile_per_line_s=1e-3, compile_openmp_s=0.01)
    assert models.build_seconds(p, params, openmp=True) - models.build_seconds(p, params) == \
        pytest.approx(0.01 + 1e-3 * p.simd_lines)


class TwoNests(LoopKernel):
    def kernel(self, a, b):
        for i in range(a.shape[0]):
            a[i] = a[i] * 2.0
        for i in range(b.shape[0]):
            b[i] = b[i] + 1.0


def test_a_processs_first_build_is_shared_among_the_nests_of_a_kernel(monkeypatch):
    """Serial C's first compile in a process (and a device's driver and context) is priced to
    each nest of a kernel at its share: each of two nests pays half of it, a one-nest kernel
    all of it."""
    from asp_core.backends import c as c_backend
    from specializers.loopnest.cost import estimates, machine as machine_module

    chosen = dataclasses.replace(machine_module.DEFAULTS, compile_first_s=0.03)
    monkeypatch.setattr(estimates, "machine", lambda: chosen)

    def builds(kernel, args, first: bool) -> list[float]:
        kernel.kernel(*args)
        monkeypatch.setattr(c_backend, "initialized", lambda: not first)
        out = []
        for runner in kernel._asp_current.runners:
            sig = runner.signature(runner.last_inputs)
            out.append({e.label: e.build_s
                        for e in runner.estimator.estimates(sig, lambda _: False)}["c"])
        return out

    def first_share(cls, args) -> list[float]:
        first = builds(cls(backend="python", strict=True), args, True)
        later = builds(cls(backend="python", strict=True), args, False)
        return [a - b for a, b in zip(first, later)]

    assert first_share(TwoNests, (np.ones(1 << 12), np.ones(1 << 12))) == \
        [pytest.approx(0.015)] * 2
    assert first_share(Scale, (np.ones(1 << 12),)) == [pytest.approx(0.03)]


def test_openmps_terms_show_what_its_compute_is_made_of():
    """``explain()`` lists the terms: OpenMP's compute is its parallel and serial compute and
    its loop iterations (these were missing: fbcorr's 947 us of loop overhead on two threads
    showed as 100 us of compute in a 1.05 ms prediction)."""
    p = profile_of(Clip(backend="python", strict=True), np.ones(100000), np.zeros(100000))
    params = models.MachineParams()
    seconds, terms = models.openmp_cost(p, params, threads=2, cores=2)
    compute = terms["parallel compute"] + terms["serial compute"] + terms["loop iterations"]
    assert terms["loop iterations"] > 0
    assert seconds == pytest.approx(max(compute, terms["memory"]) + terms["regions"] +
                                    terms["barriers"] + terms["reductions"] + terms["call"])


class Columns(LoopKernel):
    """A column walk the schedule turns into a row walk (``j`` innermost, unit stride)."""

    def kernel(self, a, b):
        for j in range(a.shape[1]):
            for i in range(a.shape[0]):
                a[i, j] = b[i, j] * 2.0


class Triangle(LoopKernel):
    def kernel(self, a):
        for i in range(a.shape[0]):
            for j in range(i, a.shape[1]):
                a[i, j] = a[i, j] + 1.0


@pytest.mark.parametrize("make", [
    lambda: (FBCorr, __import__("examples.fbcorr", fromlist=["make_inputs"]).make_inputs(
        batch=1, channels=2, size=12, nfilters=3)),
    lambda: (Columns, (np.zeros((30, 50)), np.ones((30, 50)))),
    lambda: (Triangle, (np.zeros((40, 40)),)),
])
def test_loop_iterations_are_counted_in_the_order_the_compiled_code_runs_them(make):
    """Each loop's iterations are counted along its chain in the schedule: the innermost
    loop of a perfect nest of one statement runs once per instance, whichever source loop
    the schedule put there (fbcorr's ``x``, below ``c, fy, fx``; counted in source order it
    kept its outer count and ``fx`` took the inner one), and triangular bounds still count
    exactly."""
    cls, args = make()
    p = profile_of(cls(backend="python", strict=True), *args)
    (statement,) = p.statements
    assert statement.vector_omp
    assert p.vector_iterations_omp == statement.instances
    assert p.iterations >= statement.instances


class MatVec(LoopKernel):
    def kernel(self, A, x, w):
        for i in range(A.shape[0]):
            for j in range(A.shape[1]):
                w[i] = w[i] + A[i, j] * x[j]


class InnerProduct(LoopKernel):   # i, j, k as written: k innermost carries C[i, j]
    def kernel(self, A, B, C):
        for i in range(A.shape[0]):
            for j in range(B.shape[1]):
                for k in range(B.shape[0]):
                    C[i, j] += A[i, k] * B[k, j]


class Chains(LoopKernel):
    def kernel(self, A, B):
        s = 0.0
        for i in range(A.shape[0]):
            for j in range(A.shape[1]):
                t = A[i, j]
                t = t * 2.0 + 1.0          # private to j: each instance starts afresh
                B[i, j] = t
                if A[i, j] > 0.5:
                    B[i, 0] = B[i, 0] + A[i, j]   # under an if: the chain may break
                s = s + A[i, j]            # a sum along j (and i)
        return s


def carried(profile) -> list[tuple[int, int]]:
    return [(s.carried, s.carried_omp) for s in profile.statements]


@pytest.mark.parametrize("n", [8, 300])   # (in the L2 or not: the tiled schedules too)
def test_an_accumulation_along_the_innermost_loop_is_a_chain(n):
    """``w[i] = w[i] + ...`` along ``j`` waits on each add: priced at the chain's latency
    per instance, not vectorized; integers are summed in any order (no chain); a product
    in i, j, k order is interchanged so that ``j`` is innermost: no chain either."""
    rng = np.random.default_rng(0)
    A, x = rng.random((n, n)), rng.random(n)
    p = profile_of(MatVec(backend="python", strict=True), A, x, np.zeros(n))
    assert carried(p) == [(1, 1)]
    assert not p.statements[0].vector and not p.statements[0].vector_omp
    slow = models.MachineParams(c_chain_ns=100.0)
    assert models.c_cost(p, slow)[1]["compute"] >= n * n * 100e-9
    assert models.openmp_cost(p, slow, threads=2, cores=2)[1]["parallel compute"] >= \
        n * n * 100e-9 / 2
    ints = profile_of(MatVec(backend="python", strict=True), (A * 10).astype(np.int64),
                      (x * 10).astype(np.int64), np.zeros(n, dtype=np.int64))
    assert carried(ints) == [(0, 0)]
    product = profile_of(InnerProduct(backend="c" if n > 100 else "python", strict=True),
                         A, A.copy(), A.copy())   # (n**3 iterations: 20 s as Python at 300)
    assert carried(product) == [(0, 0)]


def test_private_scalars_and_guarded_statements_carry_no_chain():
    rng = np.random.default_rng(1)
    p = profile_of(Chains(backend="python", strict=True), rng.random((40, 40)),
                   np.zeros((40, 40)))
    by_line = [s.carried for s in p.statements]
    assert by_line[:3] == [0, 0, 0] and by_line[-1] == 1   # t, t, B[i, j] ... s
    assert max(by_line[3:-1]) == 0                         # the predicate and B[i, 0]


def test_a_sum_is_a_chain_in_serial_c_and_runs_on_lanes_in_openmp():
    p = profile_of(Total(backend="python", strict=True), np.ones(100_000))
    assert carried(p) == [(1, 0)]
    assert not p.statements[0].vector and p.statements[0].vector_omp
