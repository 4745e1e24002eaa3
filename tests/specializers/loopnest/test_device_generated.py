"""Generated kernels (``generators.typed_kernels``) in the device variants against the original
code: at least 300 each in OpenCL (for real, on this machine's OpenCL device) and in the host
emulation of CUDA, and 300 on a GPU where one is (``-m gpu``). Strict kernels: a silent
fallback cannot pass. (A file of their own, apart from ``test_device``: the test suite's
workers take whole files, and these take minutes.)"""

import hypothesis
import pytest
from hypothesis import HealthCheck, given, settings

from .generators import typed_kernels
from .helpers import check_generated
from .test_device import CUDA_MISSING, OPENCL_MISSING, needs_opencl

pytestmark = pytest.mark.slow   # the suite starts it first (about five minutes here)

COUNT = {"opencl": 0, "cuda-emulated": 0}


def check(source: str, backend: str) -> None:
    COUNT[backend] += check_generated(source, backend)


@needs_opencl
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(typed_kernels())
def test_generated_kernels_in_opencl(source):
    check(source, "opencl")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(typed_kernels())
def test_generated_kernels_in_emulated_cuda(source):
    check(source, "cuda-emulated")


#: The GPU's 300 generated kernels come in shards, so that a machine's cores compile them
#: side by side (``-n``, ``--dist load``); each shard runs its own share, counted in the shard.
GPU_SHARDS = 12


@pytest.mark.parametrize("shard", range(GPU_SHARDS))
@pytest.mark.gpu
@pytest.mark.skipif(CUDA_MISSING is not None, reason=f"no CUDA GPU here: {CUDA_MISSING}")
def test_generated_kernels_on_the_gpu(shard):
    share = -(-300 // GPU_SHARDS)
    compared = []

    @hypothesis.seed(shard)
    @settings(max_examples=share + 5, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(typed_kernels())
    def run(source):
        compared.append(check_generated(source, "cuda"))

    run()
    assert sum(compared) >= share, (shard, len(compared), sum(compared))


def test_at_least_300_each():
    """The generated kernels ran (not skipped, not all refused) at least 300 times each."""
    if COUNT["cuda-emulated"] < 300:
        test_generated_kernels_in_emulated_cuda()
    assert COUNT["cuda-emulated"] >= 300, COUNT
    if OPENCL_MISSING is None:
        if COUNT["opencl"] < 300:
            test_generated_kernels_in_opencl()
        assert COUNT["opencl"] >= 300, COUNT
