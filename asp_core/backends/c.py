"""C backend: compiler discovery, OpenMP probe, shared-library build and cffi loading.

Compiler discovery goes through codepy: its guessed toolchain is the C++ compiler Python was
built with, so we keep codepy's toolchain object but point it at a C compiler (``ASP_CC``,
``$CC`` or ``gcc``) with our own flags. The toolchain is made only to build: loading a cached
library needs the compiler's version line for the key, kept on disk per compiler binary.
Generated code is C11 built with ``-fwrapv`` (signed integer overflow wraps, as NumPy's
fixed-width integers do), ``-ffp-contract=off`` (no fused multiply-add: results round as
Python's), ``-fno-math-errno`` and ``-fno-trapping-math`` (nothing reads ``errno`` or the
floating-point exception flags, so the compiler may compute a value before the branch that
uses it, which is what lets it vectorize conditional code; values do not change).

codepy's own ``build_extension`` prints compiler errors to the terminal instead of returning
them, so we run the command line ourselves and put the compiler's output in ``CompileError``.

Libraries are loaded with cffi in ABI mode (``ffi.dlopen``): no Python headers are needed. The
cdef comes from the C function signature and is stored pre-parsed next to the library (cffi's
out-of-line ABI mode), so a cached load does not import cffi's C parser. Array parameters are
``void *`` on the Python side and receive a NumPy array's buffer without a copy
(``array_pointer``).

Cache keys name the target as well as the compiler: the machine's architecture always, and
with a ``native`` flag (``-march=native``) the CPU model and feature flags
(``asp_core.platform.cpu_identity``), so a cache shared by two machines never gives one the
other's instructions. Only files listed in a verified manifest are loaded; a library that
verifies but does not load here (``dlopen`` fails: built for another machine, a cache on a
``noexec`` mount) is rebuilt once, and if it still does not load the call falls back
(``CacheError`` naming the library and the loader's message).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from .. import platform as asp_platform
from ..cache import DiskCache, check_entry_file, disk_cache, stable_key, verified_bytes
from ..config import DEFAULT_CFLAGS
from ..errors import BackendUnavailable, CacheError, CompileError, SourceLocation

log = logging.getLogger("asp.c")

# Flags that fix the meaning of generated code; optimization flags are configurable on top.
SEMANTIC_FLAGS = {
    "c": ("-std=gnu11", "-fPIC", "-fwrapv", "-fno-math-errno", "-fno-trapping-math",
          "-ffp-contract=off"),
    "c++": ("-x", "c++", "-std=gnu++17", "-fPIC", "-fwrapv", "-fno-math-errno",
            "-fno-trapping-math", "-ffp-contract=off"),
}


@dataclass(frozen=True, eq=False)
class CCompiler:
    """A compiler, its version line (for cache keys) and its flags.

    Compared by identity: ``find_c_compiler`` returns one object per setting. The codepy
    toolchain that composes the command line is made only when something is built, so that
    loading a cached library never imports codepy or runs the compiler.
    """

    cc: str
    version: str
    cflags: tuple[str, ...]
    language: str = "c"

    def abi_id(self) -> tuple:
        """What identifies the machine code this compiler produces (for cache keys): the
        compiler, its flags, and the target (see ``target_identity``)."""
        return (self.cc, self.version, self.cflags, self.language,
                target_identity(self.cflags))

    @functools.cached_property
    def toolchain(self) -> Any:
        """codepy's toolchain for this compiler (its guess, pointed at our compiler and flags)."""
        from codepy.toolchain import GCCToolchain, ToolchainGuessError, guess_toolchain

        fields = dict(cc=self.cc, ld=self.cc, cflags=list(self.cflags), ldflags=["-shared"],
                      libraries=["m"], include_dirs=[], library_dirs=[], defines=[],
                      undefines=[], features=set())
        try:
            # Keep codepy's idea of the platform (file suffixes); replace the C++ compiler it
            # guessed, and Python's own build flags, which a cffi-loaded library does not need.
            return dataclasses.replace(guess_toolchain(), **fields)
        except ToolchainGuessError:
            return GCCToolchain(so_ext=".so", o_ext=".o", **fields)

    def command(self, sources: Sequence[str], output: str, extra: Sequence[str] = ()) -> list[str]:
        """The command line that builds ``sources`` into the shared library ``output``."""
        tc = self.toolchain
        return ([tc.cc, *tc.cflags, *extra, *tc.ldflags]
                + [f"-D{d}" for d in tc.defines]
                + [f"-I{d}" for d in tc.include_dirs]
                + list(sources) + ["-o", output]
                + [f"-L{d}" for d in tc.library_dirs]
                + [f"-l{lib}" for lib in tc.libraries])


