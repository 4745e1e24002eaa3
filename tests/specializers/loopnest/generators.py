"""Hypothesis strategies that write whole kernels as Python source, and a loader for them.

``kernels()`` draws the text of a ``LoopKernel`` subclass with one or two top-level nests
(loops 1 to 3 deep, triangular and reversed ranges, imperfect nests, if/else, scalars, array
elements in both spellings, affine and non-affine subscripts, intrinsic calls) and, now and
then, a construct outside the supported subset. Every generated access stays in bounds (loop
variables range over [0, n) and subscripts are built to stay there), so a difference between
the specialized and the plain run is a bug, not an accident of the input.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import strategies as st

from specializers.loopnest.checking import load_source

N = 6  # array extent; the kernels take it as the argument n

UNSUPPORTED = [
    "while False:\n{i}    pass",   # (compiled: see "break")
    "print({v})",
    "A[0:2, 0] = 1.0",
    "s0, s1 = 1.0, 2.0",
    "self.v = {v}",
    "s0 = 'text'",
    "lst = [{v}]",
    "return {v}",
    "try:\n{i}    pass\n{i}except ValueError:\n{i}    pass",
    "break",   # (compiled since break/continue/while are: kept, to meet them anywhere)
]

def load_kernel(source: str):
    """Write ``source`` to a real file (so its source can be read back) and import it: the
    class ``Kernel`` and the file's path."""
    Kernel = load_source(source)
    return Kernel, Path(Kernel.kernel.__wrapped__.__code__.co_filename)


def make_arguments(seed: int = 0):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(N, N))
    B = rng.normal(size=N)
    C = rng.integers(-5, 6, size=(N, N))
    idx = rng.integers(0, N, size=N)
    return A, B, C, idx, N, 1.5


@st.composite
def index(draw, loop_vars: list[str]) -> str:
    """A subscript expression whose value lies in [0, n) (or [-n, -1], which Python wraps)."""
    choices = ["{c}"]
    if loop_vars:
        choices += ["{v}", "{v}", "n - 1 - {v}", "({v} + 1) % n", "idx[{v}]", "min({v} + 1, n - 1)",
                    "-1 - {v}", "{v} * {w} % n", "max({v} - {w}, 0)"]
    form = draw(st.sampled_from(choices))
    v = draw(st.sampled_from(loop_vars)) if loop_vars else "0"
    w = draw(st.sampled_from(loop_vars)) if loop_vars else "0"
    return form.format(v=v, w=w, c=draw(st.integers(0, N - 1)))


@st.composite
def value(draw, loop_vars: list[str], scalars: list[str], depth: int = 0) -> str:
    """A float-valued expression."""
    leaves = ["A[{a}, {b}]", "A[{a}][{b}]", "B[{a}]", "alpha", "2.5", "float(C[{a}, {b}])"]
    leaves += [f"{s}" for s in scalars]
    if loop_vars:
        leaves += ["{v}", "({v} - 2)"]
    if depth >= 2 or draw(st.integers(0, 2)) == 0:
        leaf = draw(st.sampled_from(leaves))
        v = draw(st.sampled_from(loop_vars)) if loop_vars else "0"
        return leaf.format(a=draw(index(loop_vars)), b=draw(index(loop_vars)), v=v)
    a = draw(value(loop_vars, scalars, depth + 1))
    b = draw(value(loop_vars, scalars, depth + 1))
    form = draw(st.sampled_from([
        "({a} + {b})", "({a} - {b})", "({a} * {b})", "({a} / (1.0 + abs({b})))",
        "max({a}, {b})", "min({a}, {b}, 0.5)", "math.sqrt(abs({a}))", "np.exp(-abs({a}))",
        "({a} if {a} > {b} else {b})", "abs({a}) ** 0.5", "({a} // 2.0)", "({a} % 3.0)",
        "float({a} > {b} and {b} > 0)", "float(int({a}) % 4)",
    ]))
    return form.format(a=a, b=b)


