"""How a device call reads its written arrays back (``device_variants.DIRECT_BYTES``): small
ones with the error word into new arrays, large ones after it straight into the caller's
arrays (through a new one where the caller's is not C-contiguous). Either way the caller's
arrays end as Python leaves them, and a failing call leaves them untouched."""

import numpy as np
import pytest

from specializers.loopnest import LoopKernel, device_variants

from .test_device import BACKENDS, Faulty

WAYS = {"with the error word": 1 << 62, "after it, straight in": 0}


class Layouts(LoopKernel):
    """Writes a strided view, a Fortran-ordered array, a C one and a bool one; reads the
    strided one as well."""

    def kernel(self, strided, fortran, plain, flags, n, m):
        for i in range(n):
            for j in range(m):
                strided[i, j] = strided[i, j] * 2.0 + i - j
                fortran[i, j] = i * m + j
                plain[i, j] = fortran[i, j] + strided[i, j]
                flags[i, j] = (i + j) % 3 == 0


def layouts(n: int, m: int):
    rng = np.random.default_rng(n * 100 + m)
    base = rng.random((2 * n, 3 * m))
    return [base[::2, ::3], np.asfortranarray(rng.random((n, m))),
            rng.random((n, m)), np.zeros((n, m), np.bool_), n, m]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("way", list(WAYS))
@pytest.mark.parametrize("n,m", [(0, 4), (1, 1), (5, 7), (64, 33)])
def test_written_arrays_of_every_layout_come_back(n, m, way, backend, monkeypatch):
    monkeypatch.setattr(device_variants, "DIRECT_BYTES", WAYS[way])
    want = layouts(n, m)
    Layouts().original_kernel(*want)
    kernel = Layouts(backend=backend, strict=True)
    got = layouts(n, m)   # (not copied: a deep copy of the strided view would be C-ordered)
    assert n * m <= 1 or not (got[0].flags.c_contiguous or got[1].flags.c_contiguous)
    kernel.kernel(*got)
    for g, w in zip(got[:4], want[:4]):
        assert np.array_equal(g, w)
    assert kernel.last_call.nests[0].backend == backend


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("way", list(WAYS))
def test_a_failing_call_leaves_the_arrays_either_way(way, backend, monkeypatch):
    monkeypatch.setattr(device_variants, "DIRECT_BYTES", WAYS[way])
    n = 64
    want_a, want_b = np.arange(float(n)), np.zeros(n)
    with pytest.raises(ZeroDivisionError):
        Faulty().original_kernel(want_a, want_b, 17, n)
    a, b = np.arange(float(n)), np.zeros(n)
    with pytest.raises(ZeroDivisionError):
        Faulty(backend=backend, strict=True).kernel(a, b, 17, n)
    assert np.array_equal(a, want_a) and np.array_equal(b, want_b)


@pytest.mark.parametrize("backend", BACKENDS)
def test_arrays_beyond_the_threshold_come_back_straight(backend, monkeypatch):
    """At the real threshold: 2 MiB written (C and strided), read after the error word."""
    reads = []
    real = device_variants._read_back
    monkeypatch.setattr(device_variants, "_read_back",
                        lambda target, pairs: (reads.append(len(pairs)), real(target, pairs)))
    n, m = 256, 512
    assert n * m * 8 >= device_variants.DIRECT_BYTES
    want = layouts(n, m)
    Layouts().original_kernel(*want)
    got = layouts(n, m)
    Layouts(backend=backend, strict=True).kernel(*got)
    for g, w in zip(got[:4], want[:4]):
        assert np.array_equal(g, w)
    assert reads == [4]
