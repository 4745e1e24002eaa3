"""Compiled variants of a nest: build (or load from the disk cache) and call.

``compile_variant`` generates the C (or OpenMP C) module of a plan for a call signature,
builds it through ``asp_core.backends.c`` (cached on disk by its source, compiler and flags)
and returns a ``CompiledVariant``: a callable taking the nest's inputs and returning the
values it leaves in the kernel's scalars, as the plain-Python executor does. After native code
ran it raises the Python exception the error record names. A variant that does not run the
nest in source order first tries the iteration corners (``safety``): where they show an
IndexError Python will raise, it raises it without running native code (``rollback`` then
runs the call in source order, which raises it where Python does).

The Python side of a call is one generated function (``asp_core.pysource.returning``) that
passes each array's buffer, extents and strides and each scalar.
"""

from __future__ import annotations

import itertools
from typing import Any



from asp_core.backends.c import array_pointer, compile_c
from asp_core.pysource import returning

from .codegen.c import CModule, CModuleBuilder
from .codegen.finals import UNCHANGED, finals_function
from .codegen.openmp import OpenMPModuleBuilder
from .rewrite import NO_VALUE
from .safety import corner_index_error
from .typeinfer import Ty

_IDS = itertools.count()
_FIT_DTYPES = ("int8", "int16", "int32", "uint8", "uint16", "uint32")


def generate(backend: str, analysis, plan, types, signature, title: str,
             threads: int = 1, tiled: bool = True) -> CModule:
    """The C module of ``plan``; ``threads``: how many threads an OpenMP variant expects;
    ``tiled``: whether serial C may tile its bands (``schedule.tiling``; not where it must
    run the plan's instances in the plan's order)."""
    if backend == "openmp":
        return OpenMPModuleBuilder(analysis, plan, types, signature, title, threads).build()
    return CModuleBuilder(analysis, plan, types, signature, title, tiled).build()


def compile_variant(backend: str, analysis, plan, types, signature, title: str,
                    threads: int | None, tiled: bool = True) -> "CompiledVariant":
    from asp_core.platform import cpu_cores

    from .rollback import in_source_order

    module = generate(backend, analysis, plan, types, signature, title, threads or cpu_cores(),
                      tiled)
    loaded = compile_c(module.source, module.cdef, name="nest", openmp=module.openmp,
                       what=f"the {backend} variant of {title}")
    # (a tiled band runs blocks of the plan's order: never its order, instance for instance)
    in_order = in_source_order(plan.schedule, analysis.sequential) and not module.tiles and \
        not module.packs and \
        (backend == "c" or not plan.parallel)
    return CompiledVariant(module, loaded, analysis, plan, threads or 0, in_order, signature)


