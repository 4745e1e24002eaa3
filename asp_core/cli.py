"""The ``asp`` command line (also ``python -m asp_core``): calibrate, explain, cache, bench, report.

* ``asp calibrate [--quick] [--show]``: the loop-nest specializer's calibration, the same as
  ``python -m specializers.loopnest calibrate`` (whose functions it runs);
* ``asp explain FILE:CLASS [ARGS]...``: import FILE, make CLASS (a ``LoopKernel``), run it once
  on arguments made from ARGS (``kernel_arguments``) and print its ``explain()`` report;
* ``asp cache info|clear|prune``: the disk cache of ``asp_core.cache`` (its size cap:
  ``asp_core.cache_cap``): where it is, its size by kind of entry and by last use, emptying it,
  pruning it to a size;
* ``asp bench [--quick] [--out DIR] [--only NAMES] [--sizes N,...]``: the twelve examples over a
  sweep of sizes, our variants beside NumPy and Numba (``benchmarks.suite``), into
  ``DIR/bench.json``;
* ``asp report DIR``: its summary, Markdown report and plots (``benchmarks.report``).

``bench`` and ``report`` run the repository's ``benchmarks/`` and ``examples/``, which are not
installed: they need a clone (an editable install, or ``python -m asp_core`` in the clone).

Built on click: ``--help`` on every command, options checked before anything runs. User errors
(a missing file, a bad argument, an unusable cache: ``AspError``) print one line and exit with
status 1 (2 for a bad command line), never a traceback. The specializer is imported only by the
command that needs it.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.util
import logging
import os
import re
import sys
import sysconfig
import time
import traceback
from pathlib import Path
from typing import Any, Sequence

import click

from . import cache as cache_module
from . import cache_cap
from .errors import AspError
from .version import VERSION

_KEYWORD = re.compile(r"([A-Za-z_]\w*)=(.*)", re.DOTALL)
#: Last-use bands of ``cache info``: (upper bound in seconds, label).
_AGES = ((3600, "within an hour"), (86400, "within a day"), (7 * 86400, "within a week"),
         (30 * 86400, "within 30 days"), (float("inf"), "longer ago"))


class Group(click.Group):
    """A command group whose commands' ``AspError`` (a fault of the user's input or of the
    environment) is one line, not a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except AspError as exc:
            raise click.ClickException(str(exc)) from exc


def run(command: click.Command, argv: Sequence[str] | None = None,
        prog_name: str | None = None) -> int:
    """Run ``command`` on ``argv`` (default: ``sys.argv[1:]``); returns the exit status."""
    try:
        command.main(args=None if argv is None else list(argv), prog_name=prog_name,
                     standalone_mode=True)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """The ``asp`` console script: run the command line ``argv``; returns the exit status."""
    return run(cli, argv)


