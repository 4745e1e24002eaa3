"""Host emulation of CUDA launches: run a kernel's source on the CPU, for machines without a GPU.

The same CUDA source is compiled as C++ with a small prelude that defines ``threadIdx``,
``blockIdx``, ``blockDim``, ``gridDim`` and the CUDA qualifiers, plus one generated launcher per
``__global__`` function that loops over the grid and the block, one thread at a time (both
from the template ``asp_core/cuda_emulation.cpp.mako``). Kernel
index arithmetic and bounds guards therefore run for real, on NumPy arrays in host memory.

Blocks run one after another, so ``__shared__`` memory is one ``static`` variable per
declaration. A kernel that synchronizes (``__syncthreads``, in its body or in a function it
calls: ``synchronizing_kernels``) runs the threads of each block as fibers (``ucontext``),
on one OS thread: each runs until it reaches a barrier or ends; once all have, those waiting
go on. A barrier that not every thread of the block reaches (one thread ended, or threads wait
at different barriers) raises ``BarrierDivergence`` instead of hanging, as a GPU would.

``set_order_seed(seed)`` makes the launches visit blocks, and the threads of each block (and,
between barriers, the threads going on), in a pseudo-random order drawn from the seed, so that
a kernel correct only in the sequential order shows it: a dependence wrongly run in parallel,
a missing barrier (a thread reading what another has not written yet). Limits (checked):
templates and dynamic shared memory (``extern __shared__``) are not supported. Races between
threads that the hardware would interleave within one instruction stream (two threads
updating one word without an atomic) are not shown: a thread runs alone until it waits.

    module = emulate_cuda_module(source)
    module.get_function("saxpy")(n, a, x, y, grid=(4, 1, 1), block=(256, 1, 1))
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..errors import AspError, UnsupportedConstruct
from ..templates import render
from .c import (CModule, array_pointer, build_shared_library, find_c_compiler, load_library,
                precompiled_prelude)

_KERNEL = re.compile(r"__global__\s+void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?"
                     r"(?P<name>\w+)\s*\((?P<params>[^)]*)\)", re.S)
_REFUSED = {"extern __shared__": (r"\bextern\s+__shared__\b", "dynamic shared memory"),
            "template": (r"\btemplate\b", "templates")}   # construct: (pattern, what)
_COMMENT_OR_LITERAL = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|'
                                 r"'(?:\\.|[^'\\\n])*'", re.S)
_DEFINITION = re.compile(r"(\w+)\s*\([^;{}()]*(?:\([^;{}()]*\)[^;{}()]*)*\)[\w\s()]*$")

#: What a launch's return code means (``templates/asp_core/cuda_emulation.cpp.mako``).
_FAILURES = {
    1: "a barrier (__syncthreads) not reached by every thread of a block: some threads "
       "ended, or waited at another barrier (on a GPU: a hang or undefined behaviour)",
    2: "no memory for the stacks of a block's threads",
    3: "__syncthreads in a kernel the emulation took for one that does not synchronize",
}


class BarrierDivergence(AspError):
    """An emulated launch stopped: its threads did not all reach the same barriers (or the
    emulation could not run them); the message says which."""


@dataclass(frozen=True)
class KernelParam:
    ctype: str
    name: str

    @property
    def is_pointer(self) -> bool:
        return "*" in self.ctype


def parse_kernels(source: str) -> dict[str, tuple[KernelParam, ...]]:
    """Name -> parameters of every ``__global__`` function in ``source``."""
    kernels = {}
    for match in _KERNEL.finditer(source):
        params = []
        for text in filter(None, (p.strip() for p in match["params"].split(","))):
            words = re.match(r"(?P<ctype>.*?)(?P<name>\w+)\s*$", text, re.S)
            if words is None or not words["ctype"].strip():
                raise UnsupportedConstruct(f"cannot read kernel parameter {text!r}",
                                           construct="kernel parameter")
            ctype = " ".join(words["ctype"].replace("__restrict__", "").split())
            params.append(KernelParam(ctype, words["name"]))
        kernels[match["name"]] = tuple(params)
    return kernels


def synchronizing_kernels(source: str, kernels) -> set[str]:
    """The kernels (of the names ``kernels``) that may reach ``__syncthreads``: those whose
    body holds it or calls a function that may (a function: an identifier, its parameters and
    a body in braces at the top level of the source). Where it appears outside any such body
    (a macro), every kernel may."""
    text = _COMMENT_OR_LITERAL.sub(" ", source)
    bodies: dict[str, str] = {}
    outside, depth, start, head = [], 0, 0, 0
    for match in re.finditer(r"[{}]", text):
        if match[0] == "{":
            if depth == 0:
                outside.append(text[head:match.start()])
                start = match.start()
            depth += 1
        elif depth:
            depth -= 1
            if depth == 0:
                definition = _DEFINITION.search(outside[-1])
                if definition is not None:
                    bodies[definition[1]] = bodies.get(definition[1], "") + \
                        text[start:match.end()]
                else:
                    outside.append(text[start:match.end()])
                head = match.end()
    outside.append(text[head:])
    if any(re.search(r"\b__syncthreads\b", part) for part in outside):
        return set(kernels)
    found = {name for name, body in bodies.items() if re.search(r"\b__syncthreads\b", body)}
    while True:
        more = {name for name, body in bodies.items() if name not in found and
                any(re.search(rf"\b{callee}\s*\(", body) for callee in found)}
        if not more:
            return found & set(kernels)
        found |= more


def emulation_source(source: str) -> tuple[str, str]:
    """(C++ source, cffi cdef) of the emulation of a CUDA module."""
    for construct, (pattern, what) in _REFUSED.items():
        if re.search(pattern, source):
            raise UnsupportedConstruct(f"host emulation cannot run kernels that use {what} "
                                       f"({construct})", construct=construct)
    kernels = parse_kernels(source)
    if not kernels:
        raise UnsupportedConstruct("no __global__ function in the CUDA source",
                                   construct="kernel")
    text = render("asp_core/cuda_emulation.cpp.mako", source=source,
                  kernels=[(n, [(p.ctype, p.name) for p in ps]) for n, ps in kernels.items()],
                  synchronizing=sorted(synchronizing_kernels(source, kernels)))
    cdefs = []
    for name, params in kernels.items():
        decl = "".join(f", {'void *' if p.is_pointer else p.ctype} {p.name}" for p in params)
        cdefs.append(f"int asp_launch_{name}(unsigned int gx, unsigned int gy, unsigned int gz, "
                     f"unsigned int bx, unsigned int by, unsigned int bz{decl});")
        cdefs.append(f"int asp_params_{name}(unsigned int, unsigned int, unsigned int, "
                     "unsigned int, unsigned int, unsigned int, void **);")
    cdefs.append("int asp_emulated_launch(void *, unsigned int, unsigned int, unsigned int, "
                 "unsigned int, unsigned int, unsigned int, unsigned int, void *, void **, "
                 "void **);")
    cdefs.append("void asp_set_order_seed(unsigned long long seed);")
    return text, "\n".join(cdefs)


class EmulatedKernel:
    """One ``__global__`` function, launched like pycuda's: ``k(*args, grid=..., block=...)``."""

    def __init__(self, module: CModule, name: str, params: tuple[KernelParam, ...]):
        self.name = name
        self.params = params
        self._module = module
        self._launch = module.function(f"asp_launch_{name}")

    def __call__(self, *args: Any, grid: Sequence[int] = (1, 1, 1),
                 block: Sequence[int] = (1, 1, 1)) -> None:
        if len(args) != len(self.params):
            raise TypeError(f"kernel {self.name} takes {len(self.params)} arguments, "
                            f"got {len(args)}")
        grid3 = tuple(grid) + (1,) * (3 - len(grid))
        block3 = tuple(block) + (1,) * (3 - len(block))
        ffi = self._module.ffi
        converted = []
        for param, arg in zip(self.params, args):
            if param.is_pointer:
                if not isinstance(arg, np.ndarray):
                    raise TypeError(f"kernel {self.name}: parameter {param.name} needs an array")
                converted.append(array_pointer(ffi, arg))
            else:
                converted.append(arg.item() if isinstance(arg, np.generic) else arg)
        code = self._launch(*grid3, *block3, *converted)
        if code:
            raise launch_error(code, f"emulated launch of {self.name} (grid {grid3}, block "
                                     f"{block3})")


