"""The brute-force dependence oracle: run a nest, record every access, pair them up.

For small bounds, ``exact_dependences`` executes the nest's statements in source order (on
shadow memory: nothing is written to the arrays), recording for every statement instance the
elements it reads and writes. Every pair of accesses to one element, at least one a write,
is a dependence from the earlier instance to the later, with the direction vector read off
their iteration vectors over the common loops (``<`` where the earlier instance's iteration
comes first in that loop's order). The result is exact for that binding: the analysis must
report each of these (soundness), and should report few others (precision).

Elements are told apart by their address in memory, after Python's wrap-around of negative
indices: ``A[-1]`` and ``A[n - 1]`` are one element, and so are ``A[i]`` and ``B[i]`` when
one array is passed as both ``A`` and ``B``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .. import dast as d
from ..analysis.graph import ANTI, FLOW, OUTPUT, common_loops
from ..pipeline import NestAnalysis


@dataclass(frozen=True)
class OracleDependence:
    source: int
    sink: int
    kind: str
    variable: str
    vector: tuple[str, ...]   # over the common loops; all "=" for a loop-independent one


def exact_dependences(analysis: NestAnalysis, values: dict[str, Any]) -> set[OracleDependence]:
    """Every dependence of the nest when run with ``values`` (names -> values)."""
    from ..pretty import PythonExpression

    events: dict[tuple, list] = {}   # element -> [(time, sid, write, iteration, array name)]
    clock = [0]
    printer = PythonExpression(name=lambda n: f"env[{n!r}]")
    compiled: dict[int, Any] = {}

    def evaluate(expr: d.Expr, env: dict[str, Any]) -> Any:
        code = compiled.get(id(expr))
        if code is None:
            code = compiled[id(expr)] = compile(printer.text(expr), "<oracle>", "eval")
        return eval(code, {"env": env})  # noqa: S307 - our own DAST, integers only

    def run(stmt: d.Stmt, env: dict[str, Any], iteration: dict[int, int]) -> None:
        if isinstance(stmt, d.Loop):
            r = range(evaluate(stmt.start, env), evaluate(stmt.stop, env), evaluate(stmt.step, env))
            for position, value in enumerate(r):
                env[stmt.var] = value
                iteration[stmt.lid] = position
                for child in stmt.body:
                    run(child, env, iteration)
            return
        info = analysis.access.statement(stmt.sid)
        for acc in info.accesses:  # reads first, then the write
            index = tuple(evaluate(i, env) for i in acc.index)
            clock[0] += 1
            events.setdefault(element(env[acc.array], acc.array, index), []).append(
                (clock[0], stmt.sid, acc.write, dict(iteration), acc.array))

    run(analysis.nest.loop, dict(values), {})
    found: set[tuple] = set()
    stmt_loops = {st.sid: st.loops for st in analysis.access.statements}
    common_of = {(a, b): common_loops(stmt_loops[a], stmt_loops[b])
                 for a in stmt_loops for b in stmt_loops}
    for accesses in events.values():
        for a_pos, (_, s1, w1, it1, array) in enumerate(accesses):
            for _, s2, w2, it2, _ in accesses[a_pos + 1:]:
                if not (w1 or w2):
                    continue
                vector = tuple("<" if it1[l] < it2[l] else ">" if it1[l] > it2[l] else "="
                               for l in common_of[s1, s2])
                if s1 == s2 and ">" not in vector and "<" not in vector:
                    continue  # one instance reading then writing an element: no ordering
                found.add((s1, s2, OUTPUT if w1 and w2 else FLOW if w1 else ANTI, array, vector))
    return {OracleDependence(*dep) for dep in found}


def element(array: Any, name: str, index: tuple[int, ...]) -> tuple:
    """The identity of ``array[index]``: its address, where ``array`` is a NumPy array (an
    index Python would reject is an error of the nest under test, not the oracle's)."""
    import numpy as np

    if not isinstance(array, np.ndarray):
        return (name, index)
    address = array.__array_interface__["data"][0]
    for k, (i, n) in enumerate(zip(index, array.shape)):
        if not -n <= i < n:
            raise IndexError(f"{name}{list(index)} is out of range for shape {array.shape}")
        address += (i % n) * array.strides[k]
    return ("memory", address)


def covers(edge_vector: tuple[str, ...], vector: tuple[str, ...]) -> bool:
    return all(e == "*" or e == v for e, v in zip(edge_vector, vector))


def missed(oracle: set[OracleDependence], edges, canonical: dict[str, str] | None = None
           ) -> list[OracleDependence]:
    """Oracle dependences no analysis edge accounts for (must be empty). ``canonical`` maps
    array names to one name per array in memory (``BoundNest.canonical``): an edge on ``A``
    accounts for a dependence the oracle saw on ``B`` when the call passed one array as both."""
    same = canonical or {}
    out = []
    for dep in oracle:
        loop_independent = all(x == "=" for x in dep.vector)
        ok = any(e.source == dep.source and e.sink == dep.sink and e.kind == dep.kind
                 and same.get(e.variable, e.variable) == same.get(dep.variable, dep.variable)
                 and ((e.level is None) if loop_independent else
                      (e.level is not None and covers(e.vector, dep.vector)))
                 for e in edges)
        if not ok:
            out.append(dep)
    return out
