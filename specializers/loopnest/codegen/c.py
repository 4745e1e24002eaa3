"""Serial C: a scheduled nest as a C module (``templates/loopnest/c_module.c.mako``).

``CModuleBuilder`` turns one plan (bound nest, schedule) and the call's types into C source,
the cffi declaration of its entry function, and the description of its arguments and results
that ``variants`` needs to call it. The walk is ``walker.walk``; ``CEmitter`` prints loops and
statements; ``openmp.OpenMPEmitter`` adds the OpenMP pragmas.

Conventions of the generated code:

* arrays arrive as a pointer to their first element, their extents (``A_n0``...) and, when not
  C-contiguous, their strides in bytes (``A_s0``...); ``ASP_AT_A(i, j)`` reads or writes one
  element; pointers are ``restrict`` unless the array shares memory with another;
* a subscript proven in range is used as it is (or with the extent added, where it is always
  negative); any other goes through ``asp_index_ok`` when it runs: Python's wrap-around, and an
  IndexError for what is out of range, with nothing read or written;
* loop variables are ``int64_t``; a loop's bounds are computed once before it, as ``range``
  does; loops whose variables the kernel reads afterwards get their final values in Python;
* scalars live in locals of their inferred C type; those the kernel reads after the nest are
  returned in the result struct with a flag telling whether the nest assigned them;
* an error (a helper's ``asp_fail``, a failed index check) stops what Python would stop:
  serial C leaves the nest right after the failing statement (``goto asp_stop``), before the
  statement's own write, so the arrays hold exactly what plain Python leaves before it raises;
  OpenMP code cannot leave a parallel region, so where the nest has any error path every array
  write is guarded by "no error recorded yet" (iterations that ran in parallel with the failing
  one keep their writes, as they would in any parallel order).
"""

from __future__ import annotations

import itertools
import re

from dataclasses import dataclass
from typing import Callable

from asp_core.cache import stable_key
from asp_core.signature import ArraySig
from asp_core.templates import render

from .. import dast as d
from ..analysis.binding import DIRECT, SHIFTED, BoundAccess
from ..pretty import expression
from ..schedule.allen_kennedy import unrolled
from ..schedule.tiling import triangular, uses
from ..schedule.tree import SLoop, SStmt, STile, perfect_chain
from ..typeinfer import Ty, TypeInfo
from .cexpr import CExpression, c_identifier, check_supported_types, ctype
from .ranges import loop_ranges
from .walker import walk


@dataclass(frozen=True)
class Argument:
    """How to produce one C argument from the nest's inputs."""

    kind: str                  # array | shape | stride | scalar | threads
    position: int = -1         # index into the inputs
    dim: int = 0
    ctype: str = ""


@dataclass(frozen=True)
class Output:
    name: str                  # the scalar
    field: str                 # the struct field holding its value
    flag: str                  # the struct field saying it was assigned
    result: Ty                 # the Python type Python would leave it with


@dataclass(frozen=True)
class ErrorSite:
    """What an IndexError at a checked subscript names."""

    array: str
    subscript: str
    dim: int
    line: int


#: The runtime functions (``c_runtime.h``) that report ASP_INT_OVERFLOW: exact Python-int
#: arithmetic and ``int()`` of a float, whose results Python would carry beyond 64 bits.
_BEYOND_INT64 = re.compile(r"\basp_(?:(?:add|sub|mul)_py|floordiv_py_i64|ipow_py|abs_py|f2i)\(")


@dataclass
class CModule:
    source: str
    cdef: str
    entry: str
    key: str
    arguments: tuple[Argument, ...]
    outputs: tuple[Output, ...]
    error_sites: tuple[ErrorSite, ...]
    openmp: bool
    can_fail: bool = True      # the code has an error path (a check that may raise)
    #: the code computes Python ints (or int() of floats) that plain Python could carry past
    #: 64 bits: such a call fails with ``BeyondInt64`` where Python would go on
    beyond_int64: bool = False
    #: ``void packed(const asp_slot *slots, void *out)``: the entry point with its arguments
    #: in an array of 8-byte slots (``asp_core.call_guard.make_caller``), "" if none
    packed: str = ""
    #: the bands the schedule tiled and why (``schedule.tiling.TiledBand.describe``)
    tiles: tuple[str, ...] = ()
    #: the loops unrolled and jammed in their blocks, and why (``CEmitter._jams``)
    jams: tuple[str, ...] = ()
    #: the arrays read through transposed copies, and why (``schedule.packing``)
    packs: tuple[str, ...] = ()


def c_order_accessor(ident: str, ndim: int) -> str:
    """``ASP_AT_<ident>(i0, ...)``: an element of a C-contiguous array, by its extents."""
    indices = [f"i{k}" for k in range(ndim)]
    if ndim == 0:
        return f"#define ASP_AT_{ident}() ({ident}[0])"
    flat = indices[0]
    for k in range(1, ndim):
        flat = f"({flat}) * {ident}_n{k} + ({indices[k]})"
    return f"#define ASP_AT_{ident}({', '.join(indices)}) ({ident}[{flat}])"


