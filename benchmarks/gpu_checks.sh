#!/usr/bin/env bash
# The checks that need a CUDA GPU, in one run (a lent GPU machine is held by the minute):
#   1. the tests marked gpu (all of tests/): every device test's "cuda" case (the twelve examples, 300
#      generated kernels in shards, random affine nests, reductions, host loops, Python's
#      meaning of each operation, exits, helpers, the issue audits, the wrong schedule caught);
#   2. the device calibration (cost.device_calibrate) of the GPU, quick;
#   3. benchmarks.bench_device --device cuda: serial C, OpenMP on the machine's cores and
#      CUDA side by side, the model's predictions, the host loop's cost per iteration;
#   4. benchmarks.bench_copies: each way of copying between host and GPU, side by side.
# The calibrations made (host and device) are copied to OUTDIR/calibration, to price the
# GPU's calls on another machine.
#
#     bash benchmarks/gpu_checks.sh [OUTDIR]
#
# On a machine whose Python lacks this project's packages, run benchmarks/gpu_prepare.sh
# first on a machine with network access: it leaves them in .gpu/ (ignored by git), and this
# script puts .gpu/site on PYTHONPATH. Each step has its own time limit (TESTS_S, CALIBRATE_S,
# BENCH_S; on an H100 machine with 16 cores the tests took 260 s, the calibration 20, the
# benchmark 45); logs go to OUTDIR ($OUT where that is set, else /tmp/gpu-checks). STEPS
# picks steps (default "tests calibrate bench copies"; also "profile": a small call
# profiled), TEST_PATHS the tests (default tests/).
set -u
cd "$(dirname "$0")/.."
OUT=${1:-${OUT:-/tmp/gpu-checks}}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PATH="/usr/local/cuda/bin:$PATH" ASP_CACHE_DIR=/tmp/asp-cache
PYTHON=${PYTHON:-python3}
if [ -d .gpu/site ]; then
    export PYTHONPATH="$PWD/.gpu/site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
    tag=$($PYTHON -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
    cp -f .gpu/_coldgate"$tag" specializers/loopnest/ 2>/dev/null || true
fi

step() {   # step NAME SECONDS COMMAND...: run it under a limit, log to OUT/NAME.log
    local name=$1 limit=$2 start=$SECONDS
    shift 2
    timeout -s "${SIGNAL:-TERM}" -k 30 "$limit" "$@" >"$OUT/$name.log" 2>&1
    local rc=$?
    echo "== $name: rc $rc in $((SECONDS - start)) s (limit $limit)"
    tail -n "${TAIL:-6}" "$OUT/$name.log"
}

{
    date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm \
        --format=csv; nproc; $PYTHON -V; nvcc --version | tail -2
    $PYTHON -c 'import numpy, pycuda.driver as d; d.init(); x = d.Device(0)
print("numpy", numpy.__version__, "pycuda", __import__("pycuda").VERSION_TEXT, x.name(),
      x.compute_capability(), d.get_driver_version())'
} >"$OUT/env.log" 2>&1
cat "$OUT/env.log"

if ! $PYTHON -c 'import pycuda.driver' 2>/dev/null && [ -f .gpu/pycuda.tar.gz ]; then
    # the prepared pycuda does not load here: build it from its sources against this Python
    step pycuda-build 240 bash -c 'set -e; rm -rf /tmp/pycuda-src && mkdir /tmp/pycuda-src &&
        tar xzf .gpu/pycuda.tar.gz -C /tmp/pycuda-src --strip-components=1 &&
        cd /tmp/pycuda-src && '"$PYTHON"' configure.py --cuda-root=/usr/local/cuda \
            --no-cuda-enable-curand && '"$PYTHON"' setup.py build_ext -j 16 &&
        mkdir -p '"$PWD"'/.gpu/site && cp -r pycuda '"$PWD"'/.gpu/site/ &&
        cp build/lib*/pycuda/*.so '"$PWD"'/.gpu/site/pycuda/'
fi

# (a test that hangs is stopped by pytest-timeout where it is installed; the step's limit
# interrupts pytest, which then still prints what failed so far)
per_test=$($PYTHON -c 'import pytest_timeout' 2>/dev/null && echo "--timeout=${TEST_S:-150}")
has() { case " ${STEPS:-tests calibrate bench copies} " in *" $1 "*) return 0;; esac; return 1; }
has tests && TAIL=40 SIGNAL=INT step gpu-tests "${TESTS_S:-420}" $PYTHON -m pytest -q -m gpu \
    -n "${WORKERS:-16}" --dist load -p no:cacheprovider -rfE --tb=short --durations=15 \
    $per_test --junitxml="$OUT/gpu-tests.xml" \
    ${TEST_PATHS:-tests}
has calibrate && step calibrate "${CALIBRATE_S:-60}" $PYTHON -m specializers.loopnest calibrate --quick
has bench && TAIL=30 step bench-device "${BENCH_S:-150}" $PYTHON -m benchmarks.bench_device --device cuda \
    --scale "${SCALE:-4}" --rounds "${ROUNDS:-2}" --no-registers
has copies && step copies "${COPIES_S:-60}" $PYTHON -m benchmarks.bench_copies
has profile && TAIL=45 step profile "${PROFILE_S:-60}" $PYTHON -m benchmarks.profile_call \
    --backend cuda
cp -r "$ASP_CACHE_DIR/calibration" "$OUT/" 2>/dev/null || true