@click.group("asp", cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(VERSION, prog_name="asp-sejits")
@click.option("-v", "--verbose", count=True,
              help="Log to stderr what the specializers do (-v: INFO, -vv: DEBUG); show the "
                   "traceback of an error raised by your code.")
@click.pass_context
def cli(ctx: click.Context, verbose: int) -> None:
    """Tools of asp-sejits, the Selective Embedded JIT Specializer for Python loop nests."""
    ctx.obj = verbose
    if verbose:
        logging.basicConfig(level=logging.DEBUG if verbose > 1 else logging.INFO,
                            format="%(name)s: %(message)s")


# -- calibrate ------------------------------------------------------------------------------------

@cli.command()
@click.option("--quick", is_flag=True,
              help="A quick measurement (about 2 s) instead of the full one (about 15 s).")
@click.option("--show", is_flag=True,
              help="Print the stored parameters (or the defaults in use); measure nothing.")
@click.pass_context
def calibrate(ctx: click.Context, quick: bool, show: bool) -> None:
    """Measure this machine's cost-model parameters and store them.

    Measures interpreter and compiled operation times, call overheads, memory bandwidth,
    OpenMP costs and compile time, prints them and stores them in the cache folder, where every
    later run finds them; then those of each device backend (OpenCL, CUDA) whose package is
    installed and that has a device here.
    """
    from specializers.loopnest.__main__ import run_calibration

    ctx.exit(run_calibration(quick=quick, show=show))


# -- explain --------------------------------------------------------------------------------------

@cli.command(context_settings={"ignore_unknown_options": True})
@click.argument("target", metavar="FILE:CLASS")
@click.argument("args", nargs=-1, metavar="[ARGS]...")
@click.option("--inputs", "inputs_name", metavar="FUNCTION",
              help="The function of FILE that makes the kernel's arguments (default: "
                   "make_inputs, where FILE has one).")
@click.option("--no-inputs", is_flag=True,
              help="ARGS are the kernel's own arguments, even where FILE has make_inputs.")
@click.option("-n", "--size", type=click.IntRange(min=0), metavar="N",
              help="Short for the argument n=N of the inputs function.")
@click.option("--init", "init_args", multiple=True, metavar="NAME=VALUE",
              help="A keyword argument of CLASS(...) (repeat for more).")
@click.option("--backend", metavar="NAME",
              help="Run on this backend: python, c, openmp, opencl, cuda, ... (default: the "
                   "cost model's choice, or ASP_BACKEND).")
@click.option("--strict", is_flag=True,
              help="Fail instead of falling back to plain Python.")
@click.pass_context
def explain(ctx: click.Context, target: str, args: tuple[str, ...], inputs_name: str | None,
            no_inputs: bool, size: int | None, init_args: tuple[str, ...],
            backend: str | None, strict: bool) -> None:
    """Explain what the specializer does with a kernel.

    Imports FILE, makes CLASS (a LoopKernel subclass defined or imported there), runs it once
    on copies of its arguments and prints its explain() report: loop nests, dependences,
    schedule, predicted costs and the variant that ran.

    The arguments come from an inputs function of FILE: --inputs FUNCTION, else make_inputs
    where FILE has one (as each of the examples does). ARGS are then that function's
    arguments, each a Python literal or NAME=LITERAL, and it returns the tuple of the kernel's
    arguments (or a dict of keyword arguments).

    Without an inputs function (or with --no-inputs), ARGS are the kernel's own arguments: each
    a Python literal or NAME=LITERAL, a list literal becoming a NumPy array.

    \b
    Examples:
      asp explain examples/gemm.py:Gemm --size 16
      asp explain examples/conv2d.py:Conv2D n=32 k=3
      asp explain saxpy.py:Saxpy 2.0 "[1.0, 2.0, 3.0]" "[0.0, 0.0, 0.0]"
    """
    for arg in args:
        if arg.startswith("--"):
            raise click.UsageError(f"no such option: {arg}")
    file, _, class_name = target.rpartition(":")
    if not file or not class_name:
        raise click.BadParameter(f"{target!r} is not FILE:CLASS", param_hint="FILE:CLASS")
    given = _literals(args, "ARGS")
    init_positional, init = _literals(init_args, "--init")
    if init_positional:
        raise click.BadParameter("give NAME=VALUE", param_hint="--init")
    verbose = ctx.obj or 0
    module = _user_code(f"importing {file}", verbose, _import_file, Path(file))
    kernel_class = _kernel_class(module, class_name, file)
    options = dict(init, **({"backend": backend} if backend else {}),
                   **({"strict": True} if strict else {}))
    kernel = _user_code(f"making {class_name}()", verbose, kernel_class, **options)
    inputs = None if no_inputs else _inputs_function(module, inputs_name, file)
    positional, keywords = kernel_arguments(given, inputs, size, verbose)
    report = _user_code(f"running {class_name}.kernel", verbose, kernel.explain, *positional,
                        **keywords)
    click.echo(str(report))


def kernel_arguments(given: tuple[list[Any], dict[str, Any]], inputs, size: int | None,
                     verbose: int = 0) -> tuple[list[Any], dict[str, Any]]:
    """The kernel's positional and keyword arguments: what ``inputs(*given, n=size)`` returns
    (a tuple, or a dict of keyword arguments), or with no inputs function the ``given``
    values themselves, list literals as NumPy arrays."""
    positional, keywords = given
    if inputs is None:
        if size is not None:
            raise click.UsageError("--size needs an inputs function: the file has no "
                                   "make_inputs (name one with --inputs)")
        return ([_as_array(value) for value in positional],
                {name: _as_array(value) for name, value in keywords.items()})
    if size is not None:
        keywords = {"n": size, **keywords}
    made = _user_code(f"calling {inputs.__name__}()", verbose, inputs, *positional, **keywords)
    if isinstance(made, dict):
        return [], made
    if isinstance(made, (tuple, list)):
        return list(made), {}
    raise click.ClickException(f"{inputs.__name__}() returned a {type(made).__name__}; it "
                               "must return the tuple of the kernel's arguments (or a dict of "
                               "keyword arguments)")


def _literals(args: Sequence[str], hint: str) -> tuple[list[Any], dict[str, Any]]:
    """Positional and keyword values of ``args``, each a Python literal or NAME=LITERAL."""
    positional, keywords = [], {}
    for arg in args:
        match = _KEYWORD.fullmatch(arg)
        name, text = (match.group(1), match.group(2)) if match else (None, arg)
        try:
            value = ast.literal_eval(text.strip())
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            raise click.BadParameter(f"{text!r} is not a Python literal (a number, a list, a "
                                     "quoted string...)", param_hint=hint) from None
        if name is None:
            positional.append(value)
        else:
            keywords[name] = value
    return positional, keywords


def _as_array(value: Any) -> Any:
    """A list literal as a NumPy array (the kernel's own arguments); anything else as given."""
    if isinstance(value, list):
        import numpy as np

        return np.asarray(value)
    return value


def _user_code(what: str, verbose: int, func, *args: Any, **kwargs: Any) -> Any:
    """``func(*args, **kwargs)``, code of the user's: what it raises becomes one line naming the
    exception and the innermost place in the user's files (the traceback with ``-v``)."""
    try:
        return func(*args, **kwargs)
    except (click.ClickException, click.exceptions.Exit, KeyboardInterrupt):
        raise
    except Exception as exc:  # reported, not hidden: the user's code may raise anything
        if verbose:
            traceback.print_exc()
        where = _user_frame(exc)
        raise click.ClickException(f"{what} raised {type(exc).__name__}: {exc}"
                                   + (f" ({where})" if where else "")) from exc


def _user_frame(exc: BaseException) -> str | None:
    """``file:line`` of the innermost frame of ``exc`` in the user's files: outside this
    project's packages, the standard library and installed packages (else outside ours)."""
    if isinstance(exc, SyntaxError) and exc.filename:
        return f"{exc.filename}:{exc.lineno}"
    here = Path(__file__).resolve()
    ours = (str(here.parent), str(here.parents[1] / "specializers"), "<")
    libraries = tuple({sysconfig.get_paths()[k] for k in ("stdlib", "purelib", "platlib")})
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not f.filename.startswith(ours)]
    users = [f for f in frames if os.path.isabs(f.filename)  # (Cython's are not)
             and not f.filename.startswith(libraries)] or frames
    return f"{users[-1].filename}:{users[-1].lineno}" if users else None


