"""backends.cuda: real launches through pycuda, where pycuda and a GPU exist.

On machines without them only the graceful absence is tested; the emulation tests cover the
kernel logic there.
"""

import numpy as np
import pytest

from asp_core.backends import cuda
from asp_core.errors import BackendUnavailable


def _gpu_reason():
    try:
        cuda.cuda_context()
    except BackendUnavailable as exc:
        return str(exc)
    return None


REASON = _gpu_reason()
needs_gpu = pytest.mark.skipif(REASON is not None, reason=f"no CUDA here: {REASON}")


def test_absence_is_a_backend_unavailable_error():
    if REASON is None:
        pytest.skip("a GPU is present")
    with pytest.raises(BackendUnavailable):
        cuda.load_cuda_module("extern \"C\" __global__ void k() {}")


@needs_gpu
@pytest.mark.gpu
def test_launch_on_the_gpu():
    module = cuda.load_cuda_module("""
    extern "C" __global__ void scale(double *x, double a, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) x[i] *= a;
    }""")
    x = cuda.to_device(np.arange(100.0))
    module.get_function("scale")(x, np.float64(3.0), np.int32(100), grid=(4, 1, 1), block=(32, 1, 1))
    np.testing.assert_array_equal(x.get(), 3.0 * np.arange(100.0))


def test_each_thread_makes_the_primary_context_current_once(monkeypatch):
    """A driver call needs a current context in the calling thread: the primary context is
    retained once per process and pushed once per thread that uses CUDA (a calibration in a
    background thread, a user's threads), never twice in one thread. (A driver of the test's
    own: pycuda's interface, counting.)"""
    import threading
    import types

    pushes, pops, retained = [], [], []

    class Context:
        def push(self):
            pushes.append(threading.get_ident())

        def pop(self):
            pops.append(threading.get_ident())

    class Device:
        @staticmethod
        def count():
            return 1

        def __init__(self, index):
            pass

        def retain_primary_context(self):
            retained.append(1)
            return Context()

    driver = types.SimpleNamespace(init=lambda: None, Device=Device, Error=RuntimeError)
    monkeypatch.setattr(cuda, "_driver", lambda: driver)
    monkeypatch.setattr(cuda, "_CURRENT", threading.local())
    cuda._primary_context.cache_clear()
    monkeypatch.setattr("atexit.register", lambda *a: None)
    try:
        first = cuda.cuda_context()
        assert cuda.cuda_context() is first
        worker = []
        thread = threading.Thread(target=lambda: worker.append(cuda.cuda_context()) or
                                  worker.append(cuda.cuda_context()))
        thread.start()
        thread.join()
        assert worker == [first, first] and len(retained) == 1
        assert len(pushes) == 2 and pushes[0] != pushes[1]
        # popped on the worker itself as it ended (pycuda aborts the process when a thread
        # ends with a context pushed: a variant built in the background build thread), the
        # main thread's not (at the process's exit)
        assert pops == [pushes[1]]
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(1) as pool:
            pool.submit(cuda.cuda_context).result()
        assert len(pushes) == 3 and pops == [pushes[1], pushes[2]]
    finally:
        cuda._primary_context.cache_clear()


def test_buffers_copy_bytes_both_ways_through_the_driver(monkeypatch):
    """``to_device``, ``empty_on_device`` and ``read_into`` make one allocation per buffer of
    bytes (none for no bytes) and copy C-ordered bytes, whatever their type; a read into an
    array of other bytes or not C-contiguous is refused. (A driver of the test's own: device
    memory as host bytes at made-up addresses.) On a GPU the same runs for real below."""
    import types

    memory: dict[int, bytearray] = {}

    def mem_alloc(nbytes):
        assert nbytes > 0
        address = 4096 * (len(memory) + 1)
        memory[address] = bytearray(nbytes)
        return address

    def memcpy_htod(address, array):
        memory[address][:] = np.ascontiguousarray(array).tobytes()

    def memcpy_dtoh(array, address):
        assert array.flags.c_contiguous
        array.view(np.uint8).reshape(-1)[:] = np.frombuffer(memory[address], np.uint8)

    driver = types.SimpleNamespace(mem_alloc=mem_alloc, memcpy_htod=memcpy_htod,
                                   memcpy_dtoh=memcpy_dtoh)
    monkeypatch.setattr(cuda, "_driver", lambda: driver)
    monkeypatch.setattr(cuda, "cuda_context", lambda device=0: None)
    _round_trips(cuda)
    assert len(memory) == 4   # one allocation per buffer with bytes


def _round_trips(cuda):
    fortran = np.asfortranarray(np.arange(12.0).reshape(3, 4))
    up = cuda.to_device(fortran)
    assert (up.shape, up.dtype, up.nbytes) == ((3, 4), np.float64, 96)
    np.testing.assert_array_equal(up.get(), fortran)
    flags = cuda.to_device(np.array([True, False, True]))
    into = np.zeros(3, np.uint8)
    cuda.read_into([(flags, into)])
    assert into.tolist() == [1, 0, 1]
    empty = cuda.to_device(np.zeros((0, 5)))
    assert empty.gpudata is None and empty.get().shape == (0, 5)
    cuda.read_into([(empty, np.zeros((0, 5)))])
    made = cuda.empty_on_device((2, 2), np.int32)
    cuda.read_into([(up, np.empty((4, 3)))])   # the same bytes, another shape
    with pytest.raises(ValueError):
        cuda.read_into([(up, np.empty(11))])
    with pytest.raises(ValueError):
        cuda.read_into([(up, np.empty((8, 3))[::2])])
    assert made.nbytes == 16
    two = cuda.to_device(np.arange(3, dtype=np.int16))
    assert two.get().tolist() == [0, 1, 2]


@needs_gpu
@pytest.mark.gpu
def test_buffers_copy_bytes_both_ways_on_the_gpu():
    _round_trips(cuda)
