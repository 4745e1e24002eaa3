"""C expressions with Python's meaning, typed by ``typeinfer``.

Every operation is computed in the type Python (with NumPy's rules for NumPy values) would use
and cast back to it, so narrow integers wrap as NumPy's do. Where C's meaning differs, a helper
from the module's runtime (``templates/loopnest/c_runtime.h.mako``) is called instead:

* ``//`` and ``%`` round toward minus infinity; an integer division by zero gives 0 between
  NumPy values and raises ZeroDivisionError between Python ints, a float one gives inf/nan
  between NumPy values and raises between Python floats;
* ``**`` of integers (by a non-negative constant) multiplies; of floats calls ``pow``, with
  Python's errors between Python floats;
* arithmetic between Python ints is checked: a result beyond 64 bits raises OverflowError
  (plain Python would have produced a bigger int);
* a Python int combined with a narrower NumPy integer must fit it (NumPy raises OverflowError);
* ``max``/``min`` return the first argument unless the second compares greater/smaller;
  ``abs``, ``int()``, ``float()``, ``bool()`` and the ``math`` functions raise as CPython does
  (``math.sqrt(-1.0)``: ValueError; ``math.exp(1000)``: OverflowError); NumPy's functions
  return nan/inf and never raise.

An error sets the call's error record (the first one wins) and the value 0; the statement's
code then stops the nest (``codegen.c``) and the call raises the matching Python exception
after it returns.
"""

from __future__ import annotations

import itertools
import math
import re
from typing import Callable, Mapping

import numpy as np

from asp_core.errors import UnsupportedArgument
from asp_core.visitors import NodeVisitor

from .. import dast as d
from ..typeinfer import INT, Ty, TypeInfo, binop_type, common_type
from .ranges import INT64_MIN, Interval, excludes_zero, fits, int_range

C_TYPES = {"bool": "bool", "int8": "int8_t", "int16": "int16_t", "int32": "int32_t",
           "int64": "int64_t", "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t",
           "uint64": "uint64_t", "float32": "float", "float64": "double"}

C_RESERVED = frozenset("""auto break case char const continue default do double else enum extern
float for goto if inline int long register restrict return short signed sizeof static struct
switch typedef union unsigned void volatile while bool true false NULL main errno memset
signbit fpclassify isnan isinf isfinite isnormal isgreater isless math_errhandling""".split()) | \
    frozenset("""half uchar ushort uint ulong global local constant private kernel read_only
write_only read_write __global __local __constant __private __kernel get_global_id
get_local_id get_group_id get_global_size threadIdx blockIdx blockDim gridDim warpSize dim3
atomicCAS __syncthreads""".split()) | \
    frozenset("""alignas alignof and_eq asm bitand bitor catch char8_t char16_t char32_t compl
concept const_cast consteval constexpr constinit co_await co_return co_yield decltype delete
dynamic_cast explicit export friend mutable namespace new noexcept not_eq nullptr operator or_eq
protected public reinterpret_cast requires static_assert static_cast std template this
thread_local throw typeid typename using virtual wchar_t xor xor_eq""".split())
# (the second set: OpenCL C and CUDA C, for device kernels, codegen.device; the third: C++'s
# keywords, for CUDA C and its host emulation, which are C++)
#: OpenCL's vector types (``float4``, ``uchar16``...), which no variable may be named.
_VECTOR_TYPE = re.compile(r"(u?char|u?short|u?int|u?long|half|float|double)(2|3|4|8|16)")
#: The C library's math functions (each also with an ``f`` and an ``l`` suffix): a variable of
#: one of these names would hide the function in the generated code.
C_MATH = frozenset("""acos acosh asin asinh atan atan2 atanh cbrt ceil copysign cos cosh erf erfc
exp exp2 expm1 fabs fdim floor fma fmax fmin fmod frexp hypot ilogb ldexp lgamma llrint llround
log log10 log1p log2 logb lrint lround modf nan nearbyint nextafter pow remainder remquo rint
round scalbn sin sinh sqrt tan tanh tgamma trunc""".split())

