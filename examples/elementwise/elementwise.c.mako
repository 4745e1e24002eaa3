/* ${header} */
#include <math.h>
#include <stdint.h>

/* CPython's checks on math-module results: 1 = ValueError, 2 = OverflowError. */
static inline double asp_check1(double r, double x, int can_overflow, int *err) {
    if (isnan(r) && !isnan(x)) { if (!*err) *err = 1; }
    else if (isinf(r) && isfinite(x)) { if (!*err) *err = can_overflow ? 2 : 1; }
    return r;
}
static inline double asp_check2(double r, double x, double y, int can_overflow, int *err) {
    if (isnan(r) && !isnan(x) && !isnan(y)) { if (!*err) *err = 1; }
    else if (isinf(r) && isfinite(x) && isfinite(y)) { if (!*err) *err = can_overflow ? 2 : 1; }
    return r;
}
/* NumPy's float floor division and remainder (round toward minus infinity). */
static inline double asp_mod(double a, double b) {
    double m = fmod(a, b);
    if (b == 0.0) return m;
    if (m != 0.0) { if ((b < 0) != (m < 0)) m += b; }
    else m = copysign(0.0, b);
    return m;
}
static inline double asp_floordiv(double a, double b) {
    if (b == 0.0) return a / b;
    double m = fmod(a, b);
    double div = (a - m) / b;
    if (m != 0.0 && ((b < 0) != (m < 0))) div -= 1.0;
    double f = floor(div);
    if (div - f > 0.5) f += 1.0;
    return div != 0.0 ? f : copysign(0.0, a / b);
}
/* Python's max(a, b) / min(a, b): the first argument unless the second is strictly beyond. */
static inline double asp_max(double a, double b) { return b > a ? b : a; }
static inline double asp_min(double a, double b) { return b < a ? b : a; }

static inline double ${entry}_scalar(${", ".join("double p_" + p for p in params)}, int *err) {
% for name, value in lets:
    const double v_${name} = ${value};
% endfor
    (void)err;
    return ${result};
}

int ${entry}(int64_t n, double *restrict out${"".join(", const double *restrict a_" + p for p in params)}) {
    int err = 0;
    for (int64_t i = 0; i < n; ++i)
        out[i] = ${entry}_scalar(${", ".join("a_" + p + "[i]" for p in params)}, &err);
    return err;
}
