"""Host-GPU copies through pycuda, each way a device call could make them, side by side.

A device call's time on a GPU is mostly its copies (benchmarks/results/device-cuda-h100.txt):
this measures which way of making them is fastest on the machine, before the CUDA target
uses one. Per array size, the best of ``--rounds`` of each:

- up: ``to_gpu`` (a new device buffer and a pageable copy: what a call does), into a buffer
  made before, from a page-locked array, staged through a page-locked buffer (a host copy,
  then the DMA), staged in chunks on two page-locked buffers (the host copy of one chunk
  beside the DMA of the last), the caller's array registered (page-locked in place) for
  the copy and released after it, ``to_gpu`` from pycuda's memory pool;
- down: ``get()`` (into a new host array: what a call did), into an array in use (its pages
  mapped), into a page-locked array, staged through a page-locked buffer;
- host: ``copyto`` between arrays in use, and into a new array (its pages faulted in).

    python -m benchmarks.bench_copies [--sizes-mib 1 8 64] [--rounds 5]

Needs pycuda and a CUDA GPU.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def best(fn, rounds: int) -> float:
    """The fastest of ``rounds`` runs of ``fn`` (after one to warm up), in seconds."""
    fn()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes-mib", type=int, nargs="+", default=[1, 8, 64])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--chunk-mib", type=int, default=4)
    args = parser.parse_args(argv)

    from asp_core.backends.cuda import cuda_context
    cuda_context()
    import pycuda.driver as drv
    import pycuda.gpuarray as gpuarray
    from pycuda.tools import DeviceMemoryPool

    pool = DeviceMemoryPool()
    stream = drv.Stream()
    print(f"device: {drv.Context.get_device().name()}, load average "
          f"{' '.join(f'{x:.2f}' for x in __import__('os').getloadavg())}")
    print(f"{'MiB':>5} {'way':<34} {'GB/s':>8}")
    for mib in args.sizes_mib:
        n = mib * 2**20 // 8
        a = np.random.default_rng(0).random(n)
        h = np.empty_like(a)
        h[:] = 1.0
        locked = drv.pagelocked_empty(n, np.float64)
        locked[:] = a
        staged = [drv.pagelocked_empty(args.chunk_mib * 2**20 // 8, np.float64)
                  for _ in range(2)]
        done = [drv.Event(), drv.Event()]
        d = gpuarray.to_gpu(a)

        def chunked_up():
            step = staged[0].size
            for k, start in enumerate(range(0, n, step)):
                part = a[start:start + step]
                buf = staged[k % 2][:part.size]
                if k >= 2:
                    done[k % 2].synchronize()   # the DMA that last read this buffer
                np.copyto(buf, part)
                drv.memcpy_htod_async(int(d.gpudata) + start * 8, buf, stream)
                done[k % 2].record(stream)
            stream.synchronize()

        def registered_up():
            mapped = drv.register_host_memory(a)
            drv.memcpy_htod(d.gpudata, mapped)
            mapped.base.unregister()

        def pool_up():
            gpuarray.to_gpu(a, allocator=pool.allocate).gpudata.free()

        ways = [
            ("up   to_gpu (new buffer, pageable)", lambda: gpuarray.to_gpu(a)),
            ("up   into a buffer, pageable", lambda: drv.memcpy_htod(d.gpudata, a)),
            ("up   from page-locked", lambda: drv.memcpy_htod(d.gpudata, locked)),
            ("up   staged (copyto + page-locked)",
             lambda: (np.copyto(locked, a), drv.memcpy_htod(d.gpudata, locked))),
            (f"up   staged in {args.chunk_mib} MiB chunks, 2 buffers", chunked_up),
            ("up   registered in place", registered_up),
            ("up   to_gpu from a memory pool", pool_up),
            ("down get() (new host array)", lambda: d.get()),
            ("down into an array in use", lambda: drv.memcpy_dtoh(h, d.gpudata)),
            ("down into page-locked", lambda: drv.memcpy_dtoh(locked, d.gpudata)),
            ("down staged (page-locked + copyto)",
             lambda: (drv.memcpy_dtoh(locked, d.gpudata), np.copyto(h, locked))),
            ("host copyto, arrays in use", lambda: np.copyto(h, a)),
            ("host copyto into a new array", lambda: np.copyto(np.empty_like(a), a)),
        ]
        for name, fn in ways:
            try:
                seconds = best(fn, args.rounds)
                print(f"{mib:>5} {name:<34} {a.nbytes / seconds / 1e9:>8.2f}", flush=True)
            except Exception as exc:   # one way failing must not hide the others
                print(f"{mib:>5} {name:<34} failed: {type(exc).__name__}: {exc}", flush=True)
        check = np.empty_like(a)
        drv.memcpy_dtoh(check, d.gpudata)
        assert np.array_equal(check, a), "a copy went wrong"


if __name__ == "__main__":
    main()
