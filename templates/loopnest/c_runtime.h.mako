<%doc>
  Python's meaning in C: the helpers generated loop-nest code calls (included by c_module.c.mako
  and, for OpenCL C and CUDA C device kernels, by device_module.mako: ASP_DEVICE).
  An error records the first failure in the call's asp_error (under a critical section when
  compiled with OpenMP) and returns 0; the call raises the matching Python exception after it
  returns. No context.
</%doc>\
#if defined(__OPENCL_VERSION__)
/* OpenCL C (a device kernel: codegen.device): the fixed-width types, and doubles where the
   device has them. Without them (or with ASP_NO_F64 defined: device_variants, for a device
   that reports none) the helpers in double are left out, so that a nest computing in float
   alone builds, and one that needs a double fails to build. */
#if defined(cl_khr_fp64) && !defined(ASP_NO_F64)
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#elif !defined(ASP_NO_F64)
#define ASP_NO_F64 1
#endif
#pragma OPENCL FP_CONTRACT OFF
typedef char int8_t; typedef short int16_t; typedef int int32_t; typedef long int64_t;
typedef uchar uint8_t; typedef ushort uint16_t; typedef uint uint32_t; typedef ulong uint64_t;
#define INT64_C(c) c##L
#define UINT64_C(c) c##UL
#define INT64_MAX 9223372036854775807L
#define INT64_MIN (-INT64_MAX - 1)
#define UINT64_MAX 18446744073709551615UL
#define INT8_MIN (-128)
#define INT8_MAX 127
#define INT16_MIN (-32768)
#define INT16_MAX 32767
#define INT32_MIN (-2147483647 - 1)
#define INT32_MAX 2147483647
#define UINT8_MAX 255
#define UINT16_MAX 65535
#define UINT32_MAX 4294967295U
/* OpenCL's math functions are overloaded on float and double: the C library's float names. */
<% c_math = """acos acosh asin asinh atan atan2 atanh cbrt ceil copysign cos cosh erf erfc exp
exp2 expm1 fabs fdim floor fma fmax fmin fmod hypot lgamma log log10 log1p log2 logb nextafter
pow remainder rint round sin sinh sqrt tan tanh tgamma trunc""".split() %>\
% for name in c_math:
#define ${name}f ${name}
% endfor
#define ASP_DEVICE 1
#define ASP_INLINE static inline
#else
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#if defined(__CUDACC__) || defined(ASP_CUDA_EMULATION)
/* CUDA C (a device kernel, or its host emulation: asp_core.backends.emulation). */
#define ASP_DEVICE 1
#define ASP_INLINE static __device__ inline
#endif
#endif
#ifdef ASP_DEVICE
/* A device thread records its errors in its own record: no lock, no atomics. */
#define ASP_COLD_FN ASP_INLINE
#else
#define ASP_INLINE static inline
#define ASP_COLD_FN __attribute__((noinline, cold)) static
#endif
#ifdef _OPENMP
#include <omp.h>
#define ASP_CRITICAL _Pragma("omp critical(asp_error)")
#else
#define ASP_CRITICAL
#endif
#define ASP_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define ASP_LIKELY(x) __builtin_expect(!!(x), 1)
#if defined(__CUDACC__) && !defined(__clang__)
/* nvcc has no overflow builtins in device code: the same tests, by hand. */
ASP_INLINE bool asp_add_ovf(int64_t a, int64_t b, int64_t *r) {
    *r = (int64_t)((uint64_t)a + (uint64_t)b); return ((a ^ *r) & (b ^ *r)) < 0;
}
ASP_INLINE bool asp_sub_ovf(int64_t a, int64_t b, int64_t *r) {
    *r = (int64_t)((uint64_t)a - (uint64_t)b); return ((a ^ b) & (a ^ *r)) < 0;
}
ASP_INLINE bool asp_mul_ovf(int64_t a, int64_t b, int64_t *r) {
    *r = (int64_t)((uint64_t)a * (uint64_t)b);
    return __mul64hi(a, b) != (*r < 0 ? -1 : 0);
}
#else
#define asp_add_ovf __builtin_add_overflow
#define asp_sub_ovf __builtin_sub_overflow
#define asp_mul_ovf __builtin_mul_overflow
#endif