class CompiledVariant:
    """A compiled nest, called with the nest's inputs. ``in_order``: it runs the statement
    instances in Python's order, so an error stops it where Python stops."""

    def __init__(self, module: CModule, loaded, analysis, plan, threads: int, in_order: bool,
                 signature=None):
        self.module = module
        self.analysis = analysis
        self.plan = plan
        self.in_order = in_order
        self._call = _call_function(module, loaded, threads, signature)
        self._index_error = None if in_order else _corner_check(analysis, plan)
        self._results = NestResults(analysis, module.outputs)
        self._loaded, self._threads = loaded, threads
        self._native = None   # the native call, once the extension is loaded (``_native_call``)
        self._read = None   # its result record, read (``NestResults.reader``)
        self._native_tries = -NATIVE_AFTER
        # what a call without outputs returns (None where loop variables are computed)
        self._nothing = None if module.outputs or self._results._finals is not None else \
            (NO_VALUE,) * len(analysis.names.outputs)

    def __call__(self, *inputs: Any) -> tuple:
        if self._index_error is not None:
            error = self._index_error(inputs)
            if error is not None:  # before any native write (``rollback`` reruns the call)
                raise error
        native = self._native
        if native is None and self._native_tries < NATIVE_TRIES:
            native = self._native_call()
        if native is not None:
            record = native(inputs)
            if record is None:  # no error, and no outputs
                nothing = self._nothing   # (``()`` where the nest has no outputs)
                return nothing if nothing is not None else self._results(inputs, None)
            if self._read is not None:
                outputs = self._read(inputs, record)   # (None: the record holds an error)
                if outputs is not None:
                    return outputs
            out = self._loaded.ffi.from_buffer(self._record_type, record)
        else:
            out = self._call(inputs)
        if out.err.code:
            raise python_error(out.err, self.module)
        return self._results(inputs, lambda field: getattr(out, field))

    def warming_up(self) -> bool:
        """Whether a native call may still be made (``_native_call``): the calls until then
        go through cffi, several microseconds more than they will cost."""
        return self._native is None and self._native_tries < NATIVE_TRIES

    def _native_call(self):
        """The native call of this variant (``asp_core.call_guard.make_caller``), or None:
        before ``NATIVE_AFTER`` calls, not made yet (the extension loads in the background:
        asked again on every later call while it loads, whatever the count; after that up to
        ``NATIVE_TRIES`` times), or not possible (an argument of a type it does not pass)."""
        from asp_core import call_guard

        self._native_tries += 1
        if self._native_tries <= 0:   # a short run need not load (or build) the extension...
            if not call_guard.loaded():
                return None
            self._native_tries = 1    # ...but once it is loaded, every variant uses it at once
        if call_guard.loading():   # (milliseconds: hundreds of warm calls) not a refusal
            self._native_tries -= 1
            return None
        plan = native_plan(self.module, self._threads)
        if plan is None or not self.module.packed:
            self._native_tries = NATIVE_TRIES
            return None
        ffi = self._loaded.ffi
        entry = self._loaded.function(self.module.entry)
        record = ffi.typeof(entry).result
        self._record_type = ffi.typeof(ffi.getctype(record, "*"))
        address = int(ffi.cast("uintptr_t", self._loaded.function(self.module.packed)))
        self._native = call_guard.make_caller(
            address, plan, len(self.analysis.names.inputs), ffi.sizeof(record),
            bool(self.module.outputs))
        if self._native is not None:
            self._native_tries = NATIVE_TRIES
            self._read = self._results.reader(record)
        return self._native


class NestResults:
    """The values a compiled nest leaves in the kernel's scalars, from its result record
    (``field(name)`` reads one field): a scalar the nest assigned, else its value before the
    nest (or ``NO_VALUE`` where the kernel does not read it after), and the final values of
    the loop variables the kernel reads afterwards (computed in Python)."""

    def __init__(self, analysis, outputs):
        names = analysis.names
        by_name = {o.name: o for o in outputs}
        self._outputs = [(i, by_name.get(name)) for i, name in enumerate(names.outputs)]
        self._first_output = len(names.inputs) - len(names.outputs)
        live = analysis.live_loop_vars
        self._finals = finals_function(analysis.nest, names.inputs, live) if live else None
        self._final_positions = [names.outputs.index(v) for v in live]
        self._convert = {o.name: _converter(o.result) for o in outputs}

    def __call__(self, inputs: tuple, field) -> tuple:
        results = []
        for position, output in self._outputs:
            if output is not None and field(output.flag):
                results.append(self._convert[output.name](field(output.field)))
            elif output is not None:
                results.append(inputs[self._first_output + position])  # never assigned
            else:
                results.append(NO_VALUE)  # not read after the nest
        if self._finals is not None:
            for position, value in zip(self._final_positions, self._finals(*inputs)):
                results[position] = inputs[self._first_output + position] \
                    if value is UNCHANGED else value
        return tuple(results)

    def reader(self, record):
        """``read(inputs, record)``: what this makes of a native call's result record (its
        bytes; ``record``: its cffi type), None where the record holds an error: one generated
        function that unpacks the error code and each output's value and flag in one
        ``struct`` call, then makes each output in one expression. None where a field has a
        type without a struct code or loop variables' final values are computed (``__call__``
        reads those)."""
        import struct

        if self._finals is not None:
            return None
        fields = dict(record.fields)
        code_field = dict(fields["err"].type.fields)["code"]
        wanted = [("code", fields["err"].offset + code_field.offset, code_field.type.cname)]
        for _, output in self._outputs:
            for name in (output.field, output.flag) if output is not None else ():
                wanted.append((name, fields[name].offset, fields[name].type.cname))
        if any(cname not in _STRUCT_CODES for _, _, cname in wanted):
            return None
        layout, at, order = "=", 0, []
        for name, offset, cname in sorted(wanted, key=lambda w: w[1]):
            layout += "x" * (offset - at) + _STRUCT_CODES[cname]
            at = offset + struct.calcsize("=" + _STRUCT_CODES[cname])
            order.append(name)
        slot = {name: f"f{k}" for k, name in enumerate(order)}
        codes = {name: _STRUCT_CODES[cname] for name, _, cname in wanted}
        namespace: dict[str, Any] = {"NO_VALUE": NO_VALUE,
                                     "unpack": struct.Struct(layout).unpack_from}
        items = []
        for position, output in self._outputs:
            if output is None:
                items.append("NO_VALUE")
                continue
            convert = self._convert[output.name]
            value = slot[output.field]
            if _UNPACKS_TO[codes[output.field]] is not convert:
                namespace[f"c{position}"] = convert
                value = f"c{position}({value})"
            items.append(f"{value} if {slot[output.flag]} else "
                         f"inputs[{self._first_output + position}]")
        name = f"read_{next(_IDS)}"
        source = "\n".join([f"def {name}(inputs, record):",
                            f"    {', '.join(slot.values())}, = unpack(record)",
                            f"    if {slot['code']}:",
                            "        return None",
                            f"    return ({''.join(item + ', ' for item in items)})", ""])
        exec(compile(source, f"<asp {name}>", "exec"), namespace)  # noqa: S102
        return namespace[name]


