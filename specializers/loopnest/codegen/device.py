"""Device kernels from a schedule: one builder, a printer per dialect (OpenCL C, CUDA C).

``DeviceModuleBuilder`` turns one plan and the call's types into the source of a device module
(``templates/loopnest/device_module.mako``) and the description the host needs to run it
(``DeviceModule``: its kernels, their grids and arguments, the result record). The statements,
inner loops and Python's meaning of every operation are printed by the serial C builder it
extends (``codegen.c``, with the runtime helpers of ``c_runtime.h`` compiled for the device);
a ``Dialect`` holds the few words in which OpenCL C and CUDA C differ (qualifiers, the global
index, the address space of pointers, what a kernel may take as an argument), as loopy keeps
one kernel representation and a printer per target.

Kernels, in schedule order, as ``codegen.device_layout`` decides them (the cost model reads
the same decision):

* **Grid kernels.** A parallel top-level loop becomes a kernel whose band of loops is mapped
  onto the grid's axes (x: the loop walking the fastest-varying subscript of most accesses,
  Chikin et al.'s inter-thread stride). Each thread runs the rest of the body: sequential
  loops and further parallel loops inside run in the thread, as in serial C. The host
  computes each mapped loop's first value, step and trip count from the call's binding;
  threads past the trip count return at once.
* **Reductions.** A parallel top-level loop that reduces scalars runs on lanes in work-groups
  of ``GROUP_SIZE``, each lane reducing its share of the band's iterations; each work-group
  combines its lanes' results in a tree in local (shared) memory, with a barrier between the
  steps, and one work item then combines the work-groups' results in order
  (``_reduction_kernels``). The numbers of lanes and work-groups depend on the trip count
  alone, so the result has the same bits on every device.
* **Host loops.** A sequential top-level loop whose body is parallel loops only (a time loop
  around sweeps, LU's ``k`` around its updates) is run by the host: its kernels are launched
  once per iteration, in order on one queue, with the loop's variable as an argument and the
  inner grids computed from the binding at that iteration; nothing is copied and nothing
  waited for between iterations.
* **Segments.** Other top-level nodes (a recurrence, statements of a sequential loop's own),
  consecutive ones together, run as a kernel of their own on one work item, between the grid
  kernels, where no scalar flows between kernels; the segment stores the live scalars it
  assigns.
* **One work item.** Any other schedule (scalars carried between kernels, no grid at all) runs
  as one kernel on one work item: the serial C code on the device, always correct, never fast,
  so that every nest has a device variant to test. The cost model prices it as what it is.

Errors: each thread records its first error in its own ``asp_error`` and skips every array
write after it (``on_error = "guard"``); at its end a failing thread stores its error code in
a device word. The host copies no array back from a call whose word is set: the arrays hold
what they held before the call, and the call runs again as the original code, which raises
(or, for a Python int beyond 64 bits, goes on) exactly as Python does.

Arrays travel as C-contiguous copies (the accessors are C-order; strides are not passed). Two
arguments that are the same array (the same memory, shape and strides) travel as one buffer,
passed twice, without ``restrict``; arrays that share only part of their memory are refused,
since a device copy of each would no longer share it.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass
import numpy as np

from asp_core.cache import stable_key
from asp_core.errors import UnsupportedArgument
from asp_core.templates import render

from ..schedule.tree import Schedule, SLoop, statement_ids
from .c import _BEYOND_INT64, Argument, CEmitter, CModuleBuilder, Output, c_order_accessor
from .cexpr import c_identifier, ctype
from .device_layout import Axis, DeviceLayout
from .walker import walk

#: Each thread's own error record, opened at its start; at its end a failure is stored.
_OPEN_ERRORS = ["asp_error asp_e = {0, 0, 0, 0};", "asp_error *asp_err = &asp_e;"]
_CLOSE_ERRORS = "if (asp_e.code) *asp_failed = asp_e.code;"


#: Work items per work-group (threads per block) of a reduction's first kernel: the same on
#: every device and for every trip count, so that the tree each work-group reduces its lanes'
#: partial results in, and so the result's bits, are the same on every device. 128: a size
#: every CUDA device runs (up to 1024 threads a block) and OpenCL GPUs and PoCL commonly do
#: (an OpenCL device or kernel that cannot run it is refused: ``device_variants``).
GROUP_SIZE = 128


@dataclass(frozen=True)
class Dialect:
    """What a device language spells its own way."""

    name: str
    kernel: str           # the qualifier of a kernel function
    pointer: str          # the address space of an array parameter
    restrict: str
    bool_array: str       # the element type of a bool array parameter
    bool_scalar: str      # the type of a bool scalar parameter
    local: str            # the qualifier of an array shared by a work-group (a block)
    barrier: str          # a barrier of the work-group, over that memory

    def global_index(self, axis: int) -> str:
        """The thread's index along ``axis`` of the whole grid, as int64."""
        if self.name == "opencl":
            return f"(int64_t)get_global_id({axis})"
        dim = "xyz"[axis]
        return f"((int64_t)blockIdx.{dim} * blockDim.{dim} + threadIdx.{dim})"

    def local_index(self) -> str:
        """The thread's index in its work-group (block), along x, as int64."""
        return "(int64_t)get_local_id(0)" if self.name == "opencl" else "(int64_t)threadIdx.x"

    def group_index(self) -> str:
        """The work-group's (block's) index in the grid, along x, as int64."""
        return "(int64_t)get_group_id(0)" if self.name == "opencl" else "(int64_t)blockIdx.x"

    def kernel_head(self, name: str, group: int | None = None) -> str:
        """A kernel function's declaration up to its parameters; ``group``: the work-group size
        it must be launched with (OpenCL refuses a launch with another; CUDA compiles for it)."""
        if group is None:
            return f"{self.kernel} void {name}"
        if self.name == "opencl":
            return f"{self.kernel} __attribute__((reqd_work_group_size({group}, 1, 1)))\n" \
                f"void {name}"
        return f"{self.kernel}\nvoid __launch_bounds__({group}) {name}"


