"""Large stencils over Dask arrays (issue 14): the partitioned kernel on a cluster, the same
kernel in one process, and the same computation written with Dask's own array operations,
side by side in one run.

Two kernels, each a time loop around two parallel nests (``on_dask`` unrolls it into two
partitioned steps per iteration, halo one row): ``heat``, ``steps`` sweeps of a 5-point
relaxation over an ``n x n`` float64 grid (each writing a second grid, then copying it back),
light work per element, where NumPy is at its best; and ``life``, ``steps`` generations of
Conway's game of life on an ``n x n`` int32 board (a 9-point neighbourhood and branches),
more work per element, which NumPy spells with temporaries. The ways, each the best of
``--rounds`` calls after a first call (which compiles):

* ``on_dask``: ``K().on_dask(...)`` on the cluster (the inputs persisted on the workers first;
  timed: building the graph, then computing the result into the workers' memory), each block
  running the variant the cost model chooses for it (the counts are printed);
* ``on_dask, c``: the same with ``K(backend="c")``: every block serial C;
* ``one process``: ``K().kernel(...)`` on NumPy arrays in this process (the cost model's
  choice: OpenMP on this machine's cores);
* ``dask map_overlap``: the idiomatic Dask stencil, ``A.map_overlap(numpy_step, depth=1)`` per
  iteration, a NumPy function per block;
* ``dask slicing`` (heat only): the sweeps as Dask array expressions (``0.25 * (A[:-2, 1:-1]
  + ...)``, ``da.block`` to keep the borders): one graph, which takes minutes, so timed once.

All results are checked equal to the one-process run. Ratios are each way's time over
``on_dask``'s (above 1: on_dask is faster). The load average is printed at the start and at
the end (the machine is shared).

    python -m benchmarks.bench_dask [--n 4096] [--steps 8] [--rounds 3] [--rows 512]
                                    [--only heat,life] [--address tcp://scheduler:8786]
                                    [--out FILE]

Without ``--address`` it starts a ``LocalCluster`` of ``--workers`` processes with one thread
each; with one, it connects to that scheduler (``dask.distributed.Client(address)``: the
workers must import this module and ``specializers``, the same code on every machine).
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Callable

import numpy as np

from specializers.loopnest import LoopKernel
from specializers.loopnest.distributed.worker import stats


class Heat(LoopKernel):
    def kernel(self, A, B, steps):
        n, m = A.shape
        for t in range(steps):
            for i in range(1, n - 1):
                for j in range(1, m - 1):
                    B[i, j] = 0.25 * (A[i - 1, j] + A[i + 1, j] + A[i, j - 1] + A[i, j + 1])
            for i in range(1, n - 1):
                for j in range(1, m - 1):
                    A[i, j] = B[i, j]


class Life(LoopKernel):
    def kernel(self, board, new, generations):
        n, m = board.shape
        for t in range(generations):
            for i in range(1, n - 1):
                for j in range(1, m - 1):
                    neighbours = (board[i - 1, j - 1] + board[i - 1, j] + board[i - 1, j + 1]
                                  + board[i, j - 1] + board[i, j + 1] + board[i + 1, j - 1]
                                  + board[i + 1, j] + board[i + 1, j + 1])
                    if board[i, j] == 1 and (neighbours < 2 or neighbours > 3):
                        new[i, j] = 0
                    elif board[i, j] == 0 and neighbours == 3:
                        new[i, j] = 1
                    else:
                        new[i, j] = board[i, j]
            for i in range(1, n - 1):
                for j in range(1, m - 1):
                    board[i, j] = new[i, j]


def heat_step(block: np.ndarray) -> np.ndarray:
    """One sweep of a block with its halo (map_overlap): the interior relaxed, borders kept."""
    out = block.copy()
    out[1:-1, 1:-1] = 0.25 * (block[:-2, 1:-1] + block[2:, 1:-1] + block[1:-1, :-2]
                              + block[1:-1, 2:])
    return out


def life_step(b: np.ndarray) -> np.ndarray:
    """One generation of a block with its halo (map_overlap), borders kept."""
    out = b.copy()
    nb = (b[:-2, :-2] + b[:-2, 1:-1] + b[:-2, 2:] + b[1:-1, :-2] + b[1:-1, 2:]
          + b[2:, :-2] + b[2:, 1:-1] + b[2:, 2:])
    alive = b[1:-1, 1:-1] == 1
    out[1:-1, 1:-1] = np.where(alive, (nb == 2) | (nb == 3), nb == 3)
    return out


def map_overlap(step: Callable) -> Callable:
    def run(A, steps: int):
        for _ in range(steps):
            # boundary "none": the grid's outer rows and columns have no neighbours, and a
            # step keeps every block's outer ring, so only the grid's own border stays
            A = A.map_overlap(step, depth=1, boundary="none")
        return A
    return run


def heat_slicing(A, steps: int):
    import dask.array as da

    for _ in range(steps):
        inner = 0.25 * (A[:-2, 1:-1] + A[2:, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:])
        A = da.block([[A[:1, :]], [A[1:-1, :1], inner, A[1:-1, -1:]], [A[-1:, :]]])
    return A


#: name -> (kernel class, dtype, the input, the Dask map_overlap and slicing versions)
CASES = {
    "heat": (Heat, np.float64, lambda da, shape, chunks: da.random.default_rng(0).random(
        shape, chunks=chunks), map_overlap(heat_step), heat_slicing),
    "life": (Life, np.int32, lambda da, shape, chunks: (da.random.default_rng(0).random(
        shape, chunks=chunks) < 0.3).astype(np.int32), map_overlap(life_step), None),
}


def _keys(collection) -> list:
    from dask.core import flatten

    return list(flatten(collection.__dask_keys__()))


def _ran(after: dict, before: dict) -> dict[str, int]:
    """Blocks per variant label between two ``client.run(stats)``."""
    out: dict[str, int] = {}
    for worker, found in after.items():
        for label, count in found["ran"].items():
            out[label] = out.get(label, 0) + count - before[worker]["ran"].get(label, 0)
    return {label: count for label, count in out.items() if count}


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _best(run, rounds: int, forget) -> tuple[float, float]:
    """(first call, best of ``rounds`` calls after it; the first call's time if 0), in
    seconds; ``forget(result)`` after each call but the last drops its result from the
    cluster, so that the next call computes again rather than find its keys there."""
    times = []
    for round_ in range(rounds + 1):
        start = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - start)
        if round_ < rounds:
            forget(result)
    return times[0], min(times[1:] or times)


def run_case(name: str, client, n: int, steps: int, rows: int, rounds: int) -> list[str]:
    import dask.array as da
    from distributed import wait

    cls, dtype, make, overlap_version, slicing_version = CASES[name]
    A = make(da, (n, n), (rows, n)).persist()
    B = (A + 0).persist()
    wait([A, B])
    grid = A.compute()
    kernel, serial = cls(), cls(backend="c")
    results: dict = {}

    def persisted(key: str, array):
        final = results[key] = client.persist(array)
        wait(final)
        return final

    def on_dask():
        built = time.perf_counter()
        out = kernel.on_dask(A, B, steps)
        results["graph_s"] = time.perf_counter() - built
        return persisted("on_dask", out[_first_parameter(cls)])

    def one_process():
        a, b = grid.copy(), grid.copy()
        kernel.kernel(a, b, steps)
        results["one process"] = a

    ways = {
        "on_dask": on_dask,
        "on_dask, c": lambda: persisted("on_dask, c",
                                        serial.on_dask(A, B, steps)[_first_parameter(cls)]),
        "one process": one_process,
        "dask map_overlap": lambda: persisted("dask map_overlap", overlap_version(A, steps)),
    }
    if slicing_version is not None:
        ways["dask slicing"] = lambda: persisted("dask slicing", slicing_version(A, steps))

    def forget(result) -> None:
        if result is not None:
            client.cancel(result)
            while any(key in client.who_has() for key in _keys(result)):
                time.sleep(0.01)

    times, ran = {}, {}
    for way, run in ways.items():
        before = client.run(stats)
        times[way] = _best(run, 0 if way == "dask slicing" else rounds, forget)
        if way == "on_dask":
            ran = _ran(client.run(stats), before)
    expected = results["one process"]
    for way in ways:
        if way != "one process":
            got = results[way].compute()
            assert np.allclose(got, expected, rtol=1e-12, atol=1e-12), f"{name}: {way} differs"
    size = n * n * np.dtype(dtype).itemsize / 2**20
    lines = ["", f"{name}: {n} x {n} {np.dtype(dtype).name} ({size:.0f} MiB per array), "
             f"{steps} iterations, chunks of {rows} rows"]
    base = times["on_dask"][1]
    lines.append(f"  {'way':18s} {'first call':>11s} {'best':>10s} {'best / on_dask':>15s}")
    for way, (first, best) in times.items():
        lines.append(f"  {way:18s} {first:10.3f}s {best:9.3f}s {best / base:15.2f}")
    lines.append(f"  on_dask built its graph in {results['graph_s'] * 1e3:.1f} ms (partition "
                 "analysis and Dask layers, on the client)")
    lines.append("  on_dask's blocks ran as (the cost model's choice per block, all rounds): "
                 + ", ".join(f"{label} {count}" for label, count in sorted(ran.items())))
    lines.append("  all results equal to the one-process run (rtol 1e-12)")
    for key in ("on_dask", "on_dask, c", "dask map_overlap", "dask slicing"):
        if key in results:
            client.cancel(results[key])
    return lines


def _first_parameter(cls) -> str:
    import inspect

    return list(inspect.signature(cls.kernel).parameters)[1]


def main(argv=None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rows", type=int, default=512, help="rows per chunk")
    parser.add_argument("--only", default="heat,life")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--address", default=None, help="a running scheduler's address")
    parser.add_argument("--out", default=None, help="also write the report to this file")
    args = parser.parse_args(argv)

    from distributed import Client, LocalCluster

    lines = [f"load average at start: {_load()}"]
    if args.address:
        cluster, client = None, Client(args.address)
    else:
        cluster = LocalCluster(processes=True, n_workers=args.workers, threads_per_worker=1,
                               dashboard_address=None)
        client = Client(cluster)
    info = client.scheduler_info()
    threads = sum(w["nthreads"] for w in info["workers"].values())
    lines.append(f"cluster: {len(info['workers'])} workers, {threads} threads; "
                 f"this machine: {os.cpu_count()} cores")
    for name in args.only.split(","):
        lines += run_case(name, client, args.n, args.steps, args.rows, args.rounds)
    lines += ["", f"load average at end: {_load()}"]
    client.close()
    if cluster is not None:
        cluster.close()
    text = "\n".join(lines)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    return text


if __name__ == "__main__":
    print(main())
