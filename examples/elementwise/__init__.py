"""An element-wise map specializer, written on asp_core alone (issue 2's proof of the core).

The user writes a scalar function; ``ElementwiseMap(f)(x, y, ...)`` applies it to every element
of equally shaped arrays and returns a float64 array, as the plain Python

    np.array([f(*values) for values in zip(x.flat, y.flat, ...)]).reshape(x.shape)

would, with the inputs first converted to float64. The phases, one module each:

* ``lowering``: Python AST (from ``asp_core.frontend``) -> DAST (``dast``), rejecting anything
  outside the subset with ``UnsupportedConstruct``;
* ``codegen``: DAST -> C through the Mako template ``elementwise.c.mako``;
* this module: the ``Specializer`` subclass (signature, build, run) and ``main()``.

Compilation, caching, the fallback to plain Python and its warning all come from asp_core.
"""

from __future__ import annotations

import math
import time
from typing import Any, Sequence

import numpy as np

from asp_core.backends.c import array_pointer, compile_c
from asp_core.cache import stable_key
from asp_core.errors import UnsupportedConstruct
from asp_core.frontend import function_ast
from asp_core.specializer import Specializer, Variant

from . import codegen
from .lowering import lower


class ElementwiseMap(Specializer):
    """``ElementwiseMap(f)(*arrays)``: ``f`` applied element by element, as float64."""

    backends = ("c",)

    def signature(self, args: Sequence[Any]) -> tuple:
        return (len(args),)  # inputs are converted to contiguous float64, so only arity matters

    def build(self, backend: str, signature: tuple, args: Sequence[Any]) -> Variant:
        if backend != "c":
            return super().build(backend, signature, args)
        function = lower(function_ast(self.func))
        if len(function.params) != signature[0]:
            raise UnsupportedConstruct(f"{function.name} takes {len(function.params)} "
                                       f"arguments, the call passes {signature[0]}",
                                       function.loc, "arity")
        key = stable_key("elementwise", function)
        entry = f"asp_map_{key[:12]}"
        source = codegen.c_source(function, entry, f"elementwise map of {self.name}, key {key}")
        self.dump("dast.txt", function.dump())
        self.dump("module.c", source)
        module = compile_c(source, codegen.cdef(function, entry), name="elementwise")
        kernel, ffi = module.function(entry), module.ffi

        def run(*arrays: Any) -> np.ndarray:
            inputs = _as_inputs(arrays)
            out = np.empty(inputs[0].shape if inputs else (), dtype=np.float64)
            err = kernel(out.size, array_pointer(ffi, out),
                         *(array_pointer(ffi, a) for a in inputs))
            if err:
                exc_type, message = codegen.ERRORS[err]
                raise exc_type(message)
            return out

        return Variant("c", run, key)

    def run_python(self, args: Sequence[Any], kwargs: dict) -> np.ndarray:
        inputs = _as_inputs(args)
        shape = inputs[0].shape if inputs else ()
        values = [self.func(*row) for row in zip(*(a.flat for a in inputs))]
        return np.array(values, dtype=np.float64).reshape(shape)


def _as_inputs(arrays: Sequence[Any]) -> list[np.ndarray]:
    inputs = [np.ascontiguousarray(a, dtype=np.float64) for a in arrays]
    if any(a.shape != inputs[0].shape for a in inputs):
        raise ValueError("ElementwiseMap needs arrays of one shape, got "
                         + ", ".join(str(a.shape) for a in inputs))
    return inputs


def polar_radius_and_wave(x, y):
    """The example's scalar function: a little of everything the subset accepts."""
    r = math.sqrt(x * x + y * y)
    w = math.sin(3.0 * x) * math.exp(-0.5 * r)
    return w if r < 2.0 else max(w, 0.0) + (x % 1.5) - y // 2.0


def main(n: int = 400_000) -> dict:
    """Map ``polar_radius_and_wave`` over ``n`` points, specialized and in plain Python."""
    rng = np.random.default_rng(0)
    x, y = rng.uniform(-4, 4, n), rng.uniform(-4, 4, n)
    fast = ElementwiseMap(polar_radius_and_wave, strict=True)
    t0 = time.perf_counter()
    fast(x, y)  # first call: lowers, generates, compiles (or loads from the disk cache)
    t1 = time.perf_counter()
    result = fast(x, y)
    t2 = time.perf_counter()
    plain = ElementwiseMap(polar_radius_and_wave, backend="python")
    expected = plain(x, y)
    t3 = time.perf_counter()
    report = {"backend": fast.last_call.backend, "first_call_s": t1 - t0,
              "specialized_s": t2 - t1, "python_s": t3 - t2,
              "max_abs_error": float(np.max(np.abs(result - expected))),
              "identical": bool(np.array_equal(result, expected))}
    print(f"elementwise map of {n} points: ran on {report['backend']}; "
          f"first call {report['first_call_s'] * 1e3:.0f} ms (build or cache load), "
          f"then {report['specialized_s'] * 1e3:.2f} ms vs plain Python "
          f"{report['python_s'] * 1e3:.0f} ms: {report['python_s'] / report['specialized_s']:.0f}x; "
          f"results {'identical' if report['identical'] else 'differ'} "
          f"(max abs error {report['max_abs_error']:.1e})")
    return report


if __name__ == "__main__":
    main()