@st.composite
def statements(draw, loop_vars: list[str], scalars: list[str], indent: str, depth: int,
               allow_unsupported: bool) -> list[str]:
    lines: list[str] = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.integers(0, 9))
        v = lambda: draw(value(loop_vars, scalars))  # noqa: E731
        i = lambda: draw(index(loop_vars))  # noqa: E731
        if kind <= 2:
            lines.append(f"{indent}A[{i()}, {i()}] = {v()}")
        elif kind == 3:
            lines.append(f"{indent}B[{i()}] += {v()}")
        elif kind == 4:
            lines.append(f"{indent}C[{i()}][{i()}] = int({v()}) % 7")
        elif kind == 5:
            name = f"t{len(scalars)}"
            lines.append(f"{indent}{name} = {v()}")
            scalars = scalars + [name]
        elif kind == 6:
            lines.append(f"{indent}s0 += {v()}")
        elif kind == 7:
            lines.append(f"{indent}if {v()} > {v()}:")
            lines += draw(statements(loop_vars, scalars, indent + "    ", depth, allow_unsupported))
            if draw(st.booleans()):
                lines.append(f"{indent}else:")
                lines += draw(statements(loop_vars, scalars, indent + "    ", depth,
                                         allow_unsupported))
        elif kind == 8 and depth < 3:
            lines += draw(loop(loop_vars, scalars, indent, depth + 1, allow_unsupported))
        elif allow_unsupported and draw(st.integers(0, 1)) == 0:
            text = draw(st.sampled_from(UNSUPPORTED))
            lines.append(indent + text.format(i=indent, v=loop_vars[-1] if loop_vars else "0"))
        else:
            lines.append(f"{indent}B[{i()}] = {v()}")
    return lines


@st.composite
def loop(draw, loop_vars: list[str], scalars: list[str], indent: str, depth: int,
         allow_unsupported: bool) -> list[str]:
    var = "ijk"[depth - 1]
    ranges = ["range(n)", "range(1, n)", "range(n - 1, -1, -1)", "range(0, n, 2)", "range(half)"]
    if loop_vars:
        outer = loop_vars[-1]
        ranges += [f"range({outer}, n)", f"range({outer} + 1)", f"range(n - 1, {outer} - 1, -1)",
                   f"range({outer} // 2, n)", f"range(idx[{outer}], n)"]   # (``counted``)
    header = f"{indent}for {var} in {draw(st.sampled_from(ranges))}:"
    body = draw(statements(loop_vars + [var], scalars, indent + "    ", depth, allow_unsupported))
    return [header] + body


@st.composite
def kernels(draw, allow_unsupported: bool = True) -> str:
    lines = ["import math", "import numpy as np", "from specializers.loopnest import LoopKernel",
             "", "", "class Kernel(LoopKernel):", "    def kernel(self, A, B, C, idx, n, alpha):",
             "        half = n // 2", "        s0 = 0.0"]
    for _ in range(draw(st.integers(1, 2))):
        lines += draw(loop([], ["s0"], "        ", 1, allow_unsupported))
        lines.append("        s0 = s0 * 0.5")
    lines.append("        return s0")
    return "\n".join(lines) + "\n"


# -- kernels inside the compiled subset ------------------------------------------------------
# Typed consistently (float64 values, int64 values, float32 values), so every generated
# kernel compiles; arrays: A (n x n float64), B (n float64), C (n x n int64), F (n float32),
# idx (n int64). Subscripts stay in range (or wrap), divisions avoid zero.

@st.composite
def fvalue(draw, loop_vars: list[str], scalars: list[str], depth: int = 0) -> str:
    """A float64-valued expression."""
    leaves = ["A[{a}, {b}]", "A[{a}][{b}]", "B[{a}]", "alpha", "2.5", "float(C[{a}, {b}])",
              "float({v})", "float(F[{a}])"] + scalars
    if depth >= 2 or draw(st.integers(0, 2)) == 0:
        leaf = draw(st.sampled_from(leaves))
        v = draw(st.sampled_from(loop_vars)) if loop_vars else "0"
        return leaf.format(a=draw(index(loop_vars)), b=draw(index(loop_vars)), v=v)
    a = draw(fvalue(loop_vars, scalars, depth + 1))
    b = draw(fvalue(loop_vars, scalars, depth + 1))
    form = draw(st.sampled_from([
        "({a} + {b})", "({a} - {b})", "({a} * {b})", "({a} / (1.0 + abs({b})))",
        "max({a}, {b})", "min({a}, {b})", "math.sqrt(abs({a}))", "np.exp(-abs({a}))",
        "({a} if {a} > {b} else {b})", "abs({a}) ** 0.5", "({a} // 2.0)", "({a} % 3.0)",
        "float({a} > {b} and {b} > 0.0)", "np.floor({a} * 0.5)",
        "np.maximum({a}, {b})", "(-{a})",
    ]))
    return form.format(a=a, b=b)