def serial_schedule(analysis, plan, itemsize: dict[str, int], shared: bool = False,
                    force: int | None = None):
    """(the schedule, the tiled bands) compiled C runs for ``plan``: its permutable bands
    tiled for this machine's L2 cache, or in blocks of ``force`` (``ASP_TILE``; 0: none) by
    ``schedule.tiling``, after ``schedule.packing`` moved innermost the loops that vectorize
    once some arrays are read through transposed copies, and, where that blocks more loops,
    after ``schedule.distribution`` split parallel loops around their inner nests;
    ``itemsize``: array -> bytes per element; ``shared``: for OpenMP
    (only top-level bands headed by a parallel loop, whose blocks the threads share). The
    runner's memo of compiled variants holds the schedule too: calls whose plans tile
    differently get modules of their own."""
    from asp_core import platform

    from ..schedule.distribution import distribute
    from ..schedule.packing import pack_schedule
    from ..schedule.tiling import tile_schedule

    sizes = dict(itemsize)
    sizes.update({plan.bound.canonical.get(n, n): w for n, w in itemsize.items()})
    loops = {loop.lid: loop for loop in d.loops(analysis.nest.loop)}

    def blocked(schedule):
        schedule, _ = pack_schedule(schedule, plan.graph, plan.bound, loops, analysis.access,
                                    analysis.names.arrays)
        found = tile_schedule(schedule, plan.graph, plan.bound, loops, sizes,
                              platform.data_caches().l2, force, shared)
        return found, sum(len(band.variables) for band in found[1])

    best, depth = blocked(plan.schedule)
    split = distribute(plan.schedule, loops)
    if split is not plan.schedule:   # (kept where more loops end up blocked)
        other, deeper = blocked(split)
        if deeper > depth:
            best = other
    return best