OPENCL = Dialect("opencl", "__kernel", "__global ", "restrict", "uint8_t", "int32_t",
                 "__local ", "barrier(CLK_LOCAL_MEM_FENCE);")
CUDA = Dialect("cuda", 'extern "C" __global__', "", "__restrict__", "bool", "bool",
               "__shared__ ", "__syncthreads();")
DIALECTS = {"opencl": OPENCL, "cuda": CUDA}

#: NumPy dtypes of the C types that parameters and result fields take.
NUMPY_OF_CTYPE = {"bool": np.bool_, "int8_t": np.int8, "int16_t": np.int16, "int32_t": np.int32,
                  "int64_t": np.int64, "uint8_t": np.uint8, "uint16_t": np.uint16,
                  "uint32_t": np.uint32, "uint64_t": np.uint64, "float": np.float32,
                  "double": np.float64}


@dataclass(frozen=True)
class Kernel:
    """One kernel of a module: its name, the loops on its grid's axes (none: it runs on one
    work item, and writes the result record), and the scalars it reduces (``reduced``: the C
    type each one's partial results are stored in), with ``combine`` for the one-work-item
    kernel that combines the work-groups' partial results of the kernel before it."""

    name: str
    axes: tuple[Axis, ...]
    reduced: tuple[tuple[str, str], ...] = ()
    combine: bool = False
    #: the sequential top-level loop the host runs this kernel in, once per iteration (its
    #: variable passed as an argument), or None
    host_loop: Axis | None = None
    #: the work-group size it must be launched with (0: any, the driver's choice)
    group: int = 0

    @property
    def single(self) -> bool:
        return not self.axes


@dataclass(frozen=True)
class DeviceModule:
    source: str
    dialect: str
    key: str
    kernels: tuple[Kernel, ...]
    arguments: tuple[Argument, ...]     # the nest's data, the same for every kernel
    argument_types: tuple[str, ...]     # their C types (an array's: its element type)
    outputs: tuple[Output, ...]
    out_fields: tuple[tuple[str, str], ...]   # (field, C type) of the result record
    written: tuple[int, ...]            # input positions of the arrays the nest writes
    can_fail: bool
    beyond_int64: bool

    def out_dtype(self) -> np.dtype:
        """The result record as NumPy sees it (C layout: each field at its own alignment)."""
        fields = [(name, NUMPY_OF_CTYPE[c]) for name, c in self.out_fields] or [("unused", np.int32)]
        return np.dtype(fields, align=True)