enum {
    ASP_INDEX_ERROR = 1,      /* IndexError: index out of bounds                         */
    ASP_ZERO_DIVISION = 2,    /* ZeroDivisionError between Python numbers                */
    ASP_MATH_DOMAIN = 3,      /* ValueError: math domain error                           */
    ASP_MATH_RANGE = 4,       /* OverflowError: math range error                         */
    ASP_INT_OVERFLOW = 5,     /* a Python int beyond 64 bits (Python would not overflow) */
    ASP_COMPLEX = 6,          /* a Python float power with a complex result              */
    ASP_NAN_TO_INT = 7,       /* ValueError: cannot convert float NaN to integer         */
    ASP_INF_TO_INT = 8,       /* OverflowError: cannot convert float infinity to integer */
    ASP_INT_BOUNDS = 9,       /* OverflowError: Python integer out of bounds for a dtype */
    ASP_NO_MEMORY = 10        /* a transposed copy (schedule.packing) was not allocated  */
};

typedef struct { int32_t code; int32_t where; int64_t value; int64_t extent; } asp_error;

#ifdef ASP_DEVICE
ASP_INLINE void asp_fail(asp_error *e, int32_t code, int32_t where, int64_t value,
                         int64_t extent) {
    if (e->code == 0) { e->where = where; e->value = value; e->extent = extent; e->code = code; }
}
ASP_INLINE bool asp_ok(asp_error *e) { return e->code == 0; }
#else
__attribute__((noinline, cold)) static void asp_fail(asp_error *e, int32_t code, int32_t where,
                                                     int64_t value, int64_t extent) {
    ASP_CRITICAL
    {
        if (e->code == 0) {
            e->where = where; e->value = value; e->extent = extent;
            __atomic_store_n(&e->code, code, __ATOMIC_RELEASE);
        }
    }
}

/* No error recorded yet (read by other threads while one may record one). */
static inline bool asp_ok(asp_error *e) { return __atomic_load_n(&e->code, __ATOMIC_ACQUIRE) == 0; }
#endif

/* Python wraps negative indices; anything else out of range is an IndexError. */
ASP_INLINE bool asp_index_ok(asp_error *e, int32_t where, int64_t raw, int64_t *index,
                                int64_t extent) {
    int64_t k = raw < 0 ? raw + extent : raw;
    if (ASP_UNLIKELY((uint64_t)k >= (uint64_t)extent)) { asp_fail(e, ASP_INDEX_ERROR, where, raw, extent); return false; }
    *index = k;
    return true;
}

/* Iterations of range(lo, hi, step), for loops that come near the ends of int64 (the
   binding's "wide" loops): unsigned arithmetic cannot overflow, as lo + k * step could. */
ASP_INLINE uint64_t asp_trip_count(int64_t lo, int64_t hi, int64_t step) {
    if (step > 0) return hi > lo ? ((uint64_t)hi - (uint64_t)lo - 1) / (uint64_t)step + 1 : 0;
    return lo > hi ? ((uint64_t)lo - (uint64_t)hi - 1) / ((uint64_t)0 - (uint64_t)step) + 1 : 0;
}

