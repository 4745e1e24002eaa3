<%doc>
  Host emulation of a CUDA module: the CUDA source compiled as C++ for the CPU, with one
  launcher per __global__ function that runs the grid and the block one thread at a time; a
  kernel that synchronizes runs the threads of each block as fibers that meet at each
  __syncthreads. Context: source (the CUDA text), kernels (list of (name, [(ctype, pname),
  ...])), and optionally synchronizing (the names of the kernels that synchronize; none if
  not given).
</%doc>\
<% synchronizing_kernels = set(context.get("synchronizing", ())) %>\
// asp_core host emulation of the CUDA execution model (one thread at a time)
#include <cmath>
#include <cstdint>
#include <cstddef>
#include <algorithm>
#include <pthread.h>
% if synchronizing_kernels:
## (only a module with a synchronizing kernel pays for compiling the fibers: these headers
## took a module's compile from 0.26 to 0.68 s)
#include <functional>
#include <vector>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>
% endif
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
// One block runs at a time: a variable of the block's shared memory is one variable.
#define __shared__ static
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

enum { ASP_OK = 0, ASP_DIVERGED = 1, ASP_NO_STACKS = 2, ASP_UNEXPECTED_BARRIER = 3 };
static int asp_failure = ASP_OK;
% if not synchronizing_kernels:
// No kernel of this module synchronizes: only a block of one thread could wait at a barrier.
static void asp_barrier(int) {
    if ((unsigned long long)blockDim.x * blockDim.y * blockDim.z > 1)
        asp_failure = ASP_UNEXPECTED_BARRIER;
}
#define __syncthreads() asp_barrier(__LINE__)
% else:
// ---- barriers: the threads of a block as fibers ----
// A fiber runs its thread until the thread reaches a barrier (it then waits) or ends; once
// every thread of the block has, the waiting ones go on, in a new order, if they all wait at
// the same barrier and none has ended; else the launch stops with ASP_DIVERGED (on a GPU, a
// barrier not reached by every thread of the block hangs or is undefined).
enum { ASP_RUNNING = 0, ASP_WAITING = 1, ASP_DONE = 2 };
struct asp_fiber { ucontext_t context; int state; int site; dim3 index; };
static ucontext_t asp_scheduler;
static asp_fiber *asp_current = nullptr;       // the fiber running (none: no fibers)
static const std::function<void()> *asp_body = nullptr;   // the kernel call of each fiber
static void asp_barrier(int site) {
    asp_fiber *f = asp_current;
    if (f == nullptr) {   // a kernel launched without fibers: only a block of one can wait
        if ((unsigned long long)blockDim.x * blockDim.y * blockDim.z > 1)
            asp_failure = ASP_UNEXPECTED_BARRIER;
        return;
    }
    f->state = ASP_WAITING;
    f->site = site;
    __asm__ __volatile__("" ::: "memory");
    swapcontext(&f->context, &asp_scheduler);
    __asm__ __volatile__("" ::: "memory");   // shared memory and threadIdx as others left them
    threadIdx = f->index;
}
#define __syncthreads() asp_barrier(__LINE__)
static void asp_fiber_main() {
    (*asp_body)();
    asp_current->state = ASP_DONE;   // and back to the scheduler (uc_link)
}
// Stacks of the fibers of one block, each above a page no thread may touch.
static const size_t asp_stack_bytes = 1024 * 1024;   // reserved, touched as used
struct asp_stacks {
    char *base = nullptr;
    size_t each = 0, bytes = 0;
    explicit asp_stacks(unsigned long long n) {
        const size_t page = (size_t)sysconf(_SC_PAGESIZE);
        each = asp_stack_bytes + page;
        bytes = each * n;
        void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) { bytes = 0; return; }
        base = (char *)p;
        for (unsigned long long t = 0; t < n; ++t)
            if (mprotect(base + t * each, page, PROT_NONE) != 0) { release(); return; }
    }
    void release() { if (base) munmap(base, bytes); base = nullptr; }
    ~asp_stacks() { release(); }
};
% endif

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
// One launch at a time in a process (the emulation's state above is the module's own).
static pthread_mutex_t asp_launch_lock = PTHREAD_MUTEX_INITIALIZER;
struct asp_locked {
    asp_locked() { pthread_mutex_lock(&asp_launch_lock); }
    ~asp_locked() { pthread_mutex_unlock(&asp_launch_lock); }
};
% if synchronizing_kernels:
// Threads of a block as fibers (the visiting order as above, a new one after each barrier).
static int asp_run_block(unsigned long long asp_nt, unsigned long long asp_kb,
                         std::vector<asp_fiber> &fibers, asp_stacks &stacks) {
    const size_t page = stacks.each - asp_stack_bytes;
    for (unsigned long long t = 0; t < asp_nt; ++t) {
        asp_fiber &f = fibers[t];
        f.state = ASP_RUNNING;
        f.site = 0;
        f.index = dim3{(unsigned int)(t % blockDim.x), (unsigned int)(t / blockDim.x % blockDim.y),
                       (unsigned int)(t / ((unsigned long long)blockDim.x * blockDim.y))};
        getcontext(&f.context);
        f.context.uc_stack.ss_sp = stacks.base + t * stacks.each + page;
        f.context.uc_stack.ss_size = asp_stack_bytes;
        f.context.uc_link = &asp_scheduler;
        makecontext(&f.context, asp_fiber_main, 0);
    }
    for (unsigned long long phase = 0;; ++phase) {
        const asp_order order = asp_order_of(asp_nt, 2 + asp_kb + phase * 0x100000001ULL);
        for (unsigned long long asp_kt = 0; asp_kt < asp_nt; ++asp_kt) {
            asp_fiber &f = fibers[asp_visit(order, asp_kt)];
            if (f.state == ASP_DONE) continue;
            f.state = ASP_RUNNING;
            threadIdx = f.index;
            asp_current = &f;
            __asm__ __volatile__("" ::: "memory");
            swapcontext(&asp_scheduler, &f.context);
            __asm__ __volatile__("" ::: "memory");
            asp_current = nullptr;
        }
        unsigned long long waiting = 0, done = 0;
        int site = 0;
        bool same = true;
        for (unsigned long long t = 0; t < asp_nt; ++t) {
            if (fibers[t].state == ASP_DONE) { ++done; continue; }
            if (waiting++ == 0) site = fibers[t].site;
            else same = same && fibers[t].site == site;
        }
        if (waiting == 0) return ASP_OK;
        if (done || !same) return ASP_DIVERGED;
    }
}
% endif
% for name, params in kernels:
<% synchronizing = name in synchronizing_kernels %>\