class DeviceModuleBuilder(CModuleBuilder):
    """Builds the device module of one plan for one call signature in one dialect."""

    on_error = "guard"
    tiles = ""

    def __init__(self, dialect: Dialect, analysis, plan, types, signature, title: str,
                 gpu: bool = True):
        super().__init__(analysis, plan, types, signature, title)
        self.dialect = dialect
        self.variant = dialect.name
        self.expr.wrapping = True
        self.gpu = gpu
        self.layout = DeviceLayout(analysis, plan, types, gpu)
        overlapping = sorted({a for pair in plan.bound.overlapping for a in pair})
        if overlapping:
            raise UnsupportedArgument(
                f"arrays that partly share memory ({', '.join(overlapping)}) cannot run on a "
                "device: each would be copied there on its own")

    def key(self) -> str:
        return stable_key("loopnest-device", self.dialect.name, "gpu" if self.gpu else "cpu",
                          *self.key_parts())

    # -- arrays: C-contiguous copies, in the device's address space ------------------------------

    def accessor(self, name: str) -> str:
        return c_order_accessor(c_identifier(name), self.array_sig(name).ndim)

    def element_ctype(self, name: str) -> str:
        ty = ctype(self.types.arrays[name])
        return self.dialect.bool_array if ty == "bool" else ty

    def device_arguments(self) -> tuple[list[str], list[Argument], list[str]]:
        """(C parameters, how each is made from the inputs, its C type) of the nest's data."""
        params, args, types = [], [], []
        dialect = self.dialect
        for name in self.names.arrays:
            pos = self.positions[name]
            ident = c_identifier(name)
            element = self.element_ctype(name)
            restrict = "" if name in self.aliased else dialect.restrict
            params.append(f"{dialect.pointer}{element} *{restrict} {ident}")
            args.append(Argument("array", pos))
            types.append(element)
            for k in range(self.array_sig(name).ndim):
                params.append(f"int64_t {ident}_n{k}")
                args.append(Argument("shape", pos, k))
                types.append("int64_t")
        scalars = [(name, c_identifier(name)) for name in self.names.invariants] + \
            [(name, "asp_in_" + c_identifier(name)) for name in self.analysis.required]
        for name, ident in scalars:
            ty = ctype(self.types.variables[name])
            passed = dialect.bool_scalar if ty == "bool" else ty
            params.append(f"{passed} {ident}")
            args.append(Argument("scalar", self.positions[name], ctype=passed))
            types.append(passed)
        return params, args, types

    def prologue(self) -> list[str]:
        return [line for line in super().prologue() if "asp_threads" not in line]

    # -- kernels ---------------------------------------------------------------------------------

    def bands(self):
        return self.layout.bands()

    def combination(self, name: str, op: str) -> str | None:
        return self.layout.combination(name, op)

    def identity(self, name: str, op: str) -> str:
        return self.layout.identity(name, op)

    def _walk(self, nodes: tuple, emitter: CEmitter) -> None:
        walk(Schedule(tuple(nodes), self.plan.schedule.statements), self.analysis.nest, emitter)
        self._fallible |= any("asp_err" in line for line in emitter.lines)

    def _grid_kernel(self, name: str, node: SLoop, band, axes) -> tuple[Kernel, list[str]]:
        emitter = CEmitter(self)
        self._walk(_innermost(node, band).body, emitter)
        lines = []
        for a in axes:
            var = c_identifier(a.var)
            lines.append(f"const int64_t asp_g_{var} = {self.dialect.global_index(a.axis)};")
            lines.append(f"if (asp_g_{var} >= asp_n_{var}) return;")
        lines += _OPEN_ERRORS + self.prologue()
        for position, loop in enumerate(band):
            var = c_identifier(loop.var)
            lines.append(f"const int64_t {var} = asp_lo_{var} + asp_g_{var} * asp_step_{var};")
            if self.layout.depends_on(loop, band[:position]):   # a triangle's: its hull runs
                start, stop, _, _ = emitter.bounds(loop)
                lines.append(f"if ({var} < {start} || {var} >= {stop}) return;")
        for alias, var in self._fused_names(node, band):
            lines.append(f"const int64_t {alias} = {var};")
        lines += emitter.lines
        lines.append(_CLOSE_ERRORS)
        return Kernel(name, axes), lines

    def _fused_names(self, node: SLoop, band) -> list[tuple[str, str]]:
        """(name, band variable) of each loop of a sibling fused into ``node``
        (``device_fusion``) whose variable has another name than the band loop it runs as."""
        access = self.analysis.access
        out: dict[str, str] = {}
        for sid in statement_ids(node):
            loops = access.statements[sid].loops
            for loop in band:
                if loop.lid in loops:
                    continue   # (the band's own statement)
                # the sibling's loop at the band loop's depth (fusion matched them so)
                own = self.loops[loops[access.loop(loop.lid).depth - 1]].var
                if own != loop.var:
                    out[c_identifier(own)] = c_identifier(loop.var)
        return list(out.items())

    def _single_kernel(self, name: str, outputs: list[str], nodes: tuple | None = None
                       ) -> tuple[Kernel, list[str]]:
        """One work item running ``nodes`` (default: the whole schedule), then ``outputs``."""
        emitter = CEmitter(self)
        self._walk(self.plan.schedule.root if nodes is None else nodes, emitter)
        lines = [f"if ({self.dialect.global_index(0)} != 0) return;", *_OPEN_ERRORS]
        lines += self.prologue() + emitter.lines + outputs
        lines.append(_CLOSE_ERRORS)
        return Kernel(name, ()), lines

    def _segment_kernel(self, name: str, nodes: tuple) -> tuple[Kernel, list[str]]:
        """Top-level ``nodes`` on one work item, between grid kernels; it stores the live
        scalars it assigns (no other kernel assigns them: ``DeviceLayout._confined``)."""
        _, assigned = self.layout.scalar_uses(nodes)
        outputs = []
        for scalar in self.live:
            if scalar in assigned:
                ident = c_identifier(scalar)
                outputs += [f"asp_out->v_{ident} = {ident};",
                            f"asp_out->w_{ident} = asp_w_{ident};"]
        return self._single_kernel(name, outputs, nodes)

    def build(self) -> DeviceModule:
        key = self.key()
        self._fallible = False
        kernels, bodies = self._kernels(key)
        if self._fallible:
            self.guard_writes, self.error_sites = True, []  # every write after an error skipped
            self.expr.simd_functions.clear()
            kernels, bodies = self._kernels(key)
        params, arguments, types = self.device_arguments()
        fields, epilogue, outputs = self.outputs()
        out_fields = []
        for field in fields:
            ty, ident = field.rsplit(" ", 1)
            out_fields.append((ident, "int32_t" if ty == "bool" else ty))
        failed = f"{self.dialect.pointer}int32_t *asp_failed"
        texts = []
        for kernel, body in zip(kernels, bodies):
            extra = [failed]
            if kernel.single:
                extra.append(f"{self.dialect.pointer}asp_out_t *asp_out")
            for a in kernel.axes:
                var = c_identifier(a.var)
                extra += [f"int64_t asp_lo_{var}", f"int64_t asp_step_{var}",
                          f"int64_t asp_n_{var}"]
            if kernel.host_loop is not None:
                extra.append(f"int64_t {c_identifier(kernel.host_loop.var)}")
            if kernel.reduced:
                extra += ["int64_t asp_groups", "int64_t asp_total"]
                extra += [f"{self.dialect.pointer}{c} *asp_part_{c_identifier(s)}"
                          for s, c in kernel.reduced]
            head = self.dialect.kernel_head(kernel.name, kernel.group or None)
            texts.append((head, params + extra, body))
        source = render("loopnest/device_module.mako", header=f"{self.dialect.name} variant of "
                        f"{self.title}", dialect=self.dialect.name, key=key,
                        accessors=[self.accessor(a) for a in self.names.arrays],
                        out_fields=out_fields, kernels=texts)
        written = {acc.array for st in self.analysis.access.statements for acc in st.accesses
                   if acc.write}
        return DeviceModule(
            source, self.dialect.name, key, tuple(kernels), tuple(arguments), tuple(types),
            tuple(outputs), tuple(out_fields),
            tuple(self.positions[a] for a in self.names.arrays if a in written),
            self._fallible, any(_BEYOND_INT64.search(line) for body in bodies for line in body))

    def _kernels(self, key: str) -> tuple[list[Kernel], list[list[str]]]:
        bands = self.bands()
        kernels, bodies = [], []
        if bands is None:
            _, epilogue, _ = self.outputs()
            outputs = [line.replace("asp_out.", "asp_out->") for line in epilogue]
            kernel, body = self._single_kernel(f"asp_{key[:12]}_0", outputs)
            return [kernel], [body]
        for k, (node, band, host) in enumerate(bands):
            name = f"asp_{key[:12]}_{k}"
            if not band:   # a segment of top-level nodes on one work item
                kernel, body = self._segment_kernel(name, node)
                kernels.append(kernel)
                bodies.append(body)
                continue
            if node.reductions:
                for kernel, body in self._reduction_kernels(name, node, band):
                    kernels.append(kernel)
                    bodies.append(body)
                continue
            kernel, body = self._grid_kernel(name, node, band,
                                             self.layout.axes(band, statement_ids(node)))
            if host is not None:
                kernel = dataclasses.replace(
                    kernel, host_loop=Axis(host.lid, -1, self.loops[host.lid].var))
            kernels.append(kernel)
            bodies.append(body)
        return kernels, bodies

    def _reduction_kernels(self, name: str, node: SLoop, band):
        """A parallel loop that reduces scalars, as two kernels (the number of work-groups,
        ``asp_groups``, a function of the trip count alone: ``device_variants``):

        1. lanes in work-groups of ``GROUP_SIZE``, lane ``k`` (of ``asp_groups * GROUP_SIZE``)
           reducing the band's iterations ``k``, ``k + lanes``, ... in order into its own
           partial result from the operator's identity (a lane past the trip count keeps the
           identity); then each work-group combines its lanes' results in local memory, in a
           tree of ``log2(GROUP_SIZE)`` steps that keeps lane order (step ``d``: lane ``l``, a
           multiple of ``2d``, combines lane ``l + d``'s result into its own), a barrier before
           each step, reached by every lane (no lane returns early); lane 0 stores the
           work-group's result;
        2. one work item combines the work-groups' results, in order, into the scalars' values
           before the loop (``_combine_kernel``).

        The association is fixed by the trip count alone, so the result does not depend on the
        device or its grid; an operator that is associative (a selection, an integer sum)
        gives the lanes' results combined in lane order exactly."""
        reduced = tuple((s, self._stored(s)) for s, _ in node.reductions)
        emitter = CEmitter(self)
        emitter.depth = 1
        self._walk(_innermost(node, band).body, emitter)
        dialect, size = self.dialect, GROUP_SIZE
        assert size & (size - 1) == 0, "the tree needs a power of two"
        lines = [f"const int64_t asp_l = {dialect.local_index()};",
                 f"const int64_t asp_group = {dialect.group_index()};",
                 f"const int64_t asp_lane = asp_group * {size} + asp_l;",
                 f"const int64_t asp_lanes = asp_groups * {size};"]
        lines += [f"{dialect.local}{c} asp_loc_{c_identifier(s)}[{size}];" for s, c in reduced]
        lines += _OPEN_ERRORS + self.prologue()
        lines += [f"{c_identifier(s)} = {self.identity(s, op)};" for s, op in node.reductions]
        lines.append("for (int64_t asp_f = asp_lane; asp_f < asp_total; asp_f += asp_lanes) {")
        lines.append("    int64_t asp_r = asp_f;")
        for loop in reversed(band):
            var = c_identifier(loop.var)
            if loop is band[0]:
                lines.append(f"    const int64_t asp_g_{var} = asp_r;")
            else:
                lines.append(f"    const int64_t asp_g_{var} = asp_r % asp_n_{var};")
                lines.append(f"    asp_r /= asp_n_{var};")
        for loop in band:
            var = c_identifier(loop.var)
            lines.append(f"    const int64_t {var} = asp_lo_{var} + asp_g_{var} * "
                         f"asp_step_{var};")
        lines += emitter.lines
        lines.append("}")
        lines += self._group_tree(node.reductions, size)
        lines.append(_CLOSE_ERRORS)
        axes = tuple(Axis(loop.lid, k, loop.var) for k, loop in enumerate(band))
        first = (Kernel(name, axes, reduced, group=size), lines)
        second = (Kernel(name + "_combine", (), reduced, combine=True),
                  self._combine_kernel(node))
        return [first, second]

    def _group_tree(self, reductions, size: int) -> list[str]:
        """Each lane's results (in the scalars' own variables) combined over its work-group
        of ``size`` lanes in local memory (``asp_loc_*``), in lane order, a barrier before each
        step, which every lane reaches; lane 0 stores the group's in ``asp_part_*``."""
        lines = ["/* the work-group's tree, in lane order; every lane reaches every barrier */"]
        lines += [f"asp_loc_{c_identifier(s)}[asp_l] = {c_identifier(s)};" for s, _ in reductions]
        step = 1
        while step < size:
            last = 2 * step == size
            lines.append(self.dialect.barrier)
            lines.append(f"if ((asp_l & {2 * step - 1}) == 0) {{")
            for s, op in reductions:
                ident = c_identifier(s)
                lines += ["    {",
                          f"        const {ctype(self.types.variables[s])} asp_p = "
                          f"asp_loc_{ident}[asp_l + {step}];",
                          f"        {self.combination(s, op)}", "    }"]
                lines.append(f"    asp_part_{ident}[asp_group] = {ident};" if last
                             else f"    asp_loc_{ident}[asp_l] = {ident};")
            lines.append("}")
            step *= 2
        if size == 1:
            lines += [f"asp_part_{c_identifier(s)}[asp_group] = {c_identifier(s)};"
                      for s, _ in reductions]
        return lines

    def _stored(self, name: str) -> str:
        """The C type a scalar's partial results are stored in (a bool: as the dialect's bool
        arrays are)."""
        ty = ctype(self.types.variables[name])
        return self.dialect.bool_array if ty == "bool" else ty

    def _combine_kernel(self, node: SLoop) -> list[str]:
        """One work item: the scalars' values before the loop, combined with each work-group's
        partial result in group order; the live ones into the result record."""
        live = {o.name for o in self.outputs()[2]}
        lines = [f"if ({self.dialect.global_index(0)} != 0) return;", *_OPEN_ERRORS]
        for s, op in node.reductions:
            ident = c_identifier(s)
            ty = ctype(self.types.variables[s])
            lines += [f"{ty} {ident} = asp_in_{ident};",
                      "for (int64_t asp_k = 0; asp_k < asp_groups; asp_k++) {",
                      f"    const {ty} asp_p = asp_part_{ident}[asp_k];",
                      f"    {self.combination(s, op)}", "}"]
            if s in live:
                lines += [f"asp_out->v_{ident} = {ident};",
                          f"asp_out->w_{ident} = asp_total > 0;"]
        lines.append(_CLOSE_ERRORS)
        return lines


