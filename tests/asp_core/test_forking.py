"""forking: a process forked after OpenMP code ran runs OpenMP again (the runtime's threads are
ended before the fork), or, where that is impossible, knows it must not.

The fork scenarios run in a subprocess with a timeout: a regression hangs, it must not hang
the test session. The loop-nest scenario (multiprocessing workers calling a kernel) is in
tests/specializers/loopnest/test_runtime.py.
"""

import ctypes
import subprocess
import sys
import textwrap

import pytest

from asp_core import forking

# A C module with one parallel region, built and loaded as any OpenMP variant is; then a fork
# whose child runs the region again (SIGALRM ends a child that hangs).
SCENARIO = textwrap.dedent("""
    import os, signal, sys
    from asp_core import forking
    from asp_core.backends.c import compile_c, openmp_flags
    if openmp_flags() is None:
        print("no-openmp"); sys.exit(0)
    if SIMULATE_MISSING:
        forking.find_pause = lambda: (None, "simulated: no omp_pause_resource_all")
    source = '''
    #include <omp.h>
    int threads(void) {
        int n = 0;
        #pragma omp parallel num_threads(2) reduction(+:n)
        n += 1;
        return n;
    }
    '''
    module = compile_c(source, "int threads(void);", name="forktest", openmp=True)
    print("parent", module.lib.threads())      # starts the parent's thread pool
    forking.watch_openmp()
    forgotten = []

    class Owner:
        pass

    owner = Owner()
    forking.on_unusable_child(owner, lambda o, reason: forgotten.append(reason))
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        signal.alarm(20)
        if forking.openmp_unusable():
            print("child unusable", len(forgotten), forking.openmp_unusable())
        else:
            print("child", module.lib.threads())
        sys.stdout.flush()
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    print("child status", status)
    print("parent", module.lib.threads(), forking.openmp_unusable())
""")


def run_scenario(simulate_missing: bool) -> list[str]:
    code = SCENARIO.replace("SIMULATE_MISSING", str(simulate_missing))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.splitlines()
    if lines == ["no-openmp"]:
        pytest.skip("this gcc has no OpenMP (libgomp missing)")
    return lines


def test_a_child_forked_after_openmp_ran_runs_openmp():
    lines = run_scenario(simulate_missing=False)
    assert lines == ["parent 2", "child 2", "child status 0", "parent 2 None"]


def test_without_a_pause_the_child_knows_openmp_must_not_run():
    lines = run_scenario(simulate_missing=True)
    assert lines[0] == "parent 2" and lines[2:] == ["child status 0", "parent 2 None"]
    assert lines[1].startswith("child unusable 1 this process was forked after OpenMP code ran")
    assert "simulated: no omp_pause_resource_all" in lines[1]


def test_find_pause_finds_the_loaded_runtime():
    try:
        ctypes.CDLL("libgomp.so.1")
    except OSError:
        pytest.skip("no libgomp on this machine")
    pause, missing = forking.find_pause()
    assert missing is None and pause(forking.OMP_PAUSE_SOFT) == 0  # no pool yet: nothing to do


def test_an_ordinary_process_may_run_openmp():
    assert forking.openmp_unusable() is None