extern "C" int asp_launch_${name}(unsigned int asp_gx, unsigned int asp_gy, unsigned int asp_gz,
        unsigned int asp_nx, unsigned int asp_ny, unsigned int asp_nz${"".join(", %s %s" % p for p in params)}) {
    const asp_locked asp_guard;
    gridDim = dim3{asp_gx, asp_gy, asp_gz};
    blockDim = dim3{asp_nx, asp_ny, asp_nz};
    asp_failure = ASP_OK;
    const unsigned long long asp_nb = (unsigned long long)asp_gx * asp_gy * asp_gz;
    const unsigned long long asp_nt = (unsigned long long)asp_nx * asp_ny * asp_nz;
    const asp_order asp_blocks = asp_order_of(asp_nb, 1);
% if synchronizing:
    const std::function<void()> asp_call = [&]() { ${name}(${", ".join(p[1] for p in params)}); };
    asp_stacks asp_fiber_stacks(asp_nt);
    if (asp_nt && !asp_fiber_stacks.base) return ASP_NO_STACKS;
    std::vector<asp_fiber> asp_fibers(asp_nt);
    asp_body = &asp_call;
% endif
    for (unsigned long long asp_kb = 0; asp_kb < asp_nb; ++asp_kb) {
        const unsigned long long asp_b = asp_visit(asp_blocks, asp_kb);
        blockIdx = dim3{(unsigned int)(asp_b % asp_gx), (unsigned int)(asp_b / asp_gx % asp_gy),
                        (unsigned int)(asp_b / ((unsigned long long)asp_gx * asp_gy))};
% if synchronizing:
        const int asp_code = asp_run_block(asp_nt, asp_kb, asp_fibers, asp_fiber_stacks);
        if (asp_code) { asp_body = nullptr; return asp_code; }
% else:
        const asp_order asp_threads = asp_order_of(asp_nt, 2 + asp_kb);
        for (unsigned long long asp_kt = 0; asp_kt < asp_nt; ++asp_kt) {
            const unsigned long long asp_t = asp_visit(asp_threads, asp_kt);
            threadIdx = dim3{(unsigned int)(asp_t % asp_nx), (unsigned int)(asp_t / asp_nx % asp_ny),
                             (unsigned int)(asp_t / ((unsigned long long)asp_nx * asp_ny))};
            ${name}(${", ".join(p[1] for p in params)});
            if (asp_failure) return asp_failure;
        }
% endif
    }
% if synchronizing:
    asp_body = nullptr;
% endif
    return asp_failure;
}
% endfor
// ---- launches as cuLaunchKernel makes them ----
// asp_emulated_launch has cuLaunchKernel's signature: the function is one of the asp_params_*
// below, the arguments an array of pointers to their values (asp_core.backends.launches).
typedef int (*asp_params_t)(unsigned int, unsigned int, unsigned int, unsigned int,
                            unsigned int, unsigned int, void **);
% for name, params in kernels:
extern "C" int asp_params_${name}(unsigned int asp_gx, unsigned int asp_gy, unsigned int asp_gz,
        unsigned int asp_nx, unsigned int asp_ny, unsigned int asp_nz, void **asp_p) {
    return asp_launch_${name}(asp_gx, asp_gy, asp_gz, asp_nx, asp_ny, asp_nz${"".join(", *(%s *)asp_p[%d]" % (p[0], k) for k, p in enumerate(params))});
}
% endfor
extern "C" int asp_emulated_launch(void *asp_f, unsigned int asp_gx, unsigned int asp_gy,
        unsigned int asp_gz, unsigned int asp_nx, unsigned int asp_ny, unsigned int asp_nz,
        unsigned int asp_shared, void *asp_stream, void **asp_p, void **asp_extra) {
    (void)asp_shared; (void)asp_stream; (void)asp_extra;
    return ((asp_params_t)asp_f)(asp_gx, asp_gy, asp_gz, asp_nx, asp_ny, asp_nz, asp_p);
}