@st.composite
def ivalue(draw, loop_vars: list[str]) -> str:
    """An int64-valued expression (C elements, loop variables)."""
    v = draw(st.sampled_from(loop_vars))
    w = draw(st.sampled_from(loop_vars))
    return draw(st.sampled_from([
        "C[{a}, {b}] * 3 - {v}", "(C[{a}][{b}] + {v} * {w}) % 7", "C[{a}, {b}] // 2",
        "abs(C[{a}, {b}] - {v})", "max(C[{a}, {b}], {v})", "(C[{a}, {b}] ** 2) % 11",
        "idx[{a}] - C[{a}, {b}]", "int(A[{a}, {b}] * 10.0) % 5",
    ])).format(a=draw(index(loop_vars)), b=draw(index(loop_vars)), v=v, w=w)


@st.composite
def typed_statements(draw, loop_vars: list[str], scalars: list[str], indent: str, depth: int
                     ) -> list[str]:
    lines: list[str] = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.integers(0, 9))
        f = lambda: draw(fvalue(loop_vars, scalars))  # noqa: E731
        i = lambda: draw(index(loop_vars))  # noqa: E731
        if kind <= 1:
            lines.append(f"{indent}A[{i()}, {i()}] = {f()}")
        elif kind == 2:
            lines.append(f"{indent}B[{i()}] += {f()}")
        elif kind == 3:
            lines.append(f"{indent}C[{i()}][{i()}] = {draw(ivalue(loop_vars))}")
        elif kind == 4:
            lines.append(f"{indent}F[{i()}] = F[{i()}] * np.float32(0.5) + np.float32({f()})")
        elif kind == 5:
            name = f"t{len(scalars)}"
            lines.append(f"{indent}{name} = {f()}")
            scalars = scalars + [name]
        elif kind == 6:
            lines.append(f"{indent}s0 += {f()}")
        elif kind == 7:
            lines.append(f"{indent}m0 = max(m0, {f()})")
        elif kind == 8 and depth < 3:
            lines += draw(typed_loop(loop_vars, scalars, indent, depth + 1))
        else:
            lines.append(f"{indent}if {f()} > {f()}:")
            lines += draw(typed_statements(loop_vars, scalars, indent + "    ", depth))
            if draw(st.booleans()):
                lines.append(f"{indent}else:")
                lines += draw(typed_statements(loop_vars, scalars, indent + "    ", depth))
    return lines


@st.composite
def typed_loop(draw, loop_vars: list[str], scalars: list[str], indent: str, depth: int
               ) -> list[str]:
    var = "ijk"[depth - 1]
    ranges = ["range(n)", "range(1, n)", "range(n - 1, -1, -1)", "range(0, n, 2)", "range(half)"]
    if loop_vars:
        outer = loop_vars[-1]
        ranges += [f"range({outer}, n)", f"range({outer} + 1)", f"range(n - 1, {outer} - 1, -1)"]
        # bounds the analysis cannot express (``counted``)
        ranges += [f"range({outer} // 2, n)", f"range(idx[{outer}], n)"]
    ranges.append("range(idx[1], idx[2] + 1)")
    header = f"{indent}for {var} in {draw(st.sampled_from(ranges))}:"
    return [header] + draw(typed_statements(loop_vars + [var], scalars, indent + "    ", depth))


#: The start of a typed kernel (``typed_kernels``, and the exits' generator).
TYPED_HEADER = (
    "import math", "import numpy as np", "from specializers.loopnest import LoopKernel",
    "", "", "class Kernel(LoopKernel):",
    "    def kernel(self, A, B, C, F, idx, n, alpha):",
    "        half = n // 2", "        s0 = 0.0", "        m0 = -1e300",
    # temporaries made in one branch may be read in another: give them a value
    "        " + " = ".join(f"t{k}" for k in range(1, 12)) + " = 0.0",
    "        i = j = k = -1")
#: Its end: last values read after the nests, loop variables and scalars (``lastvalues``,
#: and the order of conditional writes across parallel loops: ``analysis.graph``).
TYPED_RETURN = "        return s0, m0, i, j, k, t1, t2, t3"


@st.composite
def typed_kernels(draw) -> str:
    lines = list(TYPED_HEADER)
    for _ in range(draw(st.integers(1, 2))):
        lines += draw(typed_loop([], ["s0"], "        ", 1))
        lines.append("        s0 = s0 * 0.5")
    lines.append(TYPED_RETURN)
    return "\n".join(lines) + "\n"


def make_typed_arguments(seed: int = 0):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(N, N))
    B = rng.normal(size=N)
    C = rng.integers(-5, 6, size=(N, N))
    F = rng.normal(size=N).astype(np.float32)
    idx = rng.integers(0, N, size=N)
    return A, B, C, F, idx, N, 1.5