def target_identity(cflags: Sequence[str]) -> tuple:
    """The machine the code is built for: with a ``native`` flag (``-march=native``,
    ``-mcpu=native``) this CPU's model and feature flags, else its architecture."""
    cpu = asp_platform.cpu_identity()
    if any(flag.endswith("=native") for flag in cflags):
        return ("cpu", cpu.machine, _digest(cpu))
    return ("machine", cpu.machine)


@functools.lru_cache(maxsize=8)
def _digest(cpu: asp_platform.CpuIdentity) -> str:
    # repr of strings and tuples of strings is canonical, and ten times quicker than
    # stable_key's text for a hundred flags
    return hashlib.sha256(repr(cpu).encode("utf-8")).hexdigest()


@functools.lru_cache(maxsize=None)
def find_c_compiler(cc: str | None = None, cflags: tuple[str, ...] = DEFAULT_CFLAGS,
                    language: str = "c") -> CCompiler:
    """A compiler for ``language`` ("c" or "c++") with ``cflags`` for optimization.

    Raises ``BackendUnavailable`` if the compiler is missing.
    """
    name = cc or ("gcc" if language == "c" else "g++")
    path = shutil.which(name)
    if path is None:
        raise BackendUnavailable(f"no C compiler: '{name}' is not on PATH (set ASP_CC or CC)")
    return CCompiler(cc=path, version=compiler_version(path),
                     cflags=(*SEMANTIC_FLAGS[language], *cflags), language=language)


def compiler_version(path: str) -> str:
    """The first line of ``path --version``, remembered on disk per compiler binary.

    The binary's real path, size and modification time identify it, so a new process needs no
    compiler run to name the compiler in a cache key, and an upgraded compiler is asked again.
    """
    real = os.path.realpath(path)
    st = os.stat(real)
    cache = disk_cache(_config_cache_dir())
    key = stable_key("compiler-version", real, st.st_size, st.st_mtime_ns,
                     asp_platform.cpu_identity().machine)

    def build(folder: Path) -> None:
        try:
            proc = subprocess.run([path, "--version"], capture_output=True, text=True, check=True)
            version = proc.stdout.splitlines()[0]
        except (OSError, subprocess.CalledProcessError, IndexError) as exc:
            raise BackendUnavailable(f"compiler '{path}' does not answer --version: {exc}") from exc
        (folder / "version.txt").write_text(version)

    return verified_bytes(cache.entry(key, build, f"the version of {path}"),
                          "version.txt").decode()


def default_compiler() -> CCompiler:
    from ..config import current

    cfg = current()
    return find_c_compiler(cfg.cc, cfg.cflags)


def run_compiler(command: list[str], source_path: Path, what: str) -> None:
    """Run a compiler command; raise ``CompileError`` with its output if it fails."""
    try:
        proc = subprocess.run(command, capture_output=True, text=True)
    except OSError as exc:
        raise BackendUnavailable(f"cannot run {command[0]}: {exc}") from exc
    if proc.returncode != 0:
        output = (proc.stdout + proc.stderr).strip()
        raise CompileError(f"{what} failed (exit status {proc.returncode})",
                           _first_error_location(output, source_path),
                           command=tuple(command), output=output)