# math.* functions: C function (double), and whether a finite argument may overflow to inf
# (OverflowError) rather than hit a pole (ValueError), as in CPython's math module.
MATH_1 = {"sqrt": ("sqrt", False), "exp": ("exp", True), "log": ("log", False),
          "log2": ("log2", False), "log10": ("log10", False), "log1p": ("log1p", False),
          "expm1": ("expm1", True), "sin": ("sin", False), "cos": ("cos", False),
          "tan": ("tan", False), "asin": ("asin", False), "acos": ("acos", False),
          "atan": ("atan", False), "sinh": ("sinh", True), "cosh": ("cosh", True),
          "tanh": ("tanh", False), "asinh": ("asinh", False), "acosh": ("acosh", False),
          "atanh": ("atanh", False), "fabs": ("fabs", False), "erf": ("erf", False),
          "erfc": ("erfc", False), "gamma": ("tgamma", True), "lgamma": ("lgamma", True)}
MATH_2 = {"atan2": ("atan2", False), "hypot": ("hypot", True), "copysign": ("copysign", False),
          "fmod": ("fmod", False), "pow": ("pow", True)}
NUMPY_1 = {"sqrt": "sqrt", "exp": "exp", "exp2": "exp2", "log": "log", "log2": "log2",
           "log10": "log10", "log1p": "log1p", "expm1": "expm1", "sin": "sin", "cos": "cos",
           "tan": "tan", "arcsin": "asin", "arccos": "acos", "arctan": "atan", "sinh": "sinh",
           "cosh": "cosh", "tanh": "tanh", "arcsinh": "asinh", "arccosh": "acosh",
           "arctanh": "atanh", "floor": "floor", "ceil": "ceil", "trunc": "trunc",
           "fabs": "fabs", "cbrt": "cbrt"}
NUMPY_2 = {"arctan2": "atan2", "hypot": "hypot", "copysign": "copysign", "power": "pow",
           "fmin": "fmin", "fmax": "fmax"}
#: C library functions the compiler turns into instructions (vectorizable as they are).
INSTRUCTIONS = frozenset({"sqrt", "fabs", "floor", "ceil", "trunc", "fmin", "fmax", "copysign"})


def ctype(ty: Ty) -> str:
    return C_TYPES[ty.dtype.name]


def suffix(ty: Ty) -> str:
    """Helper-name suffix of a type (``f64``, ``i32``, ...)."""
    return {"bool": "b", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
            "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
            "float32": "f32", "float64": "f64"}[ty.dtype.name]


def c_identifier(name: str) -> str:
    """A C identifier for a Python name (``self.n`` -> ``self__n``; if-conversion's
    ``__asp_p1`` is ``asp_pred1``, an inlined call's ``__asp_a1`` ``asp_arg1``). A name the generated code or its headers could already
    use gets a ``_`` appended: C keywords, math functions, type names (``*_t``), macros
    (``INT64_MAX``, ``NAN``), the runtime's ``asp_``/``omp_`` names, and the extents and
    strides of arrays (``A_n0``, ``A_s1``)."""
    if name.startswith("__asp_p"):
        return "asp_pred" + name[len("__asp_p"):]
    if name.startswith("__asp_a"):   # an inlined call's argument (``lowering.inline``)
        return "asp_arg" + name[len("__asp_a"):]
    ident = name.replace(".", "__")
    if ident in C_RESERVED or ident in C_MATH or _VECTOR_TYPE.fullmatch(ident) or \
            (ident[-1] in "fl" and ident[:-1] in C_MATH) or \
            ident.startswith(("asp_", "ASP_", "omp_", "_")) or ident.endswith("_t") or \
            ident in ("NAN", "INFINITY", "HUGE_VAL", "EOF") or \
            (ident.isupper() and "_" in ident) or re.fullmatch(r".*_[ns][0-9]+", ident):
        ident += "_"
    return ident