class CModuleBuilder:
    """Builds the C module of one plan for one call signature."""

    variant = "c"
    #: Which of the schedule's permutable bands are tiled (``schedule.tiling``): "any", "shared"
    #: (OpenMP: top-level bands headed by a parallel loop) or "" (none: the device emitter
    #: prints no tile loops).
    tiles = "any"
    #: How generated code stops after an error: "goto" (leave the nest) or "guard" (skip
    #: every later array write; for code that may not jump out of a parallel region).
    on_error = "goto"

    def __init__(self, analysis, plan, types: TypeInfo, signature: tuple, title: str,
                 tiled: bool = True):
        check_supported_types(types)
        if not tiled:   # the plan's own order, instance for instance (``rollback``'s redo)
            self.tiles = ""
        self.analysis = analysis
        self.plan = plan
        self.types = types
        self.signature = signature
        self.title = title
        self.names = analysis.names
        self.loops = {loop.lid: loop for loop in d.loops(analysis.nest.loop)}
        self.statements = {s.sid: s for s in analysis.statements}
        self.error_sites: list[ErrorSite] = []
        self.current: d.Assign | None = None
        self.loop_ranges = loop_ranges(plan)
        self.expr = CExpression(types, self._read,
                                ranges={name: (low, high) for name, low, high in self.loop_ranges})
        self.aliased = {a for a, c in plan.bound.canonical.items() if c != a} | \
            {c for a, c in plan.bound.canonical.items() if c != a} | \
            {a for pair in plan.bound.overlapping for a in pair}
        positions = {name: i for i, name in enumerate(self.names.inputs)}
        self.positions = positions
        self.live = [s for s in self.names.scalars if s in analysis.scalars.live_out]
        self.guard_writes = False  # set when on_error is "guard" and the nest can fail
        self.stops = False         # some statement jumps to asp_stop
        self.schedule, self.tiled = self._tiling()

    def _tiling(self):
        """The schedule this module runs (its bands tiled where ``tiles``) and the tiles."""
        if not self.tiles:
            return self.plan.schedule, ()
        from asp_core import config

        itemsize = {name: self.types.arrays[name].dtype.itemsize for name in self.names.arrays}
        return serial_schedule(self.analysis, self.plan, itemsize, self.tiles == "shared",
                               config.current().tile)

    # -- the variant key (what the generated code depends on) ----------------------------------

    def key(self) -> str:
        return stable_key("loopnest-c", self.variant, *self.key_parts())

    def key_parts(self) -> tuple:
        """Everything the generated code depends on."""
        modes = tuple(tuple(a.modes for a in accs) for _, accs in sorted(self.plan.bound.accesses.items()))
        steps = tuple(sorted((lid, 1 if b.step > 0 else -1, b.wide)
                             for lid, b in self.plan.bound.loops.items()))
        sig = tuple(str(s) for s in self.signature)
        return (self.analysis.nest, self.schedule, sig, modes, steps,
                tuple(sorted(self.aliased)), tuple(self.analysis.live_loop_vars),
                tuple(self.live), self.loop_ranges)

    # -- arrays ----------------------------------------------------------------------------

    def array_sig(self, name: str) -> ArraySig:
        return self.signature[self.positions[name]]

    def accessor(self, name: str) -> str:
        """``ASP_AT_<ident>(i0, ...)``, the element of array ``name`` at those indices; for an
        array read through a transposed copy (``schedule.packing``) the copy's, and the
        array's own as ``ASP_SRC_<ident>`` (which the copy is made from)."""
        ident = c_identifier(name)
        if name in self.schedule.packs:
            own = self._accessor(name).replace(f"#define ASP_AT_{ident}(",
                                               f"#define ASP_SRC_{ident}(", 1)
            return (f"{own}\n#define ASP_AT_{ident}(i0, i1) "
                    f"(asp_pk_{ident}[(i1) * {ident}_n0 + (i0)])")
        return self._accessor(name)

    def _accessor(self, name: str) -> str:
        sig = self.array_sig(name)
        ident = c_identifier(name)
        indices = [f"i{k}" for k in range(sig.ndim)]
        if sig.ndim == 0 or sig.layout == "C":
            return c_order_accessor(ident, sig.ndim)
        offset = " + ".join(f"({i}) * {ident}_s{k}" for k, i in enumerate(indices))
        body = f"(*({ctype(self.types.arrays[name])} *)((char *){ident} + {offset}))"
        return f"#define ASP_AT_{ident}({', '.join(indices)}) {body}"

    def _access(self, ref: d.ArrayRef, write: bool) -> BoundAccess:
        info = self.analysis.access.statement(self.current.sid)
        bound = self.plan.bound.accesses[self.current.sid]
        for acc, b in zip(info.accesses, bound):
            if acc.write == write and acc.array == ref.array and acc.index == ref.index:
                return b
        raise AssertionError(f"no access {expression(ref)} in S{self.current.sid}")

    def _indices(self, ref: d.ArrayRef, access: BoundAccess, printer: CExpression):
        """(prelude declarations, checks, index expressions) of an element access."""
        ident = c_identifier(ref.array)
        decls, checks, indices = [], [], []
        for k, (expr, mode) in enumerate(zip(ref.index, access.modes)):
            affine = access.raw[k] is not None if access.raw else False
            raw = printer.integer(expr) if affine else printer.subscript(expr)
            if mode == DIRECT:
                indices.append(raw)
            elif mode == SHIFTED:
                indices.append(f"({raw} + {ident}_n{k})")
            else:
                where = len(self.error_sites)
                self.error_sites.append(ErrorSite(ref.array, expression(ref), k,
                                                  self.current.loc.line if self.current.loc else 0))
                name = f"asp_k{where}"
                decls.append(f"int64_t {name};")
                checks.append(f"asp_index_ok(asp_err, {where}, {raw}, &{name}, {ident}_n{k})")
                indices.append(name)
        return decls, checks, indices

    def _read(self, ref: d.ArrayRef, printer: CExpression) -> str:
        access = self._access(ref, write=False)
        decls, checks, indices = self._indices(ref, access, printer)
        element = f"ASP_AT_{c_identifier(ref.array)}({', '.join(indices)})"
        if not checks:
            return element
        zero = f"({ctype(self.types.arrays[ref.array])})0"
        return f"({{ {' '.join(decls)} ({' && '.join(checks)}) ? {element} : {zero}; }})"

    # -- statements ------------------------------------------------------------------------------

    def assignment(self, stmt: d.Assign) -> list[str]:
        """The lines of one statement (without its predicate)."""
        self.current = stmt
        if stmt.kind == "break":   # ends the innermost loop, as Python's (``ifconvert``)
            return ["break;"]
        value_ty = self.types.of(stmt.value)
        value = self.expr.value(stmt.value)
        fallible = "asp_err" in value
        stop = "if (ASP_UNLIKELY(asp_err->code)) goto asp_stop;"
        if isinstance(stmt.target, d.Var):
            name = stmt.target.name
            target_ty = self.types.variables[name]
            lines = [f"{c_identifier(name)} = {self.expr.convert(value, value_ty, target_ty)};"]
            if fallible and self.on_error == "goto":
                lines.append(stop)
                self.stops = True
            if name in self.live:
                lines.append(f"asp_w_{c_identifier(name)} = 1;")
            return lines
        ref = stmt.target
        array_ty = self.types.arrays[ref.array]
        value = self.expr.convert(value, value_ty, array_ty)
        access = self._access(ref, write=True)
        decls, checks, indices = self._indices(ref, access, self.expr)
        element = f"ASP_AT_{c_identifier(ref.array)}({', '.join(indices)})"
        if self.expr.vector:  # the iteration's own error code (codegen.openmp)
            checks = checks + ["asp_code == 0"]
        elif self.on_error == "guard":
            if self.guard_writes:
                checks = checks + ["asp_ok(asp_err)"]
        elif fallible or checks:
            self.stops = True
            lines = ["{", f"    {ctype(array_ty)} asp_v = {value};"]
            if fallible:
                lines.append(f"    {stop}")
            lines += [f"    {x}" for x in decls]
            if checks:
                lines.append(f"    if (ASP_UNLIKELY(!({' && '.join(checks)}))) goto asp_stop;")
            return lines + [f"    {element} = asp_v;", "}"]
        if not checks:
            return [f"{element} = {value};"]
        return ["{", f"    {ctype(array_ty)} asp_v = {value};", *(f"    {x}" for x in decls),
                f"    if ({' && '.join(checks)}) {element} = asp_v;", "}"]

    # -- the module --------------------------------------------------------------------------------

    def arguments(self) -> tuple[list[str], list[Argument]]:
        params, args = [], []
        for name in self.names.arrays:
            pos = self.positions[name]
            sig = self.signature[pos]
            ident = c_identifier(name)
            restrict = " restrict" if name not in self.aliased else ""
            params.append(f"{ctype(self.types.arrays[name])} *{restrict} {ident}")
            args.append(Argument("array", pos))
            for k in range(sig.ndim):
                params.append(f"int64_t {ident}_n{k}")
                args.append(Argument("shape", pos, k))
            if sig.layout != "C":
                for k in range(sig.ndim):
                    params.append(f"int64_t {ident}_s{k}")
                    args.append(Argument("stride", pos, k))
        for name in self.names.invariants:
            ty = self.types.variables[name]
            params.append(f"{ctype(ty)} {c_identifier(name)}")
            args.append(Argument("scalar", self.positions[name], ctype=ctype(ty)))
        for name in self.analysis.required:
            ty = self.types.variables[name]
            params.append(f"{ctype(ty)} asp_in_{c_identifier(name)}")
            args.append(Argument("scalar", self.positions[name], ctype=ctype(ty)))
        params.append("int32_t asp_threads")
        args.append(Argument("threads"))
        return params, args

    def packs(self) -> list[str]:
        """The transposed copies of the arrays the schedule packs (``schedule.packing``),
        made before the nest runs in blocks of 32 x 32 elements (both arrays' lines in the
        cache; the OpenMP variant's threads share the blocks' rows), and freed at its end;
        where one cannot be allocated, ``ASP_NO_MEMORY`` before anything is written."""
        lines = []
        for name in self.schedule.packs:
            ident = c_identifier(name)
            ty = ctype(self.types.arrays[name])
            lines += [
                f"asp_pk_{ident} = malloc((size_t){ident}_n0 * (size_t){ident}_n1 * "
                f"sizeof({ty}) + 1);",
                f"if (!asp_pk_{ident}) {{ asp_fail(asp_err, ASP_NO_MEMORY, 0, {ident}_n0, "
                f"{ident}_n1); goto asp_stop; }}",
                *(["#pragma omp parallel for num_threads(asp_nthreads)"]
                  if self.variant == "openmp" else []),
                f"for (int64_t asp_r = 0; asp_r < {ident}_n0; asp_r += 32)",
                f"    for (int64_t asp_c = 0; asp_c < {ident}_n1; asp_c += 32)",
                f"        for (int64_t asp_x = asp_r; asp_x < asp_r + 32 && asp_x < {ident}_n0; "
                f"asp_x++)",
                f"            for (int64_t asp_y = asp_c; asp_y < asp_c + 32 && asp_y < "
                f"{ident}_n1; asp_y++)",
                f"                asp_pk_{ident}[asp_y * {ident}_n0 + asp_x] = "
                f"ASP_SRC_{ident}(asp_x, asp_y);"]
        if lines:
            self.stops = True
        return lines

    def pack_notes(self) -> tuple[str, ...]:
        """What ``schedule.packing`` did, for ``explain()`` (and ``in_order``: a loop moved
        innermost runs another order than the plan's)."""
        notes = []
        if self.schedule.moved:
            notes.append(f"{', '.join(self.schedule.moved)} moved innermost in its band, which "
                         "then walks every array with unit stride (or not at all) and vectorizes")
        if self.schedule.packs:
            notes.append(f"{', '.join(self.schedule.packs)} read through transposed copies "
                         "(made once per call)")
        return tuple(notes)

    def prologue(self) -> list[str]:
        lines = ["(void)asp_threads;"]
        for name in self.schedule.packs:   # (declared first: the copies may jump to asp_stop)
            lines.append(f"{ctype(self.types.arrays[name])} *asp_pk_{c_identifier(name)} = NULL;")
        for name in self.names.scalars + self.names.temps:
            ty = self.types.variables[name]
            ident = c_identifier(name)
            init = f"asp_in_{ident}" if name in self.analysis.required else "0"
            lines.append(f"{ctype(ty)} {ident} = {init};")
            if name in self.live:
                lines.append(f"int32_t asp_w_{ident} = 0;")
        return lines

    def outputs(self) -> tuple[list[str], list[str], list[Output]]:
        fields, epilogue, outputs = [], [], []
        for name in self.live:
            ident = c_identifier(name)
            ty = self.types.variables[name]
            fields += [f"{ctype(ty)} v_{ident}", f"int32_t w_{ident}"]
            epilogue += [f"asp_out.v_{ident} = {ident};", f"asp_out.w_{ident} = asp_w_{ident};"]
            outputs.append(Output(name, f"v_{ident}", f"w_{ident}",
                                  self.types.result_types.get(name, ty)))
        return fields, epilogue, outputs

    def emitter(self):
        return CEmitter(self)

    def build(self) -> CModule:
        key = self.key()
        entry = f"asp_nest_{key[:16]}"
        out_type = f"asp_out_{key[:16]}"
        emitter = self.emitter()
        walk(self.schedule, self.analysis.nest, emitter)
        if self.on_error == "guard" and any("asp_err" in text for text in _code(emitter)):
            self.guard_writes, self.error_sites = True, []  # again, with every write guarded
            self.expr.simd_functions.clear()
            emitter = self.emitter()
            walk(self.schedule, self.analysis.nest, emitter)
        params, arguments = self.arguments()
        fields, epilogue, outputs = self.outputs()
        epilogue += [f"free(asp_pk_{c_identifier(name)});" for name in self.schedule.packs]
        header = f"{self.variant} variant of {self.title}"
        source = render("loopnest/c_module.c.mako", header=header, variant=self.variant, key=key,
                        entry=entry, out_type=out_type, out_fields=fields, params=params,
                        accessors=[self.accessor(a) for a in self.names.arrays],
                        prologue=self.prologue() + emitter.prologue() + self.packs(),
                        body=emitter.lines,
                        functions=getattr(emitter, "outlined", []),
                        stops=self.stops, epilogue=epilogue,
                        simd_functions=sorted(self.expr.simd_functions))
        packed = f"asp_packed_{key[:16]}"
        source += packed_entry(packed, entry, out_type, params)
        cdef = self.cdef(entry, out_type, params, fields) + \
            f"\nvoid {packed}(const void * slots, void * out);"
        can_fail = any("asp_err" in text for text in _code(emitter))
        beyond = any(_BEYOND_INT64.search(text) for text in _code(emitter))
        return CModule(source, cdef, entry, key, tuple(arguments), tuple(outputs),
                       tuple(self.error_sites), self.variant == "openmp", can_fail, beyond,
                       packed, tuple(band.describe() for band in self.tiled),
                       tuple(dict.fromkeys(emitter.jams + emitter.unrolled_notes())),
                       self.pack_notes())

    @staticmethod
    def cdef(entry: str, out_type: str, params: list[str], fields: list[str]) -> str:
        c_params = []
        for p in params:
            ctype_, name = p.rsplit(" ", 1)
            c_params.append(f"void * {name}" if "*" in ctype_ else f"{ctype_} {name}")
        struct = "typedef struct { int32_t code; int32_t where; int64_t value; int64_t extent; } asp_error;\n"
        struct += "typedef struct { asp_error err; " + "".join(f"{f}; " for f in fields) + f"}} {out_type};\n"
        return struct + f"{out_type} {entry}({', '.join(c_params)});"