def _import_file(path: Path):
    """Import the Python file ``path``: as a module of its package where it lies in one (so
    its imports of the package work), else alone with its folder first on ``sys.path``, as
    ``python FILE`` has it."""
    if not path.is_file():
        raise click.BadParameter(f"no such file: {path}", param_hint="FILE:CLASS")
    path = path.resolve()
    root, parts = path.parent, [path.stem]
    while (root / "__init__.py").is_file():
        root, parts = root.parent, [root.name, *parts]
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    name = ".".join(parts)
    if len(parts) > 1 and _is_file(importlib.import_module(name), path):
        return sys.modules[name]
    if name in sys.modules:  # a module of that name: this file already, or another one
        if _is_file(sys.modules[name], path):
            return sys.modules[name]
        name = f"_asp_explain_{path.stem}_{hashlib.sha256(bytes(path)).hexdigest()[:12]}"
        if name in sys.modules:
            return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # (classes find their source through it)
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _is_file(module, path: Path) -> bool:
    return Path(getattr(module, "__file__", None) or "").resolve() == path


def _kernel_class(module, name: str, file: str) -> type:
    """The ``LoopKernel`` subclass ``name`` (dotted for a nested class) of ``module``."""
    from specializers.loopnest import LoopKernel

    found: Any = module
    for part in name.split("."):
        found = getattr(found, part, None)
    if isinstance(found, type) and issubclass(found, LoopKernel) and found is not LoopKernel:
        return found
    kernels = sorted(n for n, v in vars(module).items()
                     if isinstance(v, type) and issubclass(v, LoopKernel) and v is not LoopKernel)
    what = f"{file} has no class {name}" if found is None else \
        f"{name} of {file} is not a LoopKernel subclass"
    raise click.BadParameter(f"{what}; its LoopKernel classes: {', '.join(kernels) or 'none'}",
                             param_hint="FILE:CLASS")