def _first_error_location(output: str, source_path: Path) -> SourceLocation:
    """Where the first error is, in gcc's (file:line:col: error) or nvcc's (file(line): error) form."""
    patterns = (r"^(?P<file>[^:\n]+):(?P<line>\d+):(?:(?P<col>\d+):)? (?:fatal )?error",
                r"^(?P<file>[^(\n]+)\((?P<line>\d+)\): (?:catastrophic )?error")
    for pattern in patterns:
        match = re.search(pattern, output, re.M)
        if match:
            col = match.groupdict().get("col")
            return SourceLocation(match["file"], int(match["line"]), int(col or 0))
    return SourceLocation(str(source_path), 0)


_OPENMP_PROBE = """\
#include <omp.h>
int asp_openmp_probe(void) {
    int n = 0;
    #pragma omp parallel reduction(+:n)
    n += 1;
    return n + omp_get_max_threads() * 0;
}
"""


def openmp_flags(compiler: CCompiler | None = None, cache: DiskCache | None = None
                 ) -> tuple[str, ...] | None:
    """The flags that enable OpenMP with this compiler, or None if it has no OpenMP.

    Probed once per compiler and remembered on disk, so a new process does not compile again.
    """
    compiler = compiler or default_compiler()
    cache = cache or disk_cache(_config_cache_dir())
    return _openmp_flags(compiler, cache)


@functools.lru_cache(maxsize=None)
def _openmp_flags(compiler: CCompiler, cache: DiskCache) -> tuple[str, ...] | None:
    flags = ("-fopenmp",)
    key = stable_key("openmp-probe", compiler.abi_id(), flags)

    def build(folder: Path) -> None:
        src = folder / "probe.c"
        src.write_text(_OPENMP_PROBE)
        try:
            run_compiler(compiler.command([str(src)], str(folder / "probe.so"), flags), src,
                         "OpenMP probe")
            ok = _probe_runs(folder / "probe.so")  # compiling is not enough: libgomp must load
        except CompileError:
            ok = False
        (folder / "result.json").write_text(json.dumps({"openmp": ok}))

    result = json.loads(verified_bytes(cache.entry(key, build, "the OpenMP probe"),
                                       "result.json"))
    return flags if result["openmp"] else None


def _probe_runs(path: Path) -> bool:
    import cffi

    ffi = cffi.FFI()
    ffi.cdef("int asp_openmp_probe(void);")
    try:
        return _dlopen(ffi, path).asp_openmp_probe() >= 1
    except OSError:
        return False


def _dlopen(ffi: Any, path: Path) -> Any:
    """``ffi.dlopen`` with ``RTLD_NODELETE``: the library stays mapped until the process ends.

    cffi calls ``dlclose`` when a library object is garbage-collected (its documentation says
    to keep the object alive; cairocffi#79 is the same trap). An OpenMP library that is
    unloaded can take libgomp with it while libgomp's worker threads still spin in its code:
    the OpenMP probe, whose library object lived for one call, segfaulted at random (about one
    process in five here, at exit). Never unloading also makes ``clear_loaded`` safe.
    """
    return ffi.dlopen(str(path), ffi.RTLD_NOW | ffi.RTLD_NODELETE)


def _config_cache_dir() -> Path | None:
    from ..config import current

    return current().cache_dir


def build_shared_library(source: str, *, name: str = "module", cdef: str | None = None,
                         compiler: CCompiler | None = None, openmp: bool = False,
                         cache: DiskCache | None = None,
                         speedups: Sequence[str] = ()) -> Path:
    """Compile C ``source`` into a shared library, once per (source, cdef, compiler, flags,
    target machine).

    With ``cdef``, the entry also holds a pre-parsed cffi declaration module
    (``<name>_ffi.py``, cffi's out-of-line ABI mode), so loading needs no C parser.
    ``speedups``: compiler flags that change how fast the library builds, never what it is
    (``precompiled_prelude``), so not part of the key.
    """
    cache = cache or disk_cache(_config_cache_dir())
    key, build = _library_build(source, name, cdef, compiler, openmp, cache, speedups)
    return cache.entry(key, build) / f"{name}.so"