def c_float(value: float, single: bool = False) -> str:
    if math.isnan(value):
        return "NAN"
    if math.isinf(value):
        return "INFINITY" if value > 0 else "(-INFINITY)"
    text = repr(float(value))
    return text + ("f" if single else "")


class CExpression(NodeVisitor):
    """Prints expressions of one nest; ``array`` prints an element read (it knows layouts
    and checked subscripts), ``index`` says whether plain int64 arithmetic is wanted (for
    subscripts and bounds, whose ranges are checked separately)."""

    def __init__(self, types: TypeInfo, array: Callable[[d.ArrayRef, "CExpression"], str],
                 name: Callable[[str], str] = c_identifier,
                 ranges: Mapping[str, Interval] | None = None):
        self.types = types
        self.array = array
        self.name = name
        self.ranges = ranges or {}  # intervals of loop variables (see ``ranges``)
        # Vector mode (``codegen.openmp``): the math module's checks record into the
        # iteration's own ``asp_code`` instead of the call's error record, each in its own
        # field (numbered in Python's order of the calls, ``vector_checks`` of them so far),
        # and C library functions are called through wrappers with SIMD clones
        # (``simd_functions``).
        self.vector = False
        self.vector_checks = 0
        self.simd_functions: set[tuple[str, str, int]] = set()  # (C function, C type, arity)
        self.index_mode = False
        # Signed integer arithmetic wraps as NumPy's does: host C is compiled with -fwrapv;
        # a device compiler takes no such option (``codegen.device`` sets this), so signed
        # sums, differences, products and negations go through the unsigned type there.
        self.wrapping = False
        self._temps = itertools.count()

    # -- entry points ------------------------------------------------------------------------

    def value(self, expr: d.Expr) -> str:
        return self.visit(expr)

    def subscript(self, expr: d.Expr) -> str:
        """An int64 expression for a subscript the analysis could not put in affine form
        (``A[idx[i]]``, ``A[(i + k) % n]``): with Python's meaning of every operation
        (a division by zero raises, a Python int beyond 64 bits raises OverflowError), since
        nothing proved its operands' ranges."""
        text = self.visit(expr)
        return text if ctype(self.ty(expr)) == "int64_t" else f"((int64_t){text})"

    def integer(self, expr: d.Expr) -> str:
        """An int64 expression for an affine subscript or a bound, in plain wrapping
        arithmetic: exact, since the binding proved its value (and every operand of a
        ``//`` or ``%`` in it) an int64 (see ``analysis.binding``)."""
        saved, self.index_mode = self.index_mode, True
        try:
            text = self.visit(expr)
            return text if ctype(self.ty(expr)) == "int64_t" else f"((int64_t){text})"
        finally:
            self.index_mode = saved

    def ty(self, expr: d.Expr) -> Ty:
        return self.types.of(expr)

    def convert(self, text: str, source: Ty, target: Ty) -> str:
        """``text`` (of type ``source``) as ``target``, with NumPy's checks for integers."""
        if source.dtype == target.dtype:
            return text
        if target.kind == "b":
            return f"((bool)({text} != 0))"
        if target.kind == "f":
            return f"(({ctype(target)})({text}))"
        if source.kind == "f":  # float -> int: int() semantics, then the target's range
            text = f"asp_f2i(asp_err, ({ctype(source)})({text}))"
            source = INT
        if source.kind == "b" or _literal_of(text, target):
            return f"(({ctype(target)})({text}))"
        return f"asp_fit_{suffix(target)}(asp_err, (int64_t)({text}))"

    def as_type(self, expr: d.Expr, target: Ty) -> str:
        """An operand converted to the type an operation computes in."""
        return self._cast(self.visit(expr), self.ty(expr), target)

    def _cast(self, text: str, source: Ty, target: Ty) -> str:
        if source.dtype == target.dtype or (isinstance(text, str) and _literal_of(text, target)):
            return text
        if source.weak and source.kind == "i" and target.kind in "iu" and not self.index_mode \
                and target.dtype.itemsize < 8:
            return f"asp_fit_{suffix(target)}(asp_err, {text})"  # NEP 50: the Python int must fit
        return f"(({ctype(target)})({text}))"

    # -- nodes -------------------------------------------------------------------------------

    def visit_Const(self, node: d.Const) -> str:
        value = node.value
        if isinstance(value, bool):
            return "1" if value else "0"
        if isinstance(value, int):
            if not -2**63 <= value < 2**63:
                raise UnsupportedArgument(f"the constant {value} does not fit 64 bits")
            if value == -2**63:
                return "INT64_MIN"
            if -2**31 < value < 2**31:
                return str(value) if value >= 0 else f"({value})"
            return f"INT64_C({value})" if value >= 0 else f"(-INT64_C({-value}))"
        return c_float(value)

    def visit_Var(self, node: d.Var) -> str:
        return self.name(node.name)

    def visit_Shape(self, node: d.Shape) -> str:
        return f"{self.name(node.array)}_n{node.dim}"

    def visit_ArrayRef(self, node: d.ArrayRef) -> str:
        return self.array(node, self)

    def visit_BinOp(self, node: d.BinOp) -> str:
        ta, tb = self.ty(node.left), self.ty(node.right)
        result = self.ty(node)
        op = node.op
        if self.index_mode and result.kind in "iu":
            a, b = self.visit(node.left), self.visit(node.right)
            if op in "+-*":
                return f"({a} {op} {b})"
            if op == "//":
                return f"asp_floordiv_i64({a}, {b})"
            if op == "%":
                return f"asp_mod_i64({a}, {b})"
        python = ta.weak and tb.weak  # Python's own semantics (errors) between Python values
        if op in ("+", "-", "*") and result.kind in "iu":
            a, b = self.as_type(node.left, result), self.as_type(node.right, result)
            if result.weak and not fits(int_range(node, self.ranges)):
                name = {"+": "add", "-": "sub", "*": "mul"}[op]
                return f"asp_{name}_py(asp_err, {a}, {b})"
            return _arith(a, op, b, result, self.wrapping)
        if op in ("+", "-", "*"):
            a, b = self.as_type(node.left, result), self.as_type(node.right, result)
            return _arith(a, op, b, result, self.wrapping)
        if op == "/":
            a, b = self.as_type(node.left, result), self.as_type(node.right, result)
            if python and not self._nonzero_int(node.right):
                return f"asp_truediv_py(asp_err, {a}, {b})"
            return _arith(a, "/", b, result)
        if op in ("//", "%"):
            name = "floordiv" if op == "//" else "mod"
            a, b = self.as_type(node.left, result), self.as_type(node.right, result)
            if result.kind == "f":
                if python:
                    return f"asp_{name}_{suffix(result)}_py(asp_err, {a}, {b})"
                return f"asp_{name}_{suffix(result)}({a}, {b})"
            if result.weak and not self._division_cannot_fail(node):
                return f"asp_{name}_py_i64(asp_err, {a}, {b})"
            return f"asp_{name}_{suffix(result)}({a}, {b})"
        if op == "**":
            if result.kind in "iu":
                exponent = node.right.value  # a non-negative constant (typeinfer checked)
                a = self.as_type(node.left, result)
                if result.weak:
                    return f"asp_ipow_py(asp_err, {a}, INT64_C({exponent}))"
                return f"(({ctype(result)})asp_ipow_{suffix(result)}({a}, INT64_C({exponent})))"
            a, b = self.as_type(node.left, result), self.as_type(node.right, result)
            if python:
                return f"asp_pow_py(asp_err, {a}, {b})"
            return f"powf({a}, {b})" if result.dtype == np.float32 else f"pow({a}, {b})"
        raise UnsupportedArgument(f"operator {op} is not compiled")

    def visit_UnaryOp(self, node: d.UnaryOp) -> str:
        if node.op == "not":
            return f"(!{self.truth(node.operand)})"
        result = self.ty(node)
        a = self.as_type(node.operand, result)
        if node.op == "+":
            return a
        if result.kind in "iu" and result.weak and not self.index_mode and \
                int_range(node.operand, self.ranges)[0] <= INT64_MIN:
            return f"asp_sub_py(asp_err, 0, {a})"
        if self.wrapping and ctype(result) in _WRAPPED:
            return f"(({ctype(result)})(0 - ({_WRAPPED[ctype(result)]})({a})))"
        if ctype(result) in _NATIVE:
            return f"(-{a})"
        return f"(({ctype(result)})(-{a}))"

    def _division_cannot_fail(self, node: d.BinOp) -> bool:
        """``a // b`` or ``a % b`` between Python ints cannot raise: ``b`` is never 0, and
        never -1 where ``a`` may be INT64_MIN (the one quotient beyond int64)."""
        divisor = int_range(node.right, self.ranges)
        if not excludes_zero(divisor):
            return False
        return int_range(node.left, self.ranges)[0] > INT64_MIN or not divisor[0] <= -1 <= divisor[1]

    def _nonzero_int(self, expr: d.Expr) -> bool:
        """Whether ``expr`` is an integer proven never to be 0 (from the loop ranges)."""
        return self.ty(expr).kind in "iu" and excludes_zero(int_range(expr, self.ranges))

    def truth(self, expr: d.Expr) -> str:
        """Python's truth value of ``expr`` as a C condition (nan is true, as in Python)."""
        ty = self.ty(expr)
        text = self.visit(expr)
        return text if ty.kind == "b" else f"({text} != 0)"

    def visit_Compare(self, node: d.Compare) -> str:
        ta, tb = self.ty(node.left), self.ty(node.right)
        if ta.kind in "iub" and tb.kind in "iub":
            common = Ty(np.dtype(np.int64), True)  # exact for every integer up to int64
        else:
            common = common_type(ta, tb)
        a = self._cast(self.visit(node.left), ta, common) if ta.dtype != common.dtype else \
            self.visit(node.left)
        b = self._cast(self.visit(node.right), tb, common) if tb.dtype != common.dtype else \
            self.visit(node.right)
        return f"({a} {node.op} {b})"

    def visit_BoolOp(self, node: d.BoolOp) -> str:
        result = self.ty(node)
        if result.kind == "b":
            op = " && " if node.op == "and" else " || "
            return "(" + op.join(self.truth(v) for v in node.values) + ")"
        # Python returns the deciding operand: evaluate each once, left to right.
        text = self.visit(node.values[-1])
        for value in reversed(node.values[:-1]):
            t = f"asp_t{next(self._temps)}"
            test = f"{t} != 0" if self.ty(value).kind != "b" else t
            pick = f"{test} ? ({text}) : {t}" if node.op == "and" else f"{test} ? {t} : ({text})"
            text = f"({{ {ctype(result)} {t} = {self.visit(value)}; {pick}; }})"
        return text

    def visit_IfExp(self, node: d.IfExp) -> str:
        return f"({self.truth(node.test)} ? {self.visit(node.body)} : {self.visit(node.orelse)})"

    def visit_Call(self, node: d.Call) -> str:
        func = node.func
        args = node.args
        result = self.ty(node)
        if func in ("min", "max"):
            # The first argument unless a later one compares strictly beyond it, in the type
            # the comparison uses; the value is carried in the result's storage type.
            text = self.as_type(args[0], result)
            for arg in args[1:]:
                t = f"asp_t{next(self._temps)}"
                u = f"asp_t{next(self._temps)}"
                common = common_type(self.ty(args[0]), self.ty(arg))
                cmp = ">" if func == "max" else "<"
                text = (f"({{ {ctype(result)} {t} = {text}; {ctype(result)} {u} = "
                        f"{self.as_type(arg, result)}; (({ctype(common)}){u} {cmp} "
                        f"({ctype(common)}){t}) ? {u} : {t}; }})")
            return text
        if func == "abs":
            (a,) = args
            if result.kind == "f":
                return f"(({ctype(result)})fabs({self.visit(a)}))"
            if result.weak:
                return f"asp_abs_py(asp_err, {self.as_type(a, result)})"
            return f"(({ctype(result)})asp_abs_{suffix(result)}({self.as_type(a, result)}))"
        if func == "int":
            (a,) = args
            ta = self.ty(a)
            if ta.kind == "f":
                return f"asp_f2i(asp_err, (double)({self.visit(a)}))"
            return f"((int64_t)({self.visit(a)}))"
        if func == "float":
            return f"((double)({self.visit(args[0])}))"
        if func == "bool":
            return f"((bool){self.truth(args[0])})"
        if func.startswith("math."):
            return self._math(func[5:], args, result)
        if func.startswith("numpy."):
            return self._numpy(func[6:], args, result)
        raise UnsupportedArgument(f"{func} is not compiled")

    def _double(self, expr: d.Expr) -> str:
        text = self.visit(expr)
        return text if ctype(self.ty(expr)) == "double" else f"((double){text})"

    def _math(self, name: str, args, result: Ty) -> str:
        if name in ("floor", "ceil", "trunc"):  # return Python ints
            return f"asp_f2i(asp_err, {name}({self._double(args[0])}))"
        if name in ("isnan", "isinf", "isfinite"):
            return f"((bool){name}({self._double(args[0])}))"
        if name == "degrees":
            return f"({self._double(args[0])} * (180.0 / M_PI))"
        if name == "radians":
            return f"({self._double(args[0])} * (M_PI / 180.0))"
        if name == "log" and len(args) == 2:
            return (f"asp_math_log2arg(asp_err, {self._double(args[0])}, {self._double(args[1])})")
        if name in MATH_1 and len(args) == 1:
            cname, overflow = MATH_1[name]
            if self.vector:
                function, x = self._libm(cname, 'double', 1), self._double(args[0])
                return f"asp_vmath1(&asp_code, {function}, {x}, {int(overflow)}, {self._field()})"
            return f"asp_math1(asp_err, {cname}, {self._double(args[0])}, {int(overflow)})"
        if name in MATH_2 and len(args) == 2:
            cname, overflow = MATH_2[name]
            if name == "pow":
                return f"asp_math_pow(asp_err, {self._double(args[0])}, {self._double(args[1])})"
            if name == "fmod":
                return f"asp_math_fmod(asp_err, {self._double(args[0])}, {self._double(args[1])})"
            x, y = self._double(args[0]), self._double(args[1])
            if self.vector:
                return (f"asp_vmath2(&asp_code, {self._libm(cname, 'double', 2)}, {x}, {y}, "
                        f"{int(overflow)}, {self._field()})")
            return f"asp_math2(asp_err, {cname}, {x}, {y}, {int(overflow)})"
        raise UnsupportedArgument(f"math.{name} is not compiled")

    def _field(self) -> int:
        """The next check's field in vector mode (its arguments already printed: the calls
        inside them come first, as Python makes them first)."""
        self.vector_checks += 1
        return self.vector_checks - 1

    def _libm(self, cname: str, c_type: str, arity: int) -> str:
        """The C library function ``cname``, through its SIMD wrapper in vector mode (the
        wrapper calls the same function once per lane: the results are the same bits)."""
        if not self.vector or cname.rstrip("f") in INSTRUCTIONS:
            return cname
        self.simd_functions.add((cname, c_type, arity))
        return f"asp_simd_{cname}"

    def _numpy(self, name: str, args, result: Ty) -> str:
        single = result.dtype == np.float32
        cast = lambda a: self.as_type(a, result) if result.kind == "f" else self.visit(a)  # noqa
        if name in NUMPY_1 and len(args) == 1:
            function = self._libm(NUMPY_1[name] + ("f" if single else ""), ctype(result), 1)
            return f"{function}({cast(args[0])})"
        if name in NUMPY_2 and len(args) == 2:
            function = self._libm(NUMPY_2[name] + ("f" if single else ""), ctype(result), 2)
            return f"{function}({cast(args[0])}, {cast(args[1])})"
        if name in ("abs", "absolute"):
            if result.kind == "f":
                return f"fabs{'f' if single else ''}({cast(args[0])})"
            return f"(({ctype(result)})asp_abs_{suffix(result)}({self.as_type(args[0], result)}))"
        if name in ("maximum", "minimum"):
            a, b = self.as_type(args[0], result), self.as_type(args[1], result)
            if result.kind == "f":  # NumPy propagates nan
                return f"asp_np_{name}_{suffix(result)}({a}, {b})"
            cmp = ">" if name == "maximum" else "<"
            return f"({{ {ctype(result)} x_ = {a}, y_ = {b}; x_ {cmp}= y_ ? x_ : y_; }})"
        if name in ("isnan", "isinf", "isfinite"):
            return f"((bool){name}({cast(args[0])}))"
        if name == "square":
            x = cast(args[0])
            return f"({{ {ctype(result)} x_ = {x}; ({ctype(result)})(x_ * x_); }})"
        if name == "sign":
            x = cast(args[0])
            return (f"({{ {ctype(result)} x_ = {x}; ({ctype(result)})(x_ > 0 ? 1 : x_ < 0 ? -1 "
                    f": x_); }})")
        if name == "degrees":
            return f"(({ctype(result)})({cast(args[0])} * (180.0 / M_PI)))"
        if name == "radians":
            return f"(({ctype(result)})({cast(args[0])} * (M_PI / 180.0)))"
        if name in ("float32", "float64"):
            return f"(({C_TYPES[name]})({self.visit(args[0])}))"
        raise UnsupportedArgument(f"numpy.{name} is not compiled")