def _inputs_function(module, name: str | None, file: str):
    """The inputs function named by ``--inputs``, else ``make_inputs`` if any, else None."""
    func = getattr(module, name or "make_inputs", None)
    if name is not None and not callable(func):
        raise click.BadParameter(f"{file} has no function {name}", param_hint="--inputs")
    return func if callable(func) else None


# -- bench and report -----------------------------------------------------------------------------

def _from_clone(name: str, command: str):
    """Import ``benchmarks.NAME`` from the clone this package lies in (or the current folder);
    one line, not a traceback, where there is none."""
    for root in (Path(__file__).resolve().parents[1], Path.cwd()):
        if (root / "benchmarks" / f"{name}.py").is_file() and (root / "examples").is_dir():
            if str(root) not in sys.path:
                sys.path.insert(0, str(root))
            module = importlib.import_module(f"benchmarks.{name}")
            if Path(module.__file__).resolve().parents[1] == root:
                return module
    raise click.ClickException(f"asp {command} needs a clone of the asp-sejits repository (its "
                               "benchmarks/ and examples/ folders are not installed): install "
                               "it with pip install -e . from a clone, or run it in the clone")


def _names(values: Sequence[str]) -> list[str]:
    """Values of a repeatable option, each also a comma-separated list."""
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


@cli.command()
@click.option("--quick", is_flag=True,
              help="Three sizes per example, two rounds, fewer first calls: under three "
                   "minutes on a 2-core machine.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default="asp-bench",
              show_default=True, metavar="DIR",
              help="The folder of the result, DIR/bench.json (one there is replaced, and the "
                   "files of its report removed).")
@click.option("--only", multiple=True, metavar="NAMES",
              help="Examples to run, comma-separated or repeated (default: all twelve).")
@click.option("--sizes", multiple=True, metavar="N,...",
              help="The sizes n of every example run, comma-separated or repeated (default: "
                   "each example's own sweep).")
@click.option("--no-calibration", is_flag=True,
              help="Do not calibrate a machine that has no calibration (the cost model then "
                   "runs on its defaults).")
def bench(quick: bool, out: Path, only: tuple[str, ...], sizes: tuple[str, ...],
          no_calibration: bool) -> None:
    """Time the examples: our variants, NumPy, Numba and the cost model's choice.

    For each of the twelve examples (examples/) over a sweep of sizes: warm calls of CPython
    (the original code, at the sizes where it takes under a cap), serial C, OpenMP at each
    thread count, OpenCL where a device answers, the example's NumPy formulation, Numba @njit
    and @njit(parallel=True) with prange (the bench extra; skipped with a note without it),
    and the default kernel, whose variant the cost model picks. Then first calls in new
    processes with an empty cache, split into analysis, compile and run. A progress bar shows
    on a terminal; one line per point is printed.

    Writes DIR/bench.json (its format: benchmarks/suite.py); asp report DIR makes the
    summary and the plots. Needs a clone of the repository.
    """
    suite = _from_clone("suite", "bench")
    names = _names(only)
    unknown = [name for name in names if name not in suite.example_names()]
    if unknown:
        raise click.BadParameter(f"no example {', '.join(unknown)}; the examples: "
                                 f"{', '.join(suite.example_names())}", param_hint="--only")
    try:
        numbers = [int(text) for text in _names(sizes)]
    except ValueError:
        raise click.BadParameter("give whole numbers, e.g. 64,128", param_hint="--sizes") \
            from None
    if any(n < 1 for n in numbers):
        raise click.BadParameter("sizes are at least 1", param_hint="--sizes")
    argv = ["bench", *(["--quick"] if quick else []), "--out", str(out),
            *(["--only", ",".join(names)] if names else []),
            *(["--sizes", ",".join(map(str, numbers))] if numbers else []),
            *(["--no-calibration"] if no_calibration else [])]
    started = time.perf_counter()
    path = suite.run(quick=quick, only=names, sizes=sorted(set(numbers)), out=out,
                     calibrate=not no_calibration, argv=argv)
    click.echo(f"written: {path} ({time.perf_counter() - started:.0f} s); next: asp report "
               f"{out}")