def precompiled_prelude(headers: Sequence[str], compiler: CCompiler,
                        cache: DiskCache | None = None) -> tuple[str, ...]:
    """The flags (``-include``) that give a source the system ``headers`` from a header GCC
    precompiled once for ``compiler`` and its flags (into the disk cache); () for another
    compiler, or where it cannot be built. For sources that include those headers first
    themselves: parsing them is then skipped (C++'s ``<cmath>`` and ``<algorithm>`` were half
    the 0.3 s of compiling an emulated CUDA module), and the result is the same (GCC uses the
    precompiled header only where the flags match, else reads the text, which is the same)."""
    said = f"{os.path.basename(compiler.cc)} {compiler.version}".lower()
    if "clang" in said or not ("gcc" in said or "g++" in said):   # GCC's .gch only
        return ()
    cache = cache or disk_cache(_config_cache_dir())
    text = "".join(f"#include <{h}>\n" for h in headers)
    key = stable_key("precompiled-prelude", text, compiler.abi_id())
    kind = "c++-header" if compiler.language == "c++" else "c-header"

    def build(folder: Path) -> None:
        header = folder / "prelude.h"
        header.write_text(text)
        tc = compiler.toolchain
        flags = list(tc.cflags)
        while "-x" in flags:   # (GCC 12 links, not precompiles, after "-x c++ ... -x c++-header")
            at = flags.index("-x")
            del flags[at:at + 2]
        run_compiler([tc.cc, *flags, *[f"-D{d}" for d in tc.defines], "-x", kind,
                      str(header), "-o", str(folder / "prelude.h.gch")], header,
                     "precompiling prelude.h")

    try:
        folder = cache.entry(key, build, what="a precompiled prelude")
    except (CompileError, CacheError) as exc:   # slower, not wrong: compile without it
        log.debug("no precompiled prelude: %s", exc)
        return ()
    return ("-include", str(folder / "prelude.h"))


def _library_build(source: str, name: str, cdef: str | None, compiler: CCompiler | None,
                   openmp: bool, cache: DiskCache, speedups: Sequence[str] = ()):
    """The cache key of a shared library and the function that builds its entry."""
    compiler = compiler or default_compiler()
    extra: tuple[str, ...] = ()
    if openmp:
        flags = openmp_flags(compiler, cache)
        if flags is None:
            raise BackendUnavailable(f"{compiler.cc} ({compiler.version}) has no OpenMP support")
        extra = flags
    key = stable_key("c-shared-library", source, name, cdef, compiler.abi_id(), extra)

    def build(folder: Path) -> None:
        src = folder / f"{name}.c"
        src.write_text(source)
        try:
            run_compiler(compiler.command([str(src)], str(folder / f"{name}.so"),
                                          (*extra, *speedups)), src, f"compiling {name}.c")
        except CompileError as exc:
            try:
                kept = cache.keep_failed(key, src.name, source)
            except CacheError as keep_error:  # the compiler's error is what matters
                log.warning("cannot keep the failed source %s: %s", src.name, keep_error)
                raise exc from None
            raise relocate_error(exc, src, kept) from None
        if cdef is not None:
            _emit_ffi_module(cdef, folder / f"{name}_ffi.py")

    return key, build


def _emit_ffi_module(cdef: str, path: Path) -> None:
    import cffi
    from cffi.recompiler import make_py_source

    ffi = cffi.FFI()
    ffi.cdef(cdef)
    ffi.set_source(path.stem, None)
    make_py_source(ffi, path.stem, str(path))


def relocate_error(error: CompileError, old: Path, new: Path) -> CompileError:
    """The same error, pointing at the kept copy of a source built in a temporary folder."""
    loc = error.location
    if loc is not None and loc.file == str(old):
        loc = SourceLocation(str(new), loc.line, loc.col)
    return CompileError(error.message, loc, command=error.command,
                        output=error.output.replace(str(old), str(new)))


@dataclass(eq=False)
class CModule:
    """A loaded shared library and the cffi objects to call into it."""

    path: Path
    ffi: Any
    lib: Any

    def function(self, name: str):
        return getattr(self.lib, name)


_LOADED: dict[tuple[str, str], CModule] = {}


class LibraryLoadError(CacheError):
    """A cached library verified against its manifest but ``dlopen`` refused it (built for
    another machine, a cache folder mounted ``noexec``, a missing dependency)."""


