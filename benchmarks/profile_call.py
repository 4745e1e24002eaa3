"""Where a small device call's time goes: the warm call of vadd on ``--n`` elements, timed
(best of ``--calls``), then profiled by cProfile (the functions of most time of their own).

    python -m benchmarks.profile_call [--backend cuda] [--n 16] [--calls 300]

The cost model's ``call_ns`` is this fixed cost, less the launches and copies.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import time

import numpy as np


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="opencl")
    parser.add_argument("--n", type=int, default=16)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args(argv)

    from examples.vadd import VAdd

    kernel = VAdd(backend=args.backend, strict=True)
    a, b, c = np.ones(args.n), np.ones(args.n), np.zeros(args.n)
    kernel.kernel(a, b, c)
    times = []
    for _ in range(args.calls):
        start = time.perf_counter()
        kernel.kernel(a, b, c)
        times.append(time.perf_counter() - start)
    times.sort()
    print(f"{args.backend}, vadd on {args.n} elements: best {times[0] * 1e6:.1f} us, median "
          f"{times[len(times) // 2] * 1e6:.1f} us per call (load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())})")
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(args.calls):
        kernel.kernel(a, b, c)
    profile.disable()
    pstats.Stats(profile).sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
