"""Name analysis of one nest: loop variables, arrays, scalars written, invariants; and the
checks that keep a nest analysable (raising ``UnsupportedConstruct`` otherwise).

* A loop variable is read only inside its own loop, and never assigned.
* A name is either an array (indexed, or asked for its shape) or a scalar, not both.
* Loop bounds depend only on loop-invariant values and on enclosing loop variables; a step
  depends on no loop variable.
* Scalars written by the nest and ``self.x`` attributes do not collide with the kernel's
  ``self`` parameter.

Runs once per nest (static).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable

from asp_core.errors import UnsupportedConstruct

from . import dast as d
from .ifconvert import EXIT_PREFIX, PREDICATE_PREFIX
from .counted import BOUND_PREFIX
from .lastvalues import SHADOW_PREFIX, variable_of
from .lowering import ARGUMENT_PREFIX, WHILE_PREFIX


@dataclass(frozen=True)
class NestNames:
    loop_vars: tuple[str, ...]    # in source order (sibling loops may share a name)
    arrays: tuple[str, ...]       # sorted; "self.A" for arrays kept on the kernel
    scalars: tuple[str, ...]      # user scalars the nest writes, sorted
    temps: tuple[str, ...]        # predicate temporaries made by if-conversion
    invariants: tuple[str, ...]   # scalars read but never written, sorted; "self.n" included
    unread: frozenset[str] = frozenset()   # written, never read after it nor on entry

    @property
    def inputs(self) -> tuple[str, ...]:
        """Names whose values the nest reads from the kernel when it starts."""
        return self.arrays + self.invariants + self.outputs

    @property
    def outputs(self) -> tuple[str, ...]:
        """Names whose final values the nest hands back to the kernel (Python leaves loop
        variables bound after a loop, so they are outputs too; not those of the loops
        ``while`` loops become, which Python does not have), but not those ``unread``."""
        left_out = self.shadowed | self.unread
        return tuple(s for s in self.scalars if s not in left_out) + \
            tuple(v for v in dict.fromkeys(self.loop_vars)
                  if not v.startswith(WHILE_PREFIX) and v not in left_out)

    @property
    def shadowed(self) -> frozenset[str]:
        """Loop variables whose last value a scalar of the nest keeps (``lastvalues``): that
        scalar is read from, and handed back to, the kernel's variable."""
        return frozenset(variable_of(s) for s in self.scalars if s.startswith(SHADOW_PREFIX))

    def unread_outside(self, live: frozenset[str], required: Iterable[str]) -> "NestNames":
        """These names, the scalars and loop variables the kernel reads neither after the nest
        (not in ``live``) nor on entry (not ``required``) left out of its inputs and outputs:
        their last values cannot be seen, and their values on entry would split one call's
        signature in two (a nest after another sharing its ``i`` met it bound where the one
        before ran as the original code, unbound where it ran compiled, which hands back only
        what is read after it: two signatures, each variant built twice)."""
        unread = frozenset(self.scalars + self.loop_vars) - live - frozenset(required)
        return replace(self, unread=unread)

    def kernel_name(self, name: str) -> str:
        """The kernel's variable an input or output of the nest stands for."""
        return variable_of(name)


def nest_names(nest: d.Nest) -> NestNames:
    """Classify the names of an if-converted nest (raises ``UnsupportedConstruct``)."""
    loops = d.loops(nest.loop)
    loop_vars = tuple(loop.var for loop in loops)
    all_loop_vars = set(loop_vars)
    arrays: dict[str, d.Node] = {}
    written: dict[str, d.Node] = {}
    read: dict[str, d.Node] = {}

    def expr_names(expr: d.Expr, enclosing: frozenset[str]) -> None:
        for node in expr.walk():
            if isinstance(node, (d.ArrayRef, d.Shape)):
                arrays.setdefault(node.array, node)
            elif isinstance(node, d.Var):
                if node.name in all_loop_vars and node.name not in enclosing:
                    raise _error(node, "loop variable use",
                                 f"'{node.name}' is read outside its loop")
                read.setdefault(node.name, node)

    def visit(stmt: d.Stmt, enclosing: frozenset[str]) -> None:
        if isinstance(stmt, d.Loop):
            for bound in (stmt.start, stmt.stop, stmt.step):
                expr_names(bound, enclosing)
            inner = enclosing | {stmt.var}
            for child in stmt.body:
                visit(child, inner)
        elif isinstance(stmt, d.Assign):
            expr_names(stmt.value, enclosing)
            if isinstance(stmt.target, d.ArrayRef):
                expr_names(stmt.target, enclosing)
            else:
                name = stmt.target.name
                if name in all_loop_vars:
                    raise _error(stmt, "assignment to loop variable",
                                 f"'{name}' is the variable of a loop of this nest")
                written.setdefault(name, stmt)

    visit(nest.loop, frozenset())
    # the nest's own temporaries: if-conversion's predicates and exit flags, inlined calls'
    # arguments, counted loops' bounds (``counted``)
    internal = (PREDICATE_PREFIX, ARGUMENT_PREFIX, EXIT_PREFIX, BOUND_PREFIX)
    temps = tuple(sorted((n for n in written if n.startswith(internal)),
                         key=lambda n: (n.rstrip("0123456789"),
                                        int(n[len(n.rstrip("0123456789")):]))))
    scalars = tuple(sorted(n for n in written if not n.startswith(internal)))
    for name, node in arrays.items():
        if name in written or name in read or name in all_loop_vars:
            raise _error(node, "array name", f"'{name}' is used both as an array and as a scalar")
    invariants = tuple(sorted(n for n in read
                              if n not in written and n not in all_loop_vars))
    names = NestNames(loop_vars, tuple(sorted(arrays)), scalars, temps, invariants)
    _check_bounds(loops, set(names.scalars) | set(names.temps))
    return names


def _check_bounds(loops: list[d.Loop], written: set[str]) -> None:
    for loop in loops:
        for bound in (loop.start, loop.stop, loop.step):
            for node in bound.walk():
                if isinstance(node, d.ArrayRef):
                    raise _error(node, "loop bound", "a bound may not read array elements")
                if isinstance(node, d.Var) and node.name in written:
                    raise _error(node, "loop bound",
                                 f"the bound depends on '{node.name}', which the nest computes")
        if any(isinstance(n, d.Var) and n.name in {l.var for l in loops} for n in loop.step.walk()):
            raise _error(loop, "loop step", "the step may not depend on a loop variable")


def _error(node: d.Node, construct: str, detail: str) -> UnsupportedConstruct:
    return UnsupportedConstruct(f"unsupported {construct}: {detail}", node.loc, construct)