def _code(emitter) -> list[str]:
    """The lines of C an emitter wrote: the nest's function's, and those of the functions it
    calls (an OpenMP region's blocks, ``codegen.openmp``)."""
    return emitter.lines + getattr(emitter, "outlined", [])


def packed_entry(name: str, entry: str, out_type: str, params: list[str]) -> str:
    """C of ``void name(const void *slots, void *out)``: ``entry`` called with argument ``k``
    read from slot ``k`` (a union of a pointer, an int64 and a double), its result record
    stored at ``out``; what ``asp_core.call_guard``'s native calls call."""
    union = f"{name}_slot"
    args = []
    for k, param in enumerate(params):
        ctype_, _ = param.rsplit(" ", 1)
        ctype_ = ctype_.replace("restrict", "").strip()
        if "*" in ctype_:
            args.append(f"({ctype_})s[{k}].p")
        elif ctype_ in ("double", "float"):
            args.append(f"({ctype_})s[{k}].d")
        else:
            args.append(f"({ctype_})s[{k}].i")
    call = f"{entry}({', '.join(args)})"
    return (f"\n\ntypedef union {{ void *p; int64_t i; double d; }} {union};\n"
            f"void {name}(const void *slots, void *out) {{\n"
            f"    const {union} *s = ({union} const *)slots;\n"
            f"    (void)s;\n"
            f"    *({out_type} *)out = {call};\n"
            f"}}\n")