/* ---- arithmetic between Python ints: exact, or an error beyond 64 bits ---- */
ASP_INLINE int64_t asp_add_py(asp_error *e, int64_t a, int64_t b) {
    int64_t r; if (ASP_UNLIKELY(asp_add_ovf(a, b, &r))) { asp_fail(e, ASP_INT_OVERFLOW, 0, 0, 0); return 0; } return r;
}
ASP_INLINE int64_t asp_sub_py(asp_error *e, int64_t a, int64_t b) {
    int64_t r; if (ASP_UNLIKELY(asp_sub_ovf(a, b, &r))) { asp_fail(e, ASP_INT_OVERFLOW, 0, 0, 0); return 0; } return r;
}
ASP_INLINE int64_t asp_mul_py(asp_error *e, int64_t a, int64_t b) {
    int64_t r; if (ASP_UNLIKELY(asp_mul_ovf(a, b, &r))) { asp_fail(e, ASP_INT_OVERFLOW, 0, 0, 0); return 0; } return r;
}
ASP_INLINE int64_t asp_floordiv_py_i64(asp_error *e, int64_t a, int64_t b) {
    if (ASP_UNLIKELY(b == 0)) { asp_fail(e, ASP_ZERO_DIVISION, 0, 0, 0); return 0; }
    if (ASP_UNLIKELY(b == -1 && a == INT64_MIN)) { asp_fail(e, ASP_INT_OVERFLOW, 0, 0, 0); return 0; }
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
ASP_INLINE int64_t asp_mod_py_i64(asp_error *e, int64_t a, int64_t b) {
    if (ASP_UNLIKELY(b == 0)) { asp_fail(e, ASP_ZERO_DIVISION, 0, 0, 0); return 0; }
    if (b == -1) return 0;
    int64_t r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
ASP_INLINE int64_t asp_ipow_py(asp_error *e, int64_t base, int64_t exp) {
    int64_t r = 1;
    while (exp > 0) {
        if (exp & 1) r = asp_mul_py(e, r, base);
        exp >>= 1;
        if (exp) base = asp_mul_py(e, base, base);
    }
    return r;
}
ASP_INLINE int64_t asp_abs_py(asp_error *e, int64_t a) {
    if (ASP_UNLIKELY(a == INT64_MIN)) { asp_fail(e, ASP_INT_OVERFLOW, 0, 0, 0); return 0; }
    return a < 0 ? -a : a;
}

/* ---- NumPy integers: wrap around; division by zero gives 0 ---- */
ASP_INLINE int64_t asp_floordiv_i64(int64_t a, int64_t b) {
    if (b == 0) return 0;
    if (b == -1) return (int64_t)(0 - (uint64_t)a);
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
ASP_INLINE int64_t asp_mod_i64(int64_t a, int64_t b) {
    if (b == 0 || b == -1) return 0;
    int64_t r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
#define asp_floordiv_i32(a, b) ((int32_t)asp_floordiv_i64((a), (b)))
#define asp_floordiv_i16(a, b) ((int16_t)asp_floordiv_i64((a), (b)))
#define asp_floordiv_i8(a, b) ((int8_t)asp_floordiv_i64((a), (b)))
#define asp_mod_i32(a, b) ((int32_t)asp_mod_i64((a), (b)))
#define asp_mod_i16(a, b) ((int16_t)asp_mod_i64((a), (b)))
#define asp_mod_i8(a, b) ((int8_t)asp_mod_i64((a), (b)))
ASP_INLINE uint64_t asp_floordiv_u64(uint64_t a, uint64_t b) { return b ? a / b : 0; }
ASP_INLINE uint64_t asp_mod_u64(uint64_t a, uint64_t b) { return b ? a % b : 0; }
#define asp_floordiv_u32(a, b) ((uint32_t)asp_floordiv_u64((a), (b)))
#define asp_floordiv_u16(a, b) ((uint16_t)asp_floordiv_u64((a), (b)))
#define asp_floordiv_u8(a, b) ((uint8_t)asp_floordiv_u64((a), (b)))
#define asp_mod_u32(a, b) ((uint32_t)asp_mod_u64((a), (b)))
#define asp_mod_u16(a, b) ((uint16_t)asp_mod_u64((a), (b)))
#define asp_mod_u8(a, b) ((uint8_t)asp_mod_u64((a), (b)))
ASP_INLINE uint64_t asp_ipow_u64(uint64_t base, int64_t exp) {
    uint64_t r = 1;
    while (exp > 0) { if (exp & 1) r *= base; exp >>= 1; if (exp) base *= base; }
    return r;
}
#define asp_ipow_i64(a, k) ((int64_t)asp_ipow_u64((uint64_t)(a), (k)))
#define asp_ipow_i32(a, k) ((int32_t)asp_ipow_u64((uint64_t)(a), (k)))
#define asp_ipow_i16(a, k) ((int16_t)asp_ipow_u64((uint64_t)(a), (k)))
#define asp_ipow_i8(a, k) ((int8_t)asp_ipow_u64((uint64_t)(a), (k)))
#define asp_ipow_u32(a, k) ((uint32_t)asp_ipow_u64((uint64_t)(a), (k)))
#define asp_ipow_u16(a, k) ((uint16_t)asp_ipow_u64((uint64_t)(a), (k)))
#define asp_ipow_u8(a, k) ((uint8_t)asp_ipow_u64((uint64_t)(a), (k)))
ASP_INLINE int64_t asp_abs_i64(int64_t a) { return a < 0 ? (int64_t)(0 - (uint64_t)a) : a; }
#define asp_abs_i32(a) ((int32_t)((a) < 0 ? -(int64_t)(a) : (a)))
#define asp_abs_i16(a) ((int16_t)((a) < 0 ? -(int64_t)(a) : (a)))
#define asp_abs_i8(a) ((int8_t)((a) < 0 ? -(int64_t)(a) : (a)))
#define asp_abs_u64(a) (a)
#define asp_abs_u32(a) (a)
#define asp_abs_u16(a) (a)
#define asp_abs_u8(a) (a)

/* ---- floats: floor division and remainder round toward minus infinity (CPython's and
   NumPy's algorithm); the _py forms raise ZeroDivisionError as Python floats do ---- */
% for t, f, sfx in (("double", "", "f64"), ("float", "f", "f32")):
% if t == "double":
#ifndef ASP_NO_F64
% endif
ASP_INLINE ${t} asp_mod_${sfx}(${t} a, ${t} b) {
    ${t} mod = fmod${f}(a, b);
    if (!b) return mod;
    if (mod) { if ((b < 0) != (mod < 0)) mod += b; }
    else mod = copysign${f}((${t})0, b);
    return mod;
}
ASP_INLINE ${t} asp_floordiv_${sfx}(${t} a, ${t} b) {
    if (!b) return a / b;
    ${t} mod = fmod${f}(a, b);
    ${t} div = (a - mod) / b;
    if (mod && ((b < 0) != (mod < 0))) div -= 1;
    if (!div) return copysign${f}((${t})0, a / b);
    ${t} floordiv = floor${f}(div);
    if (div - floordiv > (${t})0.5) floordiv += 1;
    return floordiv;
}
ASP_INLINE ${t} asp_mod_${sfx}_py(asp_error *e, ${t} a, ${t} b) {
    if (ASP_UNLIKELY(b == 0)) { asp_fail(e, ASP_ZERO_DIVISION, 0, 0, 0); return 0; }
    return asp_mod_${sfx}(a, b);
}
ASP_INLINE ${t} asp_floordiv_${sfx}_py(asp_error *e, ${t} a, ${t} b) {
    if (ASP_UNLIKELY(b == 0)) { asp_fail(e, ASP_ZERO_DIVISION, 0, 0, 0); return 0; }
    return asp_floordiv_${sfx}(a, b);
}
ASP_INLINE ${t} asp_np_maximum_${sfx}(${t} a, ${t} b) { return (a >= b || isnan(a)) ? a : b; }
ASP_INLINE ${t} asp_np_minimum_${sfx}(${t} a, ${t} b) { return (a <= b || isnan(a)) ? a : b; }
% if t == "double":
#endif
% endif
% endfor
#ifndef ASP_NO_F64
/* ---- helpers in double: none on a device without doubles ---- */
ASP_INLINE double asp_truediv_py(asp_error *e, double a, double b) {
    if (ASP_UNLIKELY(b == 0)) { asp_fail(e, ASP_ZERO_DIVISION, 0, 0, 0); return 0; }
    return a / b;
}
ASP_INLINE double asp_pow_py(asp_error *e, double a, double b) {
    if (ASP_UNLIKELY(a == 0 && b < 0)) { asp_fail(e, ASP_ZERO_DIVISION, 0, 0, 0); return 0; }
    if (ASP_UNLIKELY(a < 0 && isfinite(a) && isfinite(b) && b != floor(b))) {
        asp_fail(e, ASP_COMPLEX, 0, 0, 0); return 0;
    }
    double r = pow(a, b);
    if (ASP_UNLIKELY(isinf(r) && isfinite(a) && isfinite(b))) { asp_fail(e, ASP_MATH_RANGE, 0, 0, 0); return 0; }
    return r;
}

/* ---- conversions with Python's checks ---- */
ASP_INLINE int64_t asp_f2i(asp_error *e, double x) {          /* int(x) */
    if (ASP_UNLIKELY(isnan(x))) { asp_fail(e, ASP_NAN_TO_INT, 0, 0, 0); return 0; }
    if (ASP_UNLIKELY(isinf(x))) { asp_fail(e, ASP_INF_TO_INT, 0, 0, 0); return 0; }
    if (ASP_UNLIKELY(x >= 9223372036854775808.0 || x < -9223372036854775808.0)) {
        asp_fail(e, ASP_INT_OVERFLOW, 0, 0, 0); return 0;
    }
    return (int64_t)x;
}
#endif
% for name, lo, hi in (("i8", "INT8_MIN", "INT8_MAX"), ("i16", "INT16_MIN", "INT16_MAX"), ("i32", "INT32_MIN", "INT32_MAX"), ("u8", "0", "UINT8_MAX"), ("u16", "0", "UINT16_MAX"), ("u32", "0", "UINT32_MAX")):
ASP_INLINE int64_t asp_fit_${name}(asp_error *e, int64_t v) {
    if (ASP_UNLIKELY(v < ${lo} || v > ${hi})) { asp_fail(e, ASP_INT_BOUNDS, ${loop.index}, v, 0); return 0; }
    return v;
}
% endfor
ASP_INLINE int64_t asp_fit_i64(asp_error *e, int64_t v) { (void)e; return v; }

#ifndef ASP_NO_F64
/* ---- the math module: CPython's checks on results (nan from a number: ValueError;
   infinity from a finite number: OverflowError or, at a pole, ValueError) ---- */
ASP_COLD_FN double asp_check_slow(asp_error *e, double r, int nan_in,
                                                           int finite_in, int can_overflow) {
    if (isnan(r) && !nan_in) { asp_fail(e, ASP_MATH_DOMAIN, 0, 0, 0); return 0; }
    if (isinf(r) && finite_in) {
        asp_fail(e, can_overflow ? ASP_MATH_RANGE : ASP_MATH_DOMAIN, 0, 0, 0); return 0;
    }
    return r;
}
/* One test of the result on the hot path; its arguments are looked at only when it is not
   finite (black_scholes: 5 checked calls per element, the split saves a few ns each). */
ASP_INLINE double asp_check1(asp_error *e, double r, double x, int can_overflow) {
    if (ASP_LIKELY(isfinite(r))) return r;
    return asp_check_slow(e, r, isnan(x), isfinite(x), can_overflow);
}
ASP_INLINE double asp_check2(asp_error *e, double r, double x, double y, int can_overflow) {
    if (ASP_LIKELY(isfinite(r))) return r;
    return asp_check_slow(e, r, isnan(x) || isnan(y), isfinite(x) && isfinite(y), can_overflow);
}
#define asp_math1(e, f, x, can_overflow) \
    ({ double asp_x_ = (x); asp_check1((e), f(asp_x_), asp_x_, (can_overflow)); })
#define asp_math2(e, f, x, y, can_overflow) \
    ({ double asp_x_ = (x), asp_y_ = (y); asp_check2((e), f(asp_x_, asp_y_), asp_x_, asp_y_, (can_overflow)); })
/* The same checks in vector mode (codegen.openmp), with no branch and no call, so that the
   loop vectorizes. The fields' tests are comparisons joined by & (nan: x != x; infinite:
   fabs(x) == INFINITY): with && GCC 12's if-conversion gave up on a loop with two checked
   calls of which one has two arguments, and with isnan()/isinf() joined by & it found no
   vector type for black_scholes' loop. The iteration's record ``code`` takes one of two forms, told apart by its
   type:
   * uint64_t: one 2-bit field per checked call of the iteration, in the order Python makes
     the calls (``field``): 2 for a domain error, 3 for a range error. ORing them in costs two
     vector instructions per call; the first failing call is the lowest field set
     (asp_vfields_code). For up to codegen.openmp.VECTOR_FIELDS calls, in a loop whose
     variable stays in 32 bits (the iteration goes above the fields in a 64-bit key).
   * int32_t: the first failure's code itself (any number of calls, any range; each call
     selects, which costs black_scholes about 8% of its time). */
ASP_INLINE double asp_vfirst1(int32_t *code, double r, double x, int can_overflow, int field) {
    int32_t c = (isnan(r) && !isnan(x)) ? ASP_MATH_DOMAIN
              : (isinf(r) && isfinite(x)) ? (can_overflow ? ASP_MATH_RANGE : ASP_MATH_DOMAIN) : 0;
    (void)field;
    *code = *code ? *code : c;
    return c ? 0 : r;
}
ASP_INLINE double asp_vfirst2(int32_t *code, double r, double x, double y, int can_overflow,
                                 int field) {
    int32_t c = (isnan(r) && !isnan(x) && !isnan(y)) ? ASP_MATH_DOMAIN
              : (isinf(r) && isfinite(x) && isfinite(y)) ? (can_overflow ? ASP_MATH_RANGE : ASP_MATH_DOMAIN) : 0;
    (void)field;
    *code = *code ? *code : c;
    return c ? 0 : r;
}
ASP_INLINE double asp_vfield1(uint64_t *code, double r, double x, int can_overflow, int field) {
    uint64_t failed = ((r != r) & (x == x)) | ((fabs(r) == INFINITY) & (fabs(x) < INFINITY));
    uint64_t range = can_overflow & (fabs(r) == INFINITY);
    *code |= failed ? (2u | range) << (2 * field) : 0;
    return r;  /* the iteration's writes are skipped once its code is set */
}
ASP_INLINE double asp_vfield2(uint64_t *code, double r, double x, double y, int can_overflow,
                                 int field) {
    uint64_t failed = ((r != r) & (x == x) & (y == y))
                    | ((fabs(r) == INFINITY) & (fabs(x) < INFINITY) & (fabs(y) < INFINITY));
    uint64_t range = can_overflow & (fabs(r) == INFINITY);
    *code |= failed ? (2u | range) << (2 * field) : 0;
    return r;
}
/* The error code of the first failing call recorded in ``fields``. */
ASP_INLINE int32_t asp_vfields_code(uint64_t fields) {
    while (!(fields & 3)) fields >>= 2;
    return (fields & 3) == 3 ? ASP_MATH_RANGE : ASP_MATH_DOMAIN;
}
#define asp_vmath1(code, f, x, can_overflow, field) \
    ({ double asp_x_ = (x); \
       _Generic((code), uint64_t *: asp_vfield1, int32_t *: asp_vfirst1)( \
           (code), f(asp_x_), asp_x_, (can_overflow), (field)); })
#define asp_vmath2(code, f, x, y, can_overflow, field) \
    ({ double asp_x_ = (x), asp_y_ = (y); \
       _Generic((code), uint64_t *: asp_vfield2, int32_t *: asp_vfirst2)( \
           (code), f(asp_x_, asp_y_), asp_x_, asp_y_, (can_overflow), (field)); })
ASP_INLINE double asp_math_pow(asp_error *e, double x, double y) {
    if (ASP_UNLIKELY(x == 0 && y < 0)) { asp_fail(e, ASP_MATH_DOMAIN, 0, 0, 0); return 0; }
    return asp_check2(e, pow(x, y), x, y, 1);
}
ASP_INLINE double asp_math_fmod(asp_error *e, double x, double y) {
    if (ASP_UNLIKELY(isinf(x) || y == 0)) {
        if (!isnan(x) && !isnan(y)) { asp_fail(e, ASP_MATH_DOMAIN, 0, 0, 0); return 0; }
    }
    return fmod(x, y);
}
ASP_INLINE double asp_math_log2arg(asp_error *e, double x, double base) {
    double num = asp_check1(e, log(x), x, 0);
    double den = asp_check1(e, log(base), base, 0);
    if (ASP_UNLIKELY(den == 0)) { asp_fail(e, ASP_ZERO_DIVISION, 0, 0, 0); return 0; }
    return num / den;
}
#endif  /* ASP_NO_F64 */
