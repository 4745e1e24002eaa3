"""Calibration of the interpreter: what CPython takes per loop iteration, per statement and per
operation of each kind (``cost.features.KINDS``) in a loop nest as users write it.

Each probe is a plain Python loop ``for i in range(n): <statement>`` over NumPy float64 arrays
and NumPy scalars (what loads from such arrays give), compiled as a function so that names are
fast locals, as in a kernel method. The cost of one operation is a difference of two probes that
differ by that operation only (``x = B[i]`` minus ``x = i``: one load), so the loop's own cost
cancels; the counts of each probe are those ``cost.features`` gives its statement. Differences
below zero (noise around a very cheap operation) count as zero.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .timing import best_per_unit

#: Probe name -> the statement in the loop body (``i`` the loop variable; ``A``, ``B`` 1-D,
#: ``B2`` 2-D float64 arrays; ``y``, ``z`` float64 scalars, ``u``, ``v`` Python floats, ``p`` a
#: NumPy bool, ``k`` an int).
STATEMENTS = {
    "empty": "pass",
    "const": "x = 1.0",           # a statement writing a scalar
    "copy": "x = y",              # ... reading one
    "index_var": "x = i",
    "load": "x = B[i]",
    "load2": "x = B2[k, i]",      # one subscript more: the index tuple
    "index2": "x = B2[k, i + 1]",
    "store": "A[i] = y",
    "store2": "A2[k, i] = y",
    "add": "x = y + z",
    "mul": "x = y * z",
    "div": "x = y / z",
    "add_py": "x = u + v",        # the same on Python floats (``features.PY_KINDS``)
    "mul_py": "x = u * v",
    "div_py": "x = u / v",
    "cmp_py": "x = u < v",
    "pow": "x = y ** 2",
    "cmp": "x = y < z",
    "not": "x = not p",
    "exp": "x = math.exp(y)",
    "log": "x = math.log(y)",
    "sqrt": "x = math.sqrt(y)",
    "abs": "x = abs(y)",
    "int": "x = int(y)",
    "float": "x = float(y)",
}

_SOURCE = """\
def probe(n, A, A2, B, B2, y, z, u, v, p, k):
    for i in range(n):
        {statement}
"""


def _probe(statement: str) -> Any:
    namespace: dict[str, Any] = {"math": math}
    exec(compile(_SOURCE.format(statement=statement), "<calibration probe>", "exec"),  # noqa: S102
         namespace)
    return namespace["probe"]


def measure(quick: bool) -> dict[str, Any]:
    """The interpreter's parameters of ``MachineParams`` (nanoseconds): ``py_iteration_ns``,
    ``py_statement_ns``, ``py_subscript_ns`` and ``py_op_ns``."""
    n, repeats = (20_000, 5) if quick else (100_000, 15)
    A, B = np.zeros(n + 1), np.linspace(1.0, 2.0, n + 1)
    A2, B2 = np.zeros((2, n + 1)), np.ones((2, n + 1))
    y, z = np.float64(1.25), np.float64(0.75)
    u, v = 1.25, 0.75
    p = y < z
    cases = {}
    for name, statement in STATEMENTS.items():
        probe = _probe(statement)
        cases[name] = (lambda count, probe=probe: probe(count, A, A2, B, B2, y, z, u, v, p, 1),
                       n)
    t = {name: seconds * 1e9 for name, seconds in best_per_unit(cases, repeats).items()}
    return derive(t)


#: The least share of its documented default an operation's measured cost keeps (``derive``).
NOISE_FLOOR = 0.25


def derive(t: dict[str, float]) -> dict[str, Any]:
    """The parameters from the probes' times per iteration ``t`` (ns), by differences."""
    def pos(value: float) -> float:
        return max(0.0, value)

    scalar = pos(t["copy"] - t["const"])          # one more scalar read
    base = t["copy"]                              # a statement reading and writing a scalar
    one_op = base + scalar                        # ... with one more scalar operand
    ops = {
        "load": pos(t["load"] - t["index_var"]),
        "store": pos(t["store"] - base),
        "index": pos(t["index2"] - t["load2"]),
        "arith": pos((t["add"] + t["mul"]) / 2 - one_op),
        "div": pos(t["div"] - one_op),
        "pow": pos(t["pow"] - base),
        "cmp": pos(t["cmp"] - one_op),
        "logic": pos(t["not"] - base),
        "math": pos((t["exp"] + t["log"]) / 2 - base),
        "math_cheap": pos((t["sqrt"] + t["abs"]) / 2 - base),
        "conv": pos((t["int"] + t["float"]) / 2 - base),
        "scalar": scalar,
        "arith_py": pos((t["add_py"] + t["mul_py"]) / 2 - one_op),
        "div_py": pos(t["div_py"] - one_op),
        "cmp_py": pos(t["cmp_py"] - one_op),
    }
    # A difference that noise brought near 0 (Python arithmetic on NumPy scalars measured 0 ns,
    # a test run beside the quick calibration) is raised to a quarter of the documented
    # default: an operation the interpreter runs is never free.
    from .machine import DEFAULTS

    ops = {kind: max(value, NOISE_FLOOR * DEFAULTS.py_op_ns.get(kind, 0.0))
           for kind, value in ops.items()}
    # A[k, i] against A[i]: the index tuple and the second subscript, per access (load and
    # store), less the scalar read the second subscript counts as.
    subscript = pos(((t["load2"] - t["load"]) + (t["store2"] - t["store"])) / 2 - scalar)
    return {
        "py_iteration_ns": t["empty"],
        "py_statement_ns": pos(t["const"] - t["empty"] - scalar),
        "py_subscript_ns": subscript,
        "py_op_ns": ops,
    }