def load_library(path: Path, cdef: str) -> CModule:
    """``dlopen`` a shared library of a cache entry with cffi, declaring ``cdef`` (memoized
    per path and cdef).

    The library, and the pre-parsed declaration module next to it when there is one, are
    loaded only if the entry's manifest lists them and they match it; ``CacheError``
    otherwise, and when ``dlopen`` fails (``LibraryLoadError``).
    """
    memo_key = (str(path), cdef)
    module = _LOADED.get(memo_key)
    if module is None:
        path = Path(path)
        check_entry_file(path.parent, path.name)
        ffi = _load_ffi_module(path.parent, path.stem + "_ffi.py")
        if ffi is None:
            import cffi

            ffi = cffi.FFI()
            ffi.cdef(cdef)
        try:
            lib = _dlopen(ffi, path)
        except OSError as exc:
            raise LibraryLoadError(f"cannot load {path} on this machine: {exc}") from exc
        module = CModule(path=path, ffi=ffi, lib=lib)
        _LOADED[memo_key] = module
    return module


def _load_ffi_module(entry: Path, name: str) -> Any:
    """The ``ffi`` object of the declaration module ``name`` of ``entry``, if listed there:
    its verified bytes are executed, never a file the manifest does not list."""
    data = verified_bytes(entry, name, optional=True)
    if data is None:
        return None
    path = entry / name
    module = types.ModuleType(f"asp_ffi_{entry.name[:16]}")
    module.__file__ = str(path)
    exec(compile(data, str(path), "exec"), module.__dict__)
    return module.ffi


def initialized() -> bool:
    """Whether this process has loaded a compiled module already (the first load pays for
    cffi's modules and the code generation's: ``cost.first_use`` of the loop-nest
    specializer)."""
    return bool(_LOADED)


def compile_c(source: str, cdef: str, *, name: str = "module", openmp: bool = False,
              compiler: CCompiler | None = None, cache: DiskCache | None = None,
              what: str | None = None) -> CModule:
    """Build (or find in the cache) and load a C module in one step.

    A cached library that does not load (``dlopen`` refuses it, or it changed since it was
    verified) is rebuilt once; ``CacheError`` if it still does not load.
    """
    cache = cache or disk_cache(_config_cache_dir())
    key, build = _library_build(source, name, cdef, compiler, openmp, cache)
    entry = cache.entry(key, build, what)
    if openmp:  # before libgomp is first loaded (it reads its settings then)
        from ..openmp_runtime import set_wait_policy

        set_wait_policy()
    try:
        module = load_library(entry / f"{name}.so", cdef)
    except CacheError as exc:
        log.warning("rebuilding %s: %s", entry, exc)
        entry = cache.replace(key, build)
        try:
            module = load_library(entry / f"{name}.so", cdef)
        except CacheError as exc:
            raise CacheError(f"{exc} (also after rebuilding it)") from exc
    if openmp:  # a process that forks after running it must not leave its child hanging
        from .. import forking

        forking.watch_openmp()  # (after the load: it looks the OpenMP runtime up)
    return module


def clear_loaded() -> None:
    """Forget loaded modules (the libraries themselves stay mapped until the process ends)."""
    _LOADED.clear()


def cdef_from_signature(name: str, params: Sequence[tuple[str, str]], restype: str = "void") -> str:
    """A cffi declaration: pointer parameters become ``void *`` so arrays pass without casts.

    >>> cdef_from_signature("f", [("double * restrict", "a"), ("int64_t", "n")], "int")
    'int f(void * a, int64_t n);'
    """
    parts = []
    for ctype, pname in params:
        parts.append(f"void * {pname}" if "*" in ctype else f"{ctype} {pname}")
    return f"{restype} {name}({', '.join(parts) or 'void'});"


def array_pointer(ffi: Any, array: Any) -> Any:
    """A pointer to ``array``'s first element, without copying.

    C-contiguous arrays go through the buffer protocol (``ffi.from_buffer``, fast); any other
    layout passes its data address, and the generated code must then use the array's strides.
    """
    if array.flags.c_contiguous:
        return ffi.from_buffer(array)
    return ffi.cast("void *", array.ctypes.data)