def _corner_check(analysis, plan):
    """A function of the inputs raising the corners' IndexError (computed once: the values
    it depends on are the binding's), or None when every subscript is proven in range."""
    from .analysis.binding import CHECKED

    if not any(CHECKED in acc.modes and any(r is not None for r in acc.raw)
               for accs in plan.bound.accesses.values() for acc in accs):
        return None
    shapes = dict(zip(analysis.names.arrays, plan.bound.key.shapes))
    error = corner_index_error(analysis, plan, shapes)
    return (lambda inputs: error) if error is not None else None


#: The struct module's code of each C type a result record's fields have.
_STRUCT_CODES = {"double": "d", "float": "f", "int64_t": "q", "int32_t": "i", "int16_t": "h",
                 "int8_t": "b", "uint64_t": "Q", "uint32_t": "I", "uint16_t": "H",
                 "uint8_t": "B", "_Bool": "?"}
#: ...and the Python type it unpacks to, where that is the value's weak type already.
_UNPACKS_TO = {"d": float, "f": float, "q": int, "i": int, "h": int, "b": int, "Q": int,
               "I": int, "H": int, "B": int, "?": bool}


def _converter(ty: Ty):
    if ty.weak:
        return {"b": bool, "i": int, "f": float}[ty.kind]
    return ty.dtype.type


#: Calls of a variant before it asks for its native call (whose first use in a process may
#: build the extension: a script of a few calls never does; where another variant loaded it,
#: at once: a variant's first calls through cffi took 13 us where its native call takes 1, and
#: the cost model, measuring a rarely probed variant only on those calls, kept it 35 times
#: slower than it is), and calls that ask while the extension is not loaded yet.
NATIVE_AFTER = 64
NATIVE_TRIES = 64

#: The C integer types a native call passes, and their ranges.
_INT_RANGES = {"int64_t": (-2**63, 2**63 - 1), "int32_t": (-2**31, 2**31 - 1),
               "int16_t": (-2**15, 2**15 - 1), "int8_t": (-2**7, 2**7 - 1),
               "uint32_t": (0, 2**32 - 1), "uint16_t": (0, 2**16 - 1), "uint8_t": (0, 2**8 - 1)}


def native_plan(module: CModule, threads: int) -> tuple | None:
    """How a native call fills the slots of ``module``'s packed entry point: what
    ``_call_function`` passes, argument for argument (None: an argument it cannot pass)."""
    from asp_core import call_guard as cg

    plan = []
    for arg in module.arguments:
        if arg.kind == "array":
            plan.append((cg.ARRAY_DATA, arg.position))
        elif arg.kind == "shape":
            plan.append((cg.SHAPE, arg.position, arg.dim))
        elif arg.kind == "stride":
            plan.append((cg.STRIDE, arg.position, arg.dim))
        elif arg.kind == "scalar" and arg.ctype in ("double", "float"):
            plan.append((cg.REAL, arg.position))
        elif arg.kind == "scalar" and arg.ctype == "bool":
            plan.append((cg.TRUTH, arg.position))
        elif arg.kind == "scalar" and arg.ctype in _INT_RANGES:
            plan.append((cg.INTEGER, arg.position, *_INT_RANGES[arg.ctype]))
        elif arg.kind == "threads":
            plan.append((cg.CONSTANT, int(threads)))
        else:
            return None
    return tuple(plan)


