"""backends.nvcc: CUDA source compiled for a named architecture, with no GPU."""

import shutil

import pytest

from asp_core.backends import nvcc
from asp_core.errors import CompileError

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")

KERNEL = """
extern "C" __global__ void add(float *a, const float *b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] += b[i];
}
"""


def test_cubin_and_ptx_for_named_architecture():
    assert "sm_90" in nvcc.supported_architectures()
    cubin = nvcc.compile_cuda(KERNEL, arch="sm_90")
    assert cubin[:4] == b"\x7fELF"
    ptx = nvcc.compile_cuda(KERNEL, arch="sm_80", target="ptx").decode()
    assert ".entry add" in ptx and ".target sm_80" in ptx


def test_rejected_source_reports_nvcc_output():
    with pytest.raises(CompileError) as info:
        nvcc.compile_cuda("__global__ void k(float *a) { a[0] = undefined_name; }")
    assert "undefined_name" in info.value.output and info.value.location.line == 1


def test_bad_arguments():
    with pytest.raises(ValueError):
        nvcc.compile_cuda(KERNEL, arch="volta")
    with pytest.raises(ValueError):
        nvcc.compile_cuda(KERNEL, target="fatbin")
