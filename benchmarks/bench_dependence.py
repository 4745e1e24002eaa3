"""Benchmark of the staged dependence analysis (issue 4, points 1 and 7).

Prints, for each of the twelve examples:
* the per-call analysis time with the static part cached: computing the binding of the call's
  values, testing the dependence pairs the static part left open, and scheduling (target under
  2 ms; the DLS'19 paper reports 0.84 to 22 ms);
* the fully cached path: the binding and a lookup of its cached schedule (target under 50 us);

and, over random affine nests (``specializers.loopnest.checking.random_nests``), the precision
of the analysis against the brute-force oracle: of the (statement, loop) pairs the analysis
runs sequentially, the share the oracle's exact dependences would let run in parallel (lower is
better), and the number of dependences missed (must be 0).

    python -m benchmarks.bench_dependence [--nests N]
"""

from __future__ import annotations

import argparse
import importlib
import timeit

from specializers.loopnest.analysis.graph import DependenceGraph, Edge
from specializers.loopnest.checking import load_source
from specializers.loopnest.checking.oracle import exact_dependences, missed
from specializers.loopnest.checking.random_nests import make_arrays, random_nest
from specializers.loopnest.pipeline import analyse_kernel, make_plan
from specializers.loopnest.schedule.allen_kennedy import schedule_nest

EXAMPLES = {
    "vadd": ("VAdd", dict(n=100_000)), "saxpy": ("Saxpy", dict(n=100_000)),
    "hilbert": ("Hilbert", dict(n=256)), "jacobi": ("Jacobi", dict(n=256)),
    "conway": ("Conway", dict(n=256)), "mandelbrot": ("Mandelbrot", dict(n=64, max_iter=16)),
    "black_scholes": ("BlackScholes", dict(n=10_000)), "gemm": ("Gemm", dict(n=64)),
    "gemver": ("Gemver", dict(n=128)), "syr2k": ("Syr2k", dict(n=64, m=48)),
    "conv2d": ("Conv2D", dict(n=64, k=5)),
    "fbcorr": ("FBCorr", dict(batch=1, channels=2, size=16, nfilters=4, fsize=3)),
}


def best(fn, number: int, repeat: int = 5) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def analysis_times(quick: bool = False) -> dict[str, tuple[float, float]]:
    out = {}
    for module_name, (cls_name, sizes) in EXAMPLES.items():
        module = importlib.import_module(f"examples.{module_name}")
        kernel = getattr(module, cls_name)(backend="python", strict=True)
        kernel.kernel(*module.make_inputs(**sizes))  # static part computed and kept
        uncached = cached = 0.0
        for runner in kernel._asp_current.runners:
            analysis = runner.analysis
            frame_inputs = runner.last_inputs

            def finish():
                make_plan(analysis, analysis.binder.key(frame_inputs))

            def lookup():
                analysis.plan(analysis.binder.key(frame_inputs))

            uncached += best(finish, 3 if quick else 20)
            cached += best(lookup, 50 if quick else 2000)
        out[module_name] = (uncached, cached)
    return out


def oracle_graph(analysis, deps) -> DependenceGraph:
    edges = []
    for dep in deps:
        loops = analysis.static_dependences.common[dep.source, dep.sink]
        level = next((k + 1 for k, x in enumerate(dep.vector) if x != "="), None)
        edges.append(Edge(dep.source, dep.sink, dep.kind, dep.variable, loops, dep.vector,
                          level, (None,) * len(loops), "oracle"))
    return DependenceGraph(tuple(edges), ())


def precision(nests: int) -> dict:
    sequential = proven_parallel = lost = 0
    for seed in range(nests):
        nest = random_nest(seed)
        analysis = analyse_kernel(load_source(nest.source).kernel.__wrapped__).nests[0]
        values = dict(make_arrays(nest), **nest.args)
        values.update({v: None for v in analysis.names.outputs})
        plan = analysis.plan(analysis.binder.key(tuple(values[n] for n in analysis.names.inputs)))
        deps = exact_dependences(analysis, values)
        lost += len(missed(deps, plan.graph.edges))
        exact = schedule_nest(analysis.structure, oracle_graph(analysis, deps))
        for ours, best_ in zip(plan.schedule.statements, exact.statements):
            for var in ours.sequential:
                sequential += 1
                if var not in best_.sequential:
                    proven_parallel += 1
    return {"nests": nests, "sequential": sequential, "oracle_parallel": proven_parallel,
            "missed": lost}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nests", type=int, default=300)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    times = analysis_times(args.quick)
    print("staged dependence analysis, per call (all nests of the kernel)")
    print(f"  {'example':14s} {'static part cached':>20s} {'fully cached':>14s}")
    for name, (uncached, cached) in times.items():
        print(f"  {name:14s} {uncached * 1e3:17.3f} ms {cached * 1e6:11.2f} us")
    worst = max(u for u, _ in times.values()), max(c for _, c in times.values())
    print(f"  worst: {worst[0] * 1e3:.3f} ms (target < 2 ms), {worst[1] * 1e6:.2f} us "
          f"(target < 50 us)")
    p = precision(args.nests)
    share = p["oracle_parallel"] / p["sequential"] if p["sequential"] else 0.0
    print(f"precision over {p['nests']} random affine nests: {p['sequential']} (statement, loop) "
          f"pairs run sequentially, of which the oracle proves {p['oracle_parallel']} parallel "
          f"({share:.1%}); dependences missed: {p['missed']}")
    return {"times": times, "precision": p, "share": share}


if __name__ == "__main__":
    main()