# C computes these types in themselves; narrower integers are promoted to int, so their
# results are cast back (wrapping as NumPy's do).
_NATIVE = frozenset({"int64_t", "uint64_t", "double", "float", "int32_t", "uint32_t"})


#: Signed types whose arithmetic could overflow in C, and the unsigned type that wraps.
_WRAPPED = {"int32_t": "uint32_t", "int64_t": "uint64_t"}


def wrapping_arith(a: str, op: str, b: str, result: Ty) -> str:
    """``a op b`` of type ``result`` with NumPy's wrap-around, whatever the compiler's flags."""
    return _arith(a, op, b, result, wrapping=True)


def _arith(a: str, op: str, b: str, result: Ty, wrapping: bool = False) -> str:
    if wrapping and op in "+-*" and ctype(result) in _WRAPPED:
        unsigned = _WRAPPED[ctype(result)]
        return f"(({ctype(result)})(({unsigned})({a}) {op} ({unsigned})({b})))"
    if ctype(result) in _NATIVE:
        return f"({a} {op} {b})"
    return f"(({ctype(result)})({a} {op} {b}))"


_INT_LITERAL = re.compile(r"\(?(-?[0-9]{1,9})\)?")


def _literal_of(text: str, target: Ty) -> bool:
    """An integer literal that ``target`` holds (as NumPy requires of a Python int combined
    with it) needs no cast or check; a floating type rounds it as NumPy would."""
    match = _INT_LITERAL.fullmatch(text)
    if match is None or target.kind not in "iuf":
        return False
    if target.kind == "f":
        return True
    info = np.iinfo(target.dtype)
    return info.min <= int(match.group(1)) <= info.max


def check_supported_types(types: TypeInfo) -> None:
    for ty in list(types.variables.values()) + list(types.arrays.values()):
        if ty.dtype.name == "uint64":
            raise UnsupportedArgument("uint64 values are not compiled (mixed with signed "
                                      "integers, NumPy computes in float64)")


_ = binop_type  # the result types printed here are typeinfer's
