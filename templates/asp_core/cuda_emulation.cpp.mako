<%doc>
  Host emulation of a CUDA module: the CUDA source compiled as C++ for the CPU, with one
  launcher per __global__ function that runs the grid and the block one thread at a time.
  Context: source (the CUDA text), kernels (list of (name, [(ctype, pname), ...])).
</%doc>\
// asp_core host emulation of the CUDA execution model (one thread at a time)
#include <cmath>
#include <cstdint>
#include <cstddef>
#include <algorithm>
using std::min; using std::max;
struct dim3 { unsigned int x, y, z; };
static dim3 threadIdx, blockIdx, blockDim, gridDim;
static const int warpSize = 32;
#define __global__
#define __device__ static inline
#define __host__
#define __constant__
#define __forceinline__
#define __noinline__
#define __launch_bounds__(...)
static inline float __fdividef(float a, float b) { return a / b; }
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
template <typename T> static inline T atomicAdd(T *p, T v) { T old = *p; *p = old + v; return old; }
template <typename T> static inline T atomicSub(T *p, T v) { T old = *p; *p = old - v; return old; }
template <typename T> static inline T atomicMax(T *p, T v) { T old = *p; *p = old > v ? old : v; return old; }
template <typename T> static inline T atomicMin(T *p, T v) { T old = *p; *p = old < v ? old : v; return old; }
template <typename T> static inline T atomicExch(T *p, T v) { T old = *p; *p = v; return old; }
template <typename T> static inline T atomicOr(T *p, T v) { T old = *p; *p = old | v; return old; }
template <typename T> static inline T atomicCAS(T *p, T cmp, T v) { T old = *p; if (old == cmp) *p = v; return old; }

// ---- the CUDA module ----
${source}
// ---- launchers ----
% for name, params in kernels:

extern "C" void asp_launch_${name}(unsigned int asp_gx, unsigned int asp_gy, unsigned int asp_gz,
        unsigned int asp_nx, unsigned int asp_ny, unsigned int asp_nz${"".join(", %s %s" % p for p in params)}) {
    gridDim = dim3{asp_gx, asp_gy, asp_gz};
    blockDim = dim3{asp_nx, asp_ny, asp_nz};
    for (unsigned int asp_bz = 0; asp_bz < asp_gz; ++asp_bz)
    for (unsigned int asp_by = 0; asp_by < asp_gy; ++asp_by)
    for (unsigned int asp_bx = 0; asp_bx < asp_gx; ++asp_bx) {
        blockIdx = dim3{asp_bx, asp_by, asp_bz};
        for (unsigned int asp_tz = 0; asp_tz < asp_nz; ++asp_tz)
        for (unsigned int asp_ty = 0; asp_ty < asp_ny; ++asp_ty)
        for (unsigned int asp_tx = 0; asp_tx < asp_nx; ++asp_tx) {
            threadIdx = dim3{asp_tx, asp_ty, asp_tz};
            ${name}(${", ".join(p[1] for p in params)});
        }
    }
}
% endfor
