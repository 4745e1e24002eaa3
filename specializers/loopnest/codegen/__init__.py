"""Code generation: one target-independent walker over the scheduled DAST, one emitter per
target: the plain-Python executor (``python``), serial C (``c``), OpenMP C (``openmp``), and
the device kernels in OpenCL C and CUDA C (``device``, one builder with a printer per dialect);
module skeletons in templates."""