def launch_error(code: int, what: str) -> BarrierDivergence:
    """The error of an emulated launch (``what``) that returned ``code``."""
    return BarrierDivergence(f"{what} stopped: {_FAILURES.get(code, code)}")


@dataclass(eq=False)
class EmulatedModule:
    """The emulation of a CUDA module; ``get_function`` as in pycuda's ``SourceModule``."""

    module: CModule
    kernels: dict[str, tuple[KernelParam, ...]]

    def set_order_seed(self, seed: int) -> None:
        """Visit blocks and threads (and, after each barrier, the threads going on) in a
        pseudo-random order drawn from ``seed`` (0: in order, the default), as a GPU may run
        them in any order."""
        self.module.function("asp_set_order_seed")(seed)

    def launch_address(self) -> int:
        """The address of the module's launch of ``cuLaunchKernel``'s signature
        (``asp_emulated_launch``: for ``backends.launches``)."""
        return self._address("asp_emulated_launch")

    def function_address(self, name: str) -> int:
        """What ``launch_address``'s function takes for kernel ``name``."""
        self.get_function(name)
        return self._address(f"asp_params_{name}")

    def launch_error(self, code: int, what: str) -> Exception:
        return launch_error(code, what)

    def _address(self, symbol: str) -> int:
        ffi = self.module.ffi
        return int(ffi.cast("uintptr_t", self.module.function(symbol)))

    def get_function(self, name: str) -> EmulatedKernel:
        if name not in self.kernels:
            raise KeyError(f"no __global__ function named {name!r} (have {sorted(self.kernels)})")
        return EmulatedKernel(self.module, name, self.kernels[name])


#: The system headers every emulated module includes first (``cuda_emulation.cpp.mako``, then
#: the loop-nest runtime's), precompiled once per compiler and flags (``precompiled_prelude``).
PRELUDE_HEADERS = ("cmath", "cstdint", "cstddef", "algorithm", "pthread.h", "stdbool.h",
                   "string.h", "math.h", "omp.h")


def emulate_cuda_module(source: str, *, cflags: Sequence[str] = ("-O1",)) -> EmulatedModule:
    """Compile a CUDA source for the CPU (cached) and return its emulated kernels."""
    text, cdef = emulation_source(source)
    compiler = find_c_compiler(None, tuple(cflags), "c++")
    path = build_shared_library(text, name="emulated", cdef=cdef, compiler=compiler,
                                speedups=precompiled_prelude(PRELUDE_HEADERS, compiler))
    return EmulatedModule(load_library(path, cdef), parse_kernels(source))
