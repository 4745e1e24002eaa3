"""Backends: turn generated source into something callable.

* ``c``: a C compiler found through codepy, shared libraries loaded with cffi (OpenMP probed).
* ``nvcc``: compile CUDA source for a named architecture (a compile check, no GPU needed).
* ``cuda``: load and launch CUDA modules through pycuda (optional; imported only when used).
* ``emulation``: run a CUDA kernel's source on the CPU, looping over its grid and blocks (in
  order, or in a seeded pseudo-random order).
* ``opencl``: the OpenCL device, programs and buffers through pyopencl (optional).
"""
