"""One first call split into analysis, compile and run, for ``asp bench`` (``benchmarks.suite``).

    python -m benchmarks.first_call EXAMPLE N CONTENDER

Run in a new process with an empty cache folder (``bench_selection.first_call_process``), one
process per measurement; prints one JSON line. CONTENDER is one of ours (``c``, ``openmp@K``,
``opencl``, or ``acm``: the cost model's choice) or a peer (``numba``, ``numba-parallel``,
``numpy``: ``benchmarks.peers``). The phases:

* ``analysis_s``: the kernel's static analysis (parsing, DAST, access and dependence analysis:
  ``pipeline.analyse_kernel``, memoized per kernel), timed on its own just before the first call,
  which then finds it done. 0 for a peer, and for a default kernel whose first call ran cold
  (the original code, no analysis: ``specializers.loopnest.coldstart``);
* ``run_s``: a second call right after the first, on the same inputs (restored): a warm call in
  that process (the first call's time where that is less, or the call ran cold);
* ``compile_s``: the rest of the first call, its time less ``run_s``: binding the call's values
  and the rest of the analysis, the cost model, code generation, the C compiler and loading the
  library (for Numba: typing and the LLVM compile);
* ``total_s``: ``analysis_s`` + the first call; ``choice``: what the first call ran
  (``selection_worker.describe_choice``), ``second_choice``: what the second ran; ``cold``.

The interpreter's start and the imports (the example, the specializer's modules that the
example imports, Numba for a peer) are not timed; the modules the analysis and the compiler
load on first use are.
"""

from __future__ import annotations

import json
import sys
import time

from .selection_worker import Bench


def split_first_call(example: str, n: int, contender: str) -> dict:
    """The first call of ``contender`` on ``example`` at size ``n`` in this process, split."""
    bench = Bench(example, n, [contender])
    kernel, _ = bench.kernels[contender]
    analysis_s = 0.0
    if kernel is not None:  # one of ours (the peers and plain Python have no analysis)
        from specializers.loopnest import pipeline

        original = type(kernel).kernel.__wrapped__
        t0 = time.perf_counter()
        pipeline.analyse_kernel(original)
        analysis_s = time.perf_counter() - t0
    first = bench.call(contender)
    second = bench.call(contender)
    cold = bool(first.get("cold"))
    if cold:  # the first call ran the original code: no analysis, nothing compiled
        analysis_s, run_s = 0.0, first["s"]
    else:
        run_s = min(first["s"], second["s"])
    return {"total_s": analysis_s + first["s"], "analysis_s": analysis_s,
            "compile_s": first["s"] - run_s, "run_s": run_s, "choice": first.get("choice"),
            "second_choice": second.get("choice"), "cold": cold}


if __name__ == "__main__":
    example, size, name = sys.argv[1:4]
    print(json.dumps(split_first_call(example, int(size), name)))