def _call_function(module: CModule, loaded, threads: int, signature=None):
    """A generated Python function passing the inputs to the C entry point. The variant runs
    only calls of its ``signature``: an array it takes C-contiguous passes its buffer as is."""
    items = []
    for arg in module.arguments:
        if arg.kind == "array" and signature is not None and \
                signature[arg.position].layout == "C":
            items.append(f"buffer(inputs[{arg.position}])")
        elif arg.kind == "array":
            items.append(f"ap(ffi, inputs[{arg.position}])")
        elif arg.kind == "shape":
            items.append(f"inputs[{arg.position}].shape[{arg.dim}]")
        elif arg.kind == "stride":
            items.append(f"inputs[{arg.position}].strides[{arg.dim}]")
        elif arg.kind == "scalar":
            cast = "float" if arg.ctype in ("double", "float") else \
                "bool" if arg.ctype == "bool" else "int"
            items.append(f"{cast}(inputs[{arg.position}])")
        else:
            items.append(str(int(threads)))
    name = f"call_{next(_IDS)}"
    source = returning(name, ("inputs",), items, "entry")
    namespace: dict[str, Any] = {"ap": array_pointer, "ffi": loaded.ffi,
                                 "buffer": loaded.ffi.from_buffer,
                                 "entry": loaded.function(module.entry)}
    exec(compile(source, f"<asp {name}>", "exec"), namespace)  # noqa: S102
    function = namespace[name]
    function.__asp_source__ = source
    return function


BEYOND_INT64_MESSAGE = ("a Python int left the 64-bit range in compiled code (plain Python "
                        "would have computed a larger int); run this kernel with "
                        "backend='python' for arbitrary-precision integers")


class BeyondInt64(OverflowError):
    """A Python int the compiled code computes left the 64-bit range, where plain Python would
    have gone on with a larger int: not an error of the user's code, but a call compiled code
    cannot run. The default choice reruns such a call as the original code (``runtime``); a
    forced backend or ``strict=True`` raises this."""


class CopyFailed(MemoryError):
    """The transposed copy of an array a variant reads (``schedule.packing``) could not be
    allocated, before the nest wrote anything: not an error of the user's code. The call
    runs again without copies (``runtime``)."""


def python_error(err, module: CModule) -> Exception:
    """The Python exception an error record stands for."""
    code = err.code
    if code == 1:
        site = module.error_sites[err.where]
        return IndexError(f"index {err.value} is out of bounds for axis {site.dim} with size "
                          f"{err.extent}: {site.subscript} (line {site.line})")
    if code == 2:
        return ZeroDivisionError("division by zero")
    if code == 3:
        return ValueError("math domain error")
    if code == 4:
        return OverflowError("math range error")
    if code == 5:
        return BeyondInt64(BEYOND_INT64_MESSAGE)
    if code == 6:
        # Plain Python would go on with a complex number, which compiled code does not
        # hold; nearly every use of it (storing it in a real array, comparing it, passing it
        # to math) raises TypeError in Python, so that is what this raises too.
        return TypeError("a power of a negative float to a fractional exponent: plain Python "
                         "would compute a complex number, which compiled code does not support; "
                         "run this kernel with backend='python' to work with complex values")
    if code == 7:
        return ValueError("cannot convert float NaN to integer")
    if code == 8:
        return OverflowError("cannot convert float infinity to integer")
    if code == 9:
        return OverflowError(f"Python integer {err.value} out of bounds for "
                             f"{_FIT_DTYPES[err.where]}")
    if code == 10:
        return CopyFailed(f"no memory for a transposed copy of a {err.value} x {err.extent} "
                          "array")
    return RuntimeError(f"compiled loop nest reported error code {code}")



