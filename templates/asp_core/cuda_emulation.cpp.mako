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
#define __device__
#define ASP_CUDA_EMULATION 1
#define __host__
#define __constant__
#define __forceinline__ inline
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
// Blocks, and the threads of each block, run one at a time: in order, or, once a seed is set
// (asp_set_order_seed), in a pseudo-random order: the k-th visited is (a k + b) mod n, with
// a coprime to n and (a, b) drawn from the seed, never the identity. A kernel that is correct
// only in one order (a dependence wrongly run in parallel) then shows it.
static unsigned long long asp_order_seed = 0;
extern "C" void asp_set_order_seed(unsigned long long seed) { asp_order_seed = seed; }
static unsigned long long asp_gcd(unsigned long long a, unsigned long long b) {
    while (b) { unsigned long long t = a % b; a = b; b = t; }
    return a;
}
struct asp_order { unsigned long long a, b, n; };
static asp_order asp_order_of(unsigned long long n, unsigned long long salt) {
    if (!asp_order_seed || n < 2) return asp_order{1, 0, n};
    unsigned long long h = (asp_order_seed + salt) * 0x9E3779B97F4A7C15ULL;
    h ^= h >> 29; h *= 0xBF58476D1CE4E5B9ULL; h ^= h >> 32;
    unsigned long long a = 1 + (h % (n - 1)), b = (h >> 17) % n;
    while (asp_gcd(a, n) != 1) a = a % (n - 1) + 1;
    if (a == 1 && b == 0) b = 1;
    return asp_order{a, b, n};
}
static inline unsigned long long asp_visit(const asp_order &o, unsigned long long k) {
    return (unsigned long long)(((unsigned __int128)o.a * k + o.b) % o.n);
}
% for name, params in kernels:

extern "C" void asp_launch_${name}(unsigned int asp_gx, unsigned int asp_gy, unsigned int asp_gz,
        unsigned int asp_nx, unsigned int asp_ny, unsigned int asp_nz${"".join(", %s %s" % p for p in params)}) {
    gridDim = dim3{asp_gx, asp_gy, asp_gz};
    blockDim = dim3{asp_nx, asp_ny, asp_nz};
    const unsigned long long asp_nb = (unsigned long long)asp_gx * asp_gy * asp_gz;
    const unsigned long long asp_nt = (unsigned long long)asp_nx * asp_ny * asp_nz;
    const asp_order asp_blocks = asp_order_of(asp_nb, 1);
    for (unsigned long long asp_kb = 0; asp_kb < asp_nb; ++asp_kb) {
        const unsigned long long asp_b = asp_visit(asp_blocks, asp_kb);
        blockIdx = dim3{(unsigned int)(asp_b % asp_gx), (unsigned int)(asp_b / asp_gx % asp_gy),
                        (unsigned int)(asp_b / ((unsigned long long)asp_gx * asp_gy))};
        const asp_order asp_threads = asp_order_of(asp_nt, 2 + asp_kb);
        for (unsigned long long asp_kt = 0; asp_kt < asp_nt; ++asp_kt) {
            const unsigned long long asp_t = asp_visit(asp_threads, asp_kt);
            threadIdx = dim3{(unsigned int)(asp_t % asp_nx), (unsigned int)(asp_t / asp_nx % asp_ny),
                             (unsigned int)(asp_t / ((unsigned long long)asp_nx * asp_ny))};
            ${name}(${", ".join(p[1] for p in params)});
        }
    }
}
% endfor
