"""Random affine loop nests, for checking the dependence analysis against the oracle.

``random_nest(seed)`` writes a kernel with one nest, 2 to 4 loops deep, 1 to 4 statements
(at any depth: imperfect nests), 1 to 3 arrays, subscripts ``c1*v1 + c2*v2 + offset`` whose
coefficients and offsets are *arguments* (so they are symbols until the call binds them),
triangular bounds and negative steps. Offsets are chosen so every subscript stays in range:
differences between the analysis and the oracle are never accidents of Python's IndexError.
Uses ``random.Random`` only, so benchmarks can use it without hypothesis.

``random_nest(seed, wrapped=True)`` spells subscripts the ways Python's wrap-around allows,
mixed within one nest: as they are, shifted by the extent so that every instance is negative
(``A[i - 64]`` is ``A[i]``, ``A[-1]`` is ``A[63]``), or shifted so that some instances are
negative and some not; constant subscripts sit near either end of the axis, so ``A[-1]`` meets
``A[63]``; and now and then one array is passed for two parameters (``same``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

N = 5          # trip count scale (small: the oracle enumerates all instance pairs)
SIZE = 64      # extent of every array dimension


@dataclass(frozen=True)
class RandomNest:
    source: str
    args: dict[str, int]   # the symbolic coefficients and offsets, bound at the call
    arrays: tuple[tuple[str, int], ...]  # (name, number of dimensions)
    same: tuple[tuple[str, str], ...] = ()  # (name, other): the call passes one array for both


def random_nest(seed: int, wrapped: bool = False) -> RandomNest:
    rng = random.Random(seed * 2 + 1 if wrapped else seed)
    depth = rng.randint(2, 4)
    names = ["A", "B", "C"][: rng.randint(1, 3)]
    ndims = {name: rng.randint(1, 2) for name in names}
    args: dict[str, int] = {}
    loop_vars = ["i", "j", "k", "l"][:depth]
    lines: list[str] = []

    def symbol(prefix: str, value: int) -> str:
        name = f"{prefix}{len(args)}"
        args[name] = value
        return name

    def subscript(in_scope: list[str]) -> str:
        used = rng.sample(in_scope, k=min(len(in_scope), rng.randint(0, 2)))
        terms, low, high = [], 0, 0
        for var in used:
            coeff = rng.choice([-2, -1, 1, 1, 1, 2])
            if rng.random() < 0.5:
                terms.append(f"{symbol('c', coeff)} * {var}")
            else:
                terms.append(f"{coeff} * {var}" if coeff != 1 else var)
            low += min(coeff, 0) * (N - 1)
            high += max(coeff, 0) * (N - 1)
        offset = -low + rng.randint(0, 3)
        if wrapped:
            offset = wrap_offset(offset, offset + low, offset + high)
        if rng.random() < 0.6:
            terms.append(symbol("o", offset))
        elif terms:
            terms.append(f"{offset}" if offset >= 0 else f"({offset})")
        else:
            return str(offset)
        return " + ".join(terms)

    def wrap_offset(offset: int, low: int, high: int) -> int:
        """The offset of another spelling of a subscript whose values are [low, high]."""
        if low == high and rng.random() < 0.5:   # a constant near the end of the axis
            offset += SIZE - 1 - high
            low = high = SIZE - 1
        spelling = rng.random()
        if spelling < 0.4:
            return offset                        # as it is
        if spelling < 0.7 or low == high:
            return offset - SIZE                 # every instance negative: wraps to itself
        return offset - rng.randint(low + 1, high)  # some instances negative, some not

    def reference(name: str, in_scope: list[str]) -> str:
        return f"{name}[{', '.join(subscript(in_scope) for _ in range(ndims[name]))}]"

    def statement(indent: str, in_scope: list[str]) -> str:
        target = reference(rng.choice(names), in_scope)
        reads = [reference(rng.choice(names), in_scope) for _ in range(rng.randint(1, 2))]
        return f"{indent}{target} = {' + '.join(reads)} + 1.0"

    def header(level: int, indent: str, in_scope: list[str]) -> str:
        var = loop_vars[level]
        outer = in_scope[-1] if in_scope else None
        choices = ["range(N)", "range(N - 1, -1, -1)", "range(1, N)", "range(0, N, 2)"]
        if outer:
            choices += [f"range({outer}, N)", f"range({outer} + 1)", f"range({outer}, -1, -1)",
                        f"range(N - 1, {outer}, -1)"]
        return f"{indent}for {var} in {rng.choice(choices)}:"

    statements_left = rng.randint(1, 4)

    def body(level: int, indent: str, in_scope: list[str]) -> None:
        nonlocal statements_left
        lines.append(header(level, indent, in_scope))
        inner = indent + "    "
        scope = in_scope + [loop_vars[level]]
        emitted = False
        if level + 1 < depth:
            if statements_left > 1 and rng.random() < 0.3:
                lines.append(statement(inner, scope))
                statements_left -= 1
                emitted = True
            body(level + 1, inner, scope)
            emitted = True
            if statements_left > 1 and rng.random() < 0.3:
                lines.append(statement(inner, scope))
                statements_left -= 1
        while statements_left > 0 and (level + 1 == depth or not emitted):
            lines.append(statement(inner, scope))
            statements_left -= 1
            emitted = True

    body(0, "        ", [])
    params = ", ".join(names + list(args) + ["N"])
    source = ("from specializers.loopnest import LoopKernel\n\n\n"
              "class Kernel(LoopKernel):\n"
              f"    def kernel(self, {params}):\n" + "\n".join(lines) + "\n")
    args["N"] = N
    same = ()
    if wrapped and len(names) > 1 and rng.random() < 0.3:
        first, second = rng.sample(names, 2)
        if ndims[first] == ndims[second]:
            same = ((second, first),)
    return RandomNest(source, args, tuple((name, ndims[name]) for name in names), same)


def make_arrays(nest: RandomNest, seed: int = 0):
    """The nest's arrays, by parameter name (one array object for the names in ``same``)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    arrays = {name: rng.random((SIZE,) * nd) for name, nd in nest.arrays}
    for name, other in nest.same:
        arrays[name] = arrays[other]
    return arrays