#: Unroll-and-jam (``CEmitter._jams``): iterations of the outer loop of a pair jammed into
#: the inner one, and the most statements the inner one may hold; iterations of a loop
#: around the pair jammed too (``JAM_OUTER``: a second dimension of the register block),
#: and the most statement copies the jammed inner loop may hold.
JAM = 4
JAM_STATEMENTS = 2
JAM_OUTER = 2
JAM_COPIES = 16


def _bindings(jammed, values) -> str:
    """C declarations binding each jammed loop's variable ((variable, its jam counter, count)
    of ``CEmitter.jam_stack``) to its copy's value in ``values``."""
    return " ".join(f"const int64_t {c_identifier(var)} = {jam} + {value} * "
                    f"asp_step_{c_identifier(var)};" for (var, jam, _), value in
                    zip(jammed, values))


class CEmitter:
    """Prints the walk of a schedule as serial C (statements in source form, loops as
    ``for`` with bounds computed once)."""

    def __init__(self, builder: CModuleBuilder):
        self.b = builder
        self.lines: list[str] = []
        self.depth = 0
        self.tiles: set[int] = set()   # lids whose tile loop is open (their blocks run inside)
        self.jam_into: int | None = None   # the band's last loop, which the jams go into
        self.jam_ivdep = False   # ...whose arrays share no memory (``_jammed_block``)
        self.jams: list[str] = []   # what was jammed, for ``explain()`` (``CModule.jams``)
        self.unrolled_bands: set[tuple[int, ...]] = set()   # (``pragmas``)
        # the loops being jammed, outermost first: (variable, its counter, iterations)
        self.jam_stack: list[tuple[str, str, int]] = []

    def prologue(self) -> list[str]:
        return []

    def line(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    def bounds(self, loop: d.Loop) -> tuple[str, str, str, str]:
        """(start, end, step, comparison) C texts of a loop (bounds computed in a prologue)."""
        expr = self.b.expr
        step = self.b.plan.bound.loops[loop.lid].step
        return (expr.integer(loop.start), expr.integer(loop.stop), expr.integer(loop.step),
                "<" if step > 0 else ">")

    def tile(self, loop: d.Loop, node: STile, body: Callable[[], None]) -> None:
        """A tile loop (``schedule.tiling``: a rectangular band, not wide): the
        loop's bounds, then its blocks' first values; the loop itself runs inside, one block
        (``block_header``)."""
        self.line("{")
        self.depth += 1
        if self.followed(loop):
            self.hull(loop)
        else:
            self.hoist(loop)
        self.tile_header(loop, node)
        self.depth += 1
        self.tiles.add(loop.lid)
        body()
        self.tiles.discard(loop.lid)
        self.depth -= 1
        self.line("}")
        self.depth -= 1
        self.line("}")

    def followed(self, loop: d.Loop) -> tuple[d.Loop, ...]:
        """The loops of its tiled band that ``loop``'s bounds read (``tiling.triangular``);
        () for a loop whose range is the same in every block of them."""
        return triangular(loop, [self.b.loops[lid] for lid in sorted(self.tiles)])

    def corners(self, loop: d.Loop) -> list[str]:
        """C declarations binding the loops ``loop`` follows (rectangular ones) to each
        corner of their blocks at hand (the first value and the last one a block may hold,
        ``asp_end`` less one)."""
        ends = []
        for other in self.followed(loop):
            var = c_identifier(other.var)
            sign = 1 if self.b.plan.bound.loops[other.lid].step > 0 else -1
            ends.append((f"const int64_t {var} = asp_tile_{var};",
                         f"const int64_t {var} = asp_end_{var} - ({sign});"))
        return [" ".join(corner) for corner in itertools.product(*ends)]

    def hull(self, loop: d.Loop) -> None:
        """The bounds of a triangular loop's tile loop (``tiling.triangular``), which walks
        its iterations' numbers (not its values) from 0 to the most iterations it runs at a
        corner of the blocks it follows."""
        var = c_identifier(loop.var)
        start, stop, step, _ = self.bounds(loop)
        self.line(f"const int64_t asp_lo_{var} = 0, asp_step_{var} = {step};")
        self.line(f"int64_t asp_hi_{var} = 0;")
        for corner in self.corners(loop):
            self.line(f"{{ {corner} const int64_t asp_a = {start}, asp_b = {stop};")
            self.line(f"  const int64_t asp_t = asp_b > asp_a ? (asp_b - asp_a + asp_step_{var} "
                      f"- 1) / asp_step_{var} : 0;")
            self.line(f"  if (asp_t > asp_hi_{var}) asp_hi_{var} = asp_t; }}")

    def tile_header(self, loop: d.Loop, node: STile) -> None:
        """The ``for`` line over a tiled loop's blocks (its bounds hoisted), and the end of
        the block at hand (``asp_end_<var>``)."""
        var = c_identifier(loop.var)
        cmp = self.bounds(loop)[3]   # "<" stepping up, ">" down
        block = f"{node.size} * asp_step_{var}"
        self.line(f"for (int64_t asp_tile_{var} = asp_lo_{var}; asp_tile_{var} {cmp} "
                  f"asp_hi_{var}; asp_tile_{var} += {block}) {{")
        self.line(f"    const int64_t asp_end_{var} = asp_tile_{var} + {block} {cmp} asp_hi_{var}"
                  f" ? asp_tile_{var} + {block} : asp_hi_{var};")

    def loop(self, loop: d.Loop, node: SLoop, body: Callable[[], None]) -> None:
        if loop.lid in self.tiles:   # one block of a tiled loop
            if self.jam_stack and self.jam_into == loop.lid:   # the band's last loop, jammed
                self._jammed_block(loop, body)
            elif count := self._jams(loop, node):
                self._jam(loop, body, count)
            else:
                self._block(loop, f"asp_tile_{c_identifier(loop.var)}", body)
            return
        if loop.predicate:
            self.line(f"if ({c_identifier(loop.predicate)}) {{")
            self.depth += 1
        self.line("{")
        self.depth += 1
        self.hoist(loop)
        for pragma in self.pragmas(loop, node):
            self.line(pragma)
        self.header(loop)
        self.depth += 1
        body()
        self.depth -= 1
        self.line("}")
        self.depth -= 1
        self.line("}")
        if loop.predicate:
            self.depth -= 1
            self.line("}")

    # -- unroll-and-jam (inside a tiled band's block) --------------------------------------

    def _jams(self, loop: d.Loop, node: SLoop) -> int:
        """How many iterations of ``loop`` (a block of a tiled band, so fully permutable with
        the loops inside it) to unroll and jam into the band's last loop (0: none):

        * ``JAM``, where ``loop``'s one inner loop is the band's last and holds only
          statements, one of which writes an element ``loop`` does not move (gemm's
          ``C[i, j]`` under ``k``): the copies update it in a register, in order, instead of
          loading and storing it once per iteration;
        * ``JAM_OUTER``, where ``loop``'s one inner loop is such a pair's outer loop, and a
          statement reads an element ``loop`` does not move (gemm's ``B[k, j]`` under
          ``i``): each such element, loaded once, serves the copies of ``loop``'s iterations
          too (a register block of ``JAM_OUTER`` by ``JAM``, at most ``JAM_COPIES``
          statement copies).

        A permutable band runs its iterations in any order of its loops; within one
        element's updates, the copies keep the loops' order (jammed iterations go outermost
        first), so each element's sum is Python's, bit for bit."""
        if JAM < 2 or len(node.body) != 1 or not isinstance(node.body[0], SLoop) or \
                self.followed(loop):
            return 0   # (a triangular loop's blocks start where its range does: not jammed)
        inner = node.body[0]
        if inner.lid not in self.tiles:
            return 0
        last = self._pair(loop, inner)
        if last is not None and self._unjammable(last, loop):
            return 0
        if last is not None:
            copies = JAM * len(last.body)
            for _, _, count in self.jam_stack:
                copies *= count
            if copies > JAM_COPIES:
                return 0
            self._jam_into(last)
            self.jams.append(f"{loop.var} unrolled by {JAM} and jammed into "
                             f"{self.b.loops[last.lid].var} (the element it writes stays in a "
                             f"register across {loop.var})")
            return JAM
        if self.jam_stack or JAM_OUTER < 2 or len(inner.body) != 1:
            return 0
        kid = self.b.loops[inner.lid]
        last = self._pair(kid, inner.body[0]) if isinstance(inner.body[0], SLoop) and \
            inner.body[0].lid in self.tiles else None
        if last is None or JAM_OUTER * JAM * len(last.body) > JAM_COPIES or \
                self._follows(inner, loop) or self._unjammable(last, loop):
            return 0
        access = self.b.analysis.access
        reused = [acc for child in last.body for acc in access.statement(child.sid).accesses
                  if not acc.write and acc.affine and
                  all(loop.var not in sub.variables for sub in acc.subscripts)]
        if not reused:
            return 0
        self._jam_into(last)
        self.jams.append(f"{loop.var} unrolled by {JAM_OUTER} and jammed into "
                         f"{self.b.loops[last.lid].var} too (each {reused[0].array} element "
                         f"read there serves {JAM_OUTER} iterations of {loop.var})")
        return JAM_OUTER

    def _follows(self, node: SLoop, loop: d.Loop) -> bool:
        """Whether the range of ``node``'s loop reads ``loop``'s variable (a triangle): the
        jammed copies of ``loop``'s iterations share one run of ``node``'s loop, which would
        run the range of the first copy for all of them."""
        inner = self.b.loops[node.lid]
        return bool(uses(inner.start, {loop.var}) | uses(inner.stop, {loop.var}) |
                    uses(inner.step, {loop.var}))

    def _unjammable(self, last: SLoop, loop: d.Loop) -> bool:
        """Whether the band's last loop ``last`` cannot take jammed copies of ``loop``'s
        iterations: its start or step reads ``loop`` (the copies' ranges would start apart),
        or its end does and it is not a triangular loop of its band (whose block each copy
        runs to its own end: ``_ragged_block``)."""
        inner = self.b.loops[last.lid]
        if uses(inner.start, {loop.var}) or uses(inner.step, {loop.var}):
            return True
        return bool(uses(inner.stop, {loop.var})) and not self.followed(inner)

    def _jam_into(self, last: SLoop) -> None:
        """The jams go into ``last`` (the band's last loop)."""
        access = self.b.analysis.access
        self.jam_into = last.lid
        self.jam_ivdep = not any(acc.array in self.b.aliased for child in last.body
                                 for acc in access.statement(child.sid).accesses)

    def _pair(self, loop: d.Loop, inner: SLoop) -> SLoop | None:
        """``inner``, where it is the band's last loop, holding only statements (at most
        ``JAM_STATEMENTS``), one of which writes an element ``loop`` does not move; else
        None (``_jams``)."""
        if not inner.body or not all(isinstance(child, SStmt) for child in inner.body) or \
                len(inner.body) > JAM_STATEMENTS:
            return None
        access = self.b.analysis.access
        if not any(acc.write and acc.affine and
                   all(loop.var not in sub.variables for sub in acc.subscripts)
                   for child in inner.body for acc in access.statement(child.sid).accesses):
            return None
        return inner

    def _jam(self, loop: d.Loop, body: Callable[[], None], count: int) -> None:
        """``count`` iterations of ``loop`` at a time, their bodies jammed into the band's
        last loop (``_jammed_block``), then the block's last ones one at a time (any loop
        jammed around it still jammed)."""
        var = c_identifier(loop.var)
        cmp = self.bounds(loop)[3]
        jam = f"asp_jam_{var}"
        self.line("{")
        self.depth += 1
        self.line(f"int64_t {jam} = asp_tile_{var};")
        self.line(f"for (; {jam} + {count - 1} * asp_step_{var} {cmp} asp_end_{var}; "
                  f"{jam} += {count} * asp_step_{var}) {{")
        self.depth += 1
        self.jam_stack.append((loop.var, jam, count))
        body()
        self.jam_stack.pop()
        self.depth -= 1
        self.line("}")
        self._block(loop, jam, body)
        self.depth -= 1
        self.line("}")

    def _jammed_block(self, loop: d.Loop, body: Callable[[], None]) -> None:
        """The band's last loop under jammed ones: its body once per combination of their
        jammed iterations, each with their variables bound to its values, outermost first
        (each element's updates in the loops' order)."""
        stack = list(self.jam_stack)

        def copies(fixed: dict[str, int] | None = None) -> None:
            """The copies (those with the values ``fixed`` of some jammed loops' copies)."""
            for values in itertools.product(*(range(count) for _, _, count in stack)):
                if fixed and any(fixed.get(var, value) != value
                                 for (var, _, _), value in zip(stack, values)):
                    continue
                self.line(f"{{ {_bindings(stack, values)}")
                self.depth += 1
                body()
                self.depth -= 1
                self.line("}")

        ends = [entry for entry in stack if uses(loop.stop, {entry[0]})] \
            if self.followed(loop) else []
        if ends:
            self._ragged_block(loop, stack, ends, copies)
            return
        # Where its arrays share no memory (the pointers are ``restrict``: ``jam_ivdep``), no
        # iteration depends on another: said again to GCC, which does not carry ``restrict``
        # into an OpenMP region's outlined function and gives up versioning the loop for
        # aliasing past 10 pairs of accesses (the eight copies of gemm's register block: not
        # vectorized, 12 GFLOP/s on two threads against 27 on one).
        self._block(loop, f"asp_tile_{c_identifier(loop.var)}", copies,
                    "#pragma GCC ivdep" if self.jam_ivdep else None)

    def _ragged_block(self, loop: d.Loop, stack, ends, copies) -> None:
        """The block of a triangular last loop whose end follows jammed loops (``ends``, of
        ``stack``; ``_jams``: its start does not): each copy runs its own part of the loop's
        range in the block. Every copy runs the part they share, together, then each copy
        its own rest, in the jammed loops' order: all of them from the same first value (the
        start is the same for all), so that the values left to each copy come after those
        run with all, as a permutable band allows, and each element's updates keep the
        loops' order."""
        var = c_identifier(loop.var)
        first, stop, _, _ = self.bounds(loop)
        self.line(f"{{ const int64_t asp_a_{var} = {first}, asp_e_{var} = asp_a_{var} + "
                  f"asp_end_{var} * asp_step_{var};")
        self.line(f"int64_t asp_c_{var} = asp_e_{var};   /* the end all copies share */")
        combos = list(itertools.product(*(range(count) for _, _, count in ends)))
        for values in combos:
            self.line(f"{{ {_bindings(ends, values)} const int64_t asp_b = {stop}; if (asp_b < "
                      f"asp_c_{var}) asp_c_{var} = asp_b; }}")
        self.line(f"int64_t {var} = asp_a_{var} + asp_tile_{var} * asp_step_{var};")
        if self.jam_ivdep:
            self.line("#pragma GCC ivdep")
        self.line(f"for (; {var} < asp_c_{var}; {var} += asp_step_{var}) {{")
        self.depth += 1
        copies()
        self.depth -= 1
        self.line("}")
        self.line(f"const int64_t asp_r_{var} = {var};   /* where each copy's rest starts */")
        for values in combos:
            self.line(f"{{ {_bindings(ends, values)} const int64_t asp_b = {stop}, asp_f = "
                      f"asp_b < asp_e_{var} ? asp_b : asp_e_{var};")
            self.line(f"for (int64_t {var} = asp_r_{var}; {var} < asp_f; {var} += "
                      f"asp_step_{var}) {{")
            self.depth += 1
            copies({v: value for (v, _, _), value in zip(ends, values)})
            self.depth -= 1
            self.line("} }")
        self.line("}")

    def _block(self, loop: d.Loop, start: str, body: Callable[[], None],
               pragma: str | None = None) -> None:
        """``loop`` from ``start`` to the end of its block at hand (a tiled loop's); a
        triangular loop (``tiling.triangular``, stepping up) from its iteration ``start`` of
        its range at these values of the loops it follows, to the block's end or the
        range's."""
        var = c_identifier(loop.var)
        if self.followed(loop):   # (its block: iterations [start, asp_end) of its range)
            first, stop, _, _ = self.bounds(loop)
            self.line(f"{{ const int64_t asp_a_{var} = {first}, asp_b_{var} = {stop}, "
                      f"asp_e_{var} = asp_a_{var} + asp_end_{var} * asp_step_{var} < "
                      f"asp_b_{var} ? asp_a_{var} + asp_end_{var} * asp_step_{var} : "
                      f"asp_b_{var};")
            if pragma:
                self.line(pragma)
            self.line(f"for (int64_t {var} = asp_a_{var} + {start} * asp_step_{var}; {var} < "
                      f"asp_e_{var}; {var} += asp_step_{var}) {{")
            self.depth += 1
            body()
            self.depth -= 1
            self.line("} }")
            return
        if pragma:
            self.line(pragma)
        self.line(f"for (int64_t {var} = {start}; {var} {self.bounds(loop)[3]} asp_end_{var}; "
                  f"{var} += asp_step_{var}) {{")
        self.depth += 1
        body()
        self.depth -= 1
        self.line("}")

    def wide(self, loop: d.Loop) -> bool:
        """Whether the loop's values come near the ends of int64 (``binding.WIDE``)."""
        return self.b.plan.bound.loops[loop.lid].wide

    def hoist(self, loop: d.Loop) -> None:
        """The loop's bounds, computed once before it (and its trip count, for a wide one)."""
        var = c_identifier(loop.var)
        start, stop, step, _ = self.bounds(loop)
        self.line(f"const int64_t asp_lo_{var} = {start}, asp_hi_{var} = {stop}, "
                  f"asp_step_{var} = {step};")
        if self.wide(loop):
            self.line(f"const uint64_t asp_n_{var} = asp_trip_count(asp_lo_{var}, "
                      f"asp_hi_{var}, asp_step_{var});")

    def header(self, loop: d.Loop) -> None:
        """The ``for`` line opening the loop's body. A wide loop counts its iterations and
        computes the variable from the count (modulo 2**64, exact: each value is an int64),
        since stepping the variable past its stop could overflow."""
        var = c_identifier(loop.var)
        if not self.wide(loop):
            cmp = self.bounds(loop)[3]
            self.line(f"for (int64_t {var} = asp_lo_{var}; {var} {cmp} asp_hi_{var}; "
                      f"{var} += asp_step_{var}) {{")
            return
        self.line(f"for (uint64_t asp_t_{var} = 0; asp_t_{var} < asp_n_{var}; asp_t_{var}++) {{")
        self.line(f"    const int64_t {var} = (int64_t)((uint64_t)asp_lo_{var} + "
                  f"asp_t_{var} * (uint64_t)asp_step_{var});")

    def pragmas(self, loop: d.Loop, node: SLoop) -> list[str]:
        """A loop that is, with the loops perfectly nested in it, a band of few constant
        iterations (``schedule.allen_kennedy.unrolled``) is unrolled completely, so that the
        loop around it is vectorized over its straight-line body: left to itself, gcc
        vectorized a convolution's 5-iteration tap loop, across a runtime stride, instead of
        the image loop around it (9 GFLOP/s instead of 16)."""
        if not self.unrolled_band(node):
            return []
        self.unrolled_bands.add(tuple(n.lid for n in perfect_chain(node)))
        return [f"#pragma GCC unroll {self.b.analysis.access.loop(node.lid).constant_trips}"]

    def unrolled_notes(self) -> list[str]:
        """The bands unrolled completely, for ``explain()`` (each once: not the bands inside
        them, whose loops got the pragma too)."""
        notes = []
        for band in sorted(self.unrolled_bands):
            if any(set(band) < set(other) for other in self.unrolled_bands):
                continue
            trips = 1
            for lid in band:
                trips *= self.b.analysis.access.loop(lid).constant_trips
            notes.append(f"{', '.join(self.b.loops[lid].var for lid in band)} unrolled "
                         f"completely ({trips} iterations): the loop around them is vectorized "
                         "over their body")
        return notes

    def unrolled_band(self, node: SLoop) -> bool:
        """Whether ``node`` and the loops perfectly nested in it are unrolled completely."""
        band = perfect_chain(node)
        return not any(isinstance(child, (SLoop, STile)) for child in band[-1].body) and \
            unrolled(self.b.analysis.access, [n.lid for n in band])

    def statement(self, stmt: d.Assign, node: SStmt) -> None:
        lines = self.b.assignment(stmt)
        if stmt.predicate:
            self.line(f"if ({c_identifier(stmt.predicate)}) {{")
            for text in lines:
                self.line("    " + text)
            self.line("}")
        else:
            for text in lines:
                self.line(text)