@cli.command()
@click.argument("folder", metavar="DIR", type=click.Path(file_okay=False, path_type=Path))
def report(folder: Path) -> None:
    """Summarize a bench result: JSON, Markdown and PNG plots.

    Reads DIR/bench.json (written by asp bench) and writes beside it summary.json (speedups
    over CPython, NumPy and Numba, the chosen variant, the misprediction penalty), report.md
    (the same in tables, and the first calls split into analysis, compile and run), and the
    plots: times.png (time against size per variant, the model's choice marked),
    penalty.png (the penalty per example and size) and first-call.png. Needs matplotlib
    (the bench extra) and a clone of the repository.
    """
    module = _from_clone("report", "report")
    if importlib.util.find_spec("matplotlib") is None:
        raise click.ClickException("asp report draws its plots with matplotlib, which is not "
                                   "installed: pip install -e .[bench]")
    try:
        written = module.write(folder)
    except module.ReportError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo("written: " + ", ".join(str(path) for path in written))


# -- cache ----------------------------------------------------------------------------------------

@cli.group(cls=Group)
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), metavar="DIR",
              help="The cache folder (default: ASP_CACHE_DIR, else the user cache folder, "
                   "e.g. ~/.cache/asp-sejits).")
@click.pass_context
def cache(ctx: click.Context, cache_dir: Path | None) -> None:
    """The disk cache of compiled variants: where, how big, emptying and pruning it.

    The cache keeps itself under a cap, ASP_CACHE_MAX_BYTES (a size such as 500M or 2G;
    0: no cap), by default 1 GiB: a build that takes it past the cap removes the least
    recently used entries down to 3/4 of the cap. Entries that a process is building or
    loading, or used in the last minute, are never removed.
    """
    from .config import current

    folder = cache_dir.expanduser() if cache_dir is not None else current().cache_dir
    ctx.obj = cache_module.disk_cache(folder)


@cache.command()
@click.pass_context
def info(ctx: click.Context) -> None:
    """Where the cache is, its size, and its entries by kind and by last use."""
    disk: cache_module.DiskCache = ctx.obj
    folder_from = ("--cache-dir" if ctx.parent.params["cache_dir"] is not None else
                   "ASP_CACHE_DIR" if os.environ.get("ASP_CACHE_DIR", "").strip() else
                   "the user cache folder; ASP_CACHE_DIR sets another")
    cap = cache_cap.max_bytes()
    cap_from = ("ASP_CACHE_MAX_BYTES" if os.environ.get("ASP_CACHE_MAX_BYTES", "").strip()
                else "the default; ASP_CACHE_MAX_BYTES sets another")
    click.echo(f"cache folder: {disk.root} ({folder_from})")
    click.echo(f"size cap:     {_size(cap) if cap is not None else 'none'} ({cap_from})")
    if not disk.root.is_dir():
        click.echo("entries:      none (the folder does not exist yet)")
        return
    entries = disk.entries()
    click.echo(f"entries:      {len(entries)}, {_size(sum(e.size for e in entries))}")
    now = time.time()
    if entries:
        kinds: dict[str, list[cache_cap.EntryInfo]] = {}
        for entry in entries:
            kinds.setdefault(entry_kind(entry), []).append(entry)
        click.echo("\nby kind                                   entries        size   last used")
        for kind, group in sorted(kinds.items(), key=lambda kv: -sum(e.size for e in kv[1])):
            click.echo(f"  {kind:38s} {len(group):8d} {_size(sum(e.size for e in group)):>11s}"
                       f"   {_ago(now - group[-1].last_used)}")
        click.echo("\nby last use                               entries        size")
        bands: dict[str, list[cache_cap.EntryInfo]] = {label: [] for _, label in _AGES}
        for entry in entries:
            bands[next(label for bound, label in _AGES if now - entry.last_used < bound)] \
                .append(entry)
        for label, group in bands.items():
            if group:
                click.echo(f"  {label:38s} {len(group):8d} "
                           f"{_size(sum(e.size for e in group)):>11s}")
    others = [(name, path) for name, path in (("calibration", disk.root / "calibration"),
                                              ("sources of failed builds", disk.root / "failed"),
                                              ("unfinished builds", disk.root / "tmp"))
              if path.is_dir() and any(path.iterdir())]
    if others:
        click.echo("\nbesides the entries (not pruned; clear removes the failed sources):")
        for name, path in others:
            click.echo(f"  {name:38s} {len(list(path.iterdir())):8d} "
                       f"{_size(cache_cap.tree_bytes(path)):>11s}")


