<%doc>
  The micro-kernels of the cost model's calibration (specializers/loopnest/cost/native_probes.py).
  Context: kernels ((name, C expression of b[i], c[i], x, y, s) pairs: one loop each, timed
  with vectorization off), vector_kernels (the same, vectorized), threads (whether the module is
  built with OpenMP). Each kernel repeats its loop reps times over arrays of n doubles that fit
  in the L1 cache; the compiler barrier after each pass (an asm that may read and write any
  memory) keeps it from dropping or merging passes, and the stores to a[] keep it from dropping
  the work. Loop distribution is off too, so that a copy loop stays a loop, not a memcpy.
</%doc>\
/* Calibration micro-kernels of the loop-nest cost model. Generated code. */
#include <stdint.h>
#include <math.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define ASP_CLOBBER() __asm__ volatile("" : : : "memory")
#if defined(__clang__)
#define ASP_SCALAR __attribute__((noinline))
#define ASP_SCALAR_LOOP _Pragma("clang loop vectorize(disable) interleave(disable)")
#elif defined(__GNUC__)
#define ASP_NO_VECTORS optimize("no-tree-vectorize", "no-tree-loop-distribute-patterns")
#define ASP_SCALAR __attribute__((noinline, ASP_NO_VECTORS))
#define ASP_SCALAR_LOOP
#else
#define ASP_SCALAR
#define ASP_SCALAR_LOOP
#endif
#if defined(__GNUC__) && !defined(__clang__)
#define ASP_VECTOR __attribute__((noinline, optimize("no-tree-loop-distribute-patterns")))
#else
#define ASP_VECTOR __attribute__((noinline))
#endif

/* Loop overhead: an empty loop whose body the compiler must keep. */
ASP_SCALAR void asp_cal_iteration(double * restrict a, const double * restrict b,
                                  const double * restrict c, int64_t n, int64_t reps,
                                  double x, double y, int64_t s) {
    (void)a; (void)b; (void)c; (void)x; (void)y; (void)s;
    for (int64_t r = 0; r < reps; r++) {
        ASP_SCALAR_LOOP
        for (int64_t i = 0; i < n; i++) {
            __asm__ volatile("");
        }
        ASP_CLOBBER();
    }
}
% for qualifier, group in (("ASP_SCALAR", kernels), ("ASP_VECTOR", vector_kernels)):
% for name, expr in group:

${qualifier} void asp_cal_${name}(double * restrict a, const double * restrict b,
                                  const double * restrict c, int64_t n, int64_t reps,
                                  double x, double y, int64_t s) {
    (void)b; (void)c; (void)x; (void)y; (void)s;
    for (int64_t r = 0; r < reps; r++) {
% if qualifier == "ASP_SCALAR":
        ASP_SCALAR_LOOP
% endif
        for (int64_t i = 0; i < n; i++) {
            a[i] = ${expr};
        }
        ASP_CLOBBER();
    }
}
% endfor
% endfor

/* Memory bandwidth: STREAM's triad (24 bytes an iteration), on the given number of threads;
   fill() touches the arrays first from the threads that will use them. */
void asp_cal_fill(double * restrict a, int64_t n, double x, int32_t threads) {
    (void)threads;
#ifdef _OPENMP
    #pragma omp parallel for schedule(static) num_threads(threads)
#endif
    for (int64_t i = 0; i < n; i++) {
        a[i] = x + (double)(i & 7);
    }
}

void asp_cal_triad(double * restrict a, const double * restrict b, const double * restrict c,
                   int64_t n, int64_t reps, double x, int32_t threads) {
    (void)threads;
    for (int64_t r = 0; r < reps; r++) {
#ifdef _OPENMP
        #pragma omp parallel for schedule(static) num_threads(threads)
#endif
        for (int64_t i = 0; i < n; i++) {
            a[i] = b[i] + x * c[i];
        }
        ASP_CLOBBER();
    }
}
% if threads:

/* OpenMP: entering and leaving an empty parallel region, and one barrier inside one. */
void asp_cal_fork(int64_t reps, int32_t threads) {
    for (int64_t r = 0; r < reps; r++) {
        #pragma omp parallel num_threads(threads)
        {
            ASP_CLOBBER();
        }
    }
}

void asp_cal_barrier(int64_t reps, int32_t threads) {
    #pragma omp parallel num_threads(threads)
    {
        for (int64_t r = 0; r < reps; r++) {
            #pragma omp barrier
        }
    }
}

/* A worksharing loop of one iteration per thread, with and without a sum reduction: their
   difference is combining the threads' partial sums. */
double asp_cal_for(int64_t reps, int32_t threads) {
    double total = 0.0;
    #pragma omp parallel num_threads(threads)
    {
        for (int64_t r = 0; r < reps; r++) {
            #pragma omp for schedule(static)
            for (int32_t k = 0; k < threads; k++) {
                ASP_CLOBBER();
            }
        }
    }
    return total;
}

double asp_cal_reduce(int64_t reps, int32_t threads) {
    double total = 0.0;
    #pragma omp parallel num_threads(threads)
    {
        for (int64_t r = 0; r < reps; r++) {
            #pragma omp for schedule(static) reduction(+:total)
            for (int32_t k = 0; k < threads; k++) {
                total += 1.0;
                ASP_CLOBBER();
            }
        }
    }
    return total;
}
% endif