def _innermost(node: SLoop, band) -> SLoop:
    """The schedule node of a band's innermost loop (the band: ``node`` and the loops
    perfectly nested in it)."""
    for _ in band[1:]:
        node = node.body[0]
    return node


def device_module(dialect: str, analysis, plan, types, signature, title: str,
                  gpu: bool = True) -> DeviceModule:
    """The device module of ``plan`` for a call signature in ``dialect`` ("opencl", "cuda"),
    laid out for a GPU or, with ``gpu`` false, a CPU device (``DeviceLayout``)."""
    return DeviceModuleBuilder(DIALECTS[dialect], analysis, plan, types, signature,
                               title, gpu).build()


def launch_grid(kernel: Kernel, plan, t: dict[int, int] | None = None
                ) -> list[tuple[int, int, int]]:
    """(first value, step, trip count) of each of ``kernel``'s mapped loops for the call whose
    binding made ``plan``, in the kernel's axis order; ``t``: the iteration (counted from 0)
    of the host loop around it, on which its bounds may depend (triangular nests)."""
    out = []
    mapped = {a.lid for a in kernel.axes}
    for a in kernel.axes:
        bound = plan.bound.loops[a.lid]
        step = bound.step
        followed = sorted({lid for lid, _ in bound.start.coeffs + bound.extent.coeffs} & mapped)
        if not followed:
            start, extent = _at(bound.start, t), _at(bound.extent, t)
            out.append((start, step, _trips(extent, step)))
            continue
        # a triangle's loop (step 1, ``DeviceLayout.triangle``): the union of its ranges over
        # the corners of the loops it follows (affine bounds: the extremes are at corners)
        ends = []
        for lid in followed:
            other = plan.bound.loops[lid]
            trips = _trips(_at(other.extent, t), other.step)
            ends.append((0, trips - 1) if trips else ())
        firsts, lasts = [], []
        for corner in itertools.product(*ends):
            at = {**(t or {}), **dict(zip(followed, corner))}
            first = _at(bound.start, at)
            firsts.append(first)
            lasts.append(first + _at(bound.extent, at))
        lo = min(firsts, default=0)
        out.append((lo, 1, max(0, max(lasts, default=lo) - lo)))
    return out


def host_loop_range(kernel: Kernel, plan) -> range:
    """The values of ``kernel``'s host loop variable, and so its iterations, for the call."""
    bound = plan.bound.loops[kernel.host_loop.lid]
    trips = _trips(bound.extent.const, bound.step)
    return range(bound.start.const, bound.start.const + trips * bound.step, bound.step)


def _trips(extent: int, step: int) -> int:
    """Iterations of a loop whose extent (in its step's direction) and step these are."""
    return max(0, -(-extent // abs(step)))


def _at(form, t: dict[int, int] | None) -> int:
    return form.const + sum(coeff * (t or {})[lid] for lid, coeff in form.coeffs)