@cache.command()
@click.pass_obj
def clear(disk: cache_module.DiskCache) -> None:
    """Remove every entry, and the sources kept from failed builds.

    Entries that another process is building or verifying right now are kept (and said);
    the stored calibration is kept too.
    """
    pruned = disk.prune(0, idle_s=0)
    failed = disk.root / "failed"
    sources = [p for p in failed.iterdir() if p.is_file() or p.is_symlink()] \
        if failed.is_dir() and not failed.is_symlink() else []
    for path in sources:
        path.unlink(missing_ok=True)
    click.echo(f"removed {len(pruned.removed)} entries "
               f"({_size(sum(e.size for e in pruned.removed))}) and {len(sources)} failed "
               f"sources from {disk.root}")
    if pruned.kept:
        click.echo(f"kept {len(pruned.kept)} entries in use by another process")


@cache.command()
@click.option("--max-size", "limit", metavar="SIZE",
              help="Bring the entries down to SIZE: bytes, or with K, M, G (powers of 1024), "
                   "e.g. 500M (default: the cap).")
@click.pass_obj
def prune(disk: cache_module.DiskCache, limit: str | None) -> None:
    """Remove the least recently used entries until the cache fits a size.

    Entries that a process is building or loading, or used in the last minute, are kept.
    """
    if limit is None:
        size = cache_cap.max_bytes()
        if size is None:
            raise click.UsageError("ASP_CACHE_MAX_BYTES sets no cap: give --max-size")
    else:
        try:
            size = cache_cap.parse_size(limit)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--max-size") from None
    pruned = disk.prune(size)
    click.echo(f"removed {len(pruned.removed)} entries "
               f"({_size(sum(e.size for e in pruned.removed))}), least recently used first; "
               f"{_size(pruned.total)} left (cap {_size(size)})")
    if pruned.kept:
        click.echo(f"kept {len(pruned.kept)} entries in use or used in the last "
                   f"{cache_cap.PRUNE_GRACE_S:.0f} s")


def entry_kind(entry: cache_cap.EntryInfo) -> str:
    """What a cache entry holds, from the files its manifest lists (and the header of a
    generated C source, which names its variant)."""
    files = set(entry.files)
    if not files:
        return "damaged (no readable manifest)"
    if {"probe.c", "result.json"} <= files:
        return "OpenMP probe"
    libraries = sorted(name[:-3] for name in files if name.endswith(".so"))
    if libraries:
        variant = _variant_of(entry.path / f"{libraries[0]}.c")
        return f"{variant} variant" if variant else f"C library ({', '.join(libraries)})"
    if any(name.endswith((".cubin", ".ptx", ".fatbin")) for name in files):
        return "CUDA binary"
    named = {"template.py": "compiled Mako template", "version.txt": "compiler version",
             "compiled": "loop-nest variant index"}
    if len(files) == 1 and (name := next(iter(files))) in named:
        return named[name]
    return "other (" + ", ".join(sorted(files)[:3]) + ")"


def _variant_of(source: Path) -> str | None:
    """The ``variant:`` that the header of generated C names, if it has one."""
    try:
        with open(source, "rb") as f:
            head = f.read(512).decode("utf-8", "replace")
    except OSError:
        return None
    match = re.search(r"^ \* variant: (\S+)", head, re.MULTILINE)
    return match.group(1) if match else None


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def _ago(seconds: float) -> str:
    for size, unit in ((86400, "days"), (3600, "h"), (60, "min")):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit} ago"
    return f"{max(seconds, 0):.0f} s ago"
