"""Front end: from a Python function (or method, nested function, lambda) to its AST.

``function_ast(func)`` returns a ``FunctionAST``: the ``ast.FunctionDef`` (or ``ast.Lambda``) of
the function with line and column numbers that point into the user's file, the file name, and
the function object itself. ``free_variables(func)`` returns the values of the globals and
closure variables that the body reads, looked up when called (they may change between calls).

A function defined with ``def`` is found in the parse of its whole file (from ``linecache``,
which also holds the cells of Jupyter/IPython), by its name and first line: any source Python
itself accepts parses, comment lines at column 0 inside the body included, and nothing is
tokenized twice (``inspect.getsourcelines`` costs a first call 8 ms of tokenizer set-up).
Lambdas, and functions whose file no longer matches the code, go through ``inspect``.

Runs once per function; results are kept in a named cache (``clear_cache()``).
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import functools
import inspect
import linecache
import textwrap
import types
from dataclasses import dataclass
from typing import Any, Callable

from .errors import SourceLocation, UnsupportedConstruct


@dataclass(frozen=True, eq=False)
class FunctionAST:
    """The parsed source of one function."""

    func: types.FunctionType
    tree: ast.FunctionDef | ast.Lambda
    filename: str
    source: str

    @property
    def name(self) -> str:
        return self.func.__name__

    @property
    def qualname(self) -> str:
        return self.func.__qualname__

    def location(self, node: ast.AST | None = None) -> SourceLocation:
        """Where ``node`` (default: the function itself) is in the user's file."""
        node = node if node is not None else self.tree
        return SourceLocation(self.filename, getattr(node, "lineno", 0),
                              getattr(node, "col_offset", 0))

    def parameters(self) -> list[str]:
        """Names of the positional parameters, in order (``self`` included for methods)."""
        args = self.tree.args
        return [a.arg for a in args.posonlyargs + args.args]


def unwrap_function(func: Callable) -> types.FunctionType:
    """The plain function behind a bound method, staticmethod, classmethod or functools wrapper."""
    seen = set()
    while True:
        if id(func) in seen:
            break
        seen.add(id(func))
        if isinstance(func, (staticmethod, classmethod)):
            func = func.__func__
        elif isinstance(func, types.MethodType):
            func = func.__func__
        elif isinstance(func, functools.partial):
            raise UnsupportedConstruct("functools.partial objects cannot be specialized",
                                       construct="partial")
        elif hasattr(func, "__wrapped__"):
            func = func.__wrapped__
        else:
            break
    if not isinstance(func, types.FunctionType):
        raise UnsupportedConstruct(f"{func!r} is not a Python function", construct="callable")
    return func


# Keyed by the identity of the code object: code objects compare equal across files (CPython
# leaves co_filename out of code equality), so equal kernels in two modules must not share.
# The value keeps the code object alive, so its id is not reused.
_AST_CACHE: dict[int, tuple[types.CodeType, FunctionAST]] = {}


def clear_cache() -> None:
    """Forget every parsed function (e.g. after editing source in a notebook)."""
    _AST_CACHE.clear()
    _parse_file.cache_clear()


def function_ast(func: Callable) -> FunctionAST:
    """Parse ``func``'s source into an AST whose positions point into the user's file."""
    func = unwrap_function(func)
    entry = _AST_CACHE.get(id(func.__code__))
    if entry is not None:
        cached = entry[1]
        # Closures made by one ``def`` share the code object, hence the (read-only) tree.
        return cached if cached.func is func else dataclasses.replace(cached, func=func)
    result = _parse(func)
    _AST_CACHE[id(func.__code__)] = (func.__code__, result)
    return result


def _parse(func: types.FunctionType) -> FunctionAST:
    filename = inspect.getsourcefile(func) or func.__code__.co_filename
    if func.__name__ != "<lambda>":
        found = _definition_in_file(func, filename)
        if found is not None:
            return FunctionAST(func=func, tree=found[0], filename=filename, source=found[1])
    try:
        lines, first_line = inspect.getsourcelines(func)
    except (OSError, TypeError) as exc:
        raise UnsupportedConstruct(
            f"the source of {func.__qualname__} is not available ({exc})",
            SourceLocation(filename, func.__code__.co_firstlineno), construct="source") from exc
    raw = "".join(lines)
    source = textwrap.dedent(raw)
    indent = _common_indent(raw, source)
    want_lambda = func.__name__ == "<lambda>"
    try:
        module = ast.parse(source)
    except SyntaxError:
        if not want_lambda:
            raise
        # A lambda in the middle of a multi-line expression: parse from the lambda on.
        module = ast.parse(_lambda_fragment(source))
    tree = _find_definition(module, func, want_lambda)
    if tree is None:
        raise UnsupportedConstruct(
            f"could not find the definition of {func.__qualname__} in its source",
            SourceLocation(filename, first_line), construct="source")
    ast.increment_lineno(tree, first_line - 1)
    if indent:
        for node in ast.walk(tree):
            if hasattr(node, "col_offset"):
                node.col_offset += indent
                if getattr(node, "end_col_offset", None) is not None:
                    node.end_col_offset += indent
    return FunctionAST(func=func, tree=tree, filename=filename, source=source)


def _definition_in_file(func: types.FunctionType, filename: str
                        ) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, str] | None:
    """The definition of ``func`` in the parse of its whole file (a copy: the parse is shared
    by the file's functions) and its text, or None where the file's text does not hold
    exactly one definition of that name starting at the code's first line."""
    lines = linecache.getlines(filename, func.__globals__)
    if not lines:
        return None
    module = _parse_file(filename, "".join(lines))
    if module is None:
        return None
    first = func.__code__.co_firstlineno
    matching = [node for node in ast.walk(module)
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                and node.name == func.__name__
                and min([node.lineno] + [d.lineno for d in node.decorator_list]) == first]
    if len(matching) != 1:
        return None
    node = matching[0]
    text = textwrap.dedent("".join(lines[first - 1:node.end_lineno]))
    return copy_ast(node), text


@functools.lru_cache(maxsize=16)
def _parse_file(filename: str, text: str) -> ast.Module | None:
    """The parse of a file's text (None if it does not parse: edited since it was run)."""
    try:
        return ast.parse(text, filename)
    except (SyntaxError, ValueError):
        return None


def _common_indent(raw: str, dedented: str) -> int:
    for r, d in zip(raw.splitlines(), dedented.splitlines()):
        if d.strip():
            return len(r) - len(d)
    return 0


def _lambda_fragment(source: str) -> str:
    start = source.find("lambda")
    return "(" + source[start:].rstrip().rstrip(",)") + ")"


def _find_definition(module: ast.Module, func: types.FunctionType, want_lambda: bool):
    if want_lambda:
        lambdas = [n for n in ast.walk(module) if isinstance(n, ast.Lambda)]
        nargs = func.__code__.co_argcount
        matching = [n for n in lambdas if len(n.args.args) == nargs]
        if len(matching) != 1:
            return None
        return matching[0]
    for node in ast.walk(module):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == func.__name__:
            return node
    return None


def ast_depth(tree: ast.AST) -> tuple[int, ast.AST]:
    """The depth of the deepest node of ``tree`` (``tree`` itself: 1) and that node; counted
    without recursion, so that it works on trees too deep for recursive passes (a sum of
    2000 terms is a tree 2000 levels deep). Specializers refuse such trees before any
    recursive pass (``UnsupportedConstruct``), rather than meet a ``RecursionError``."""
    deepest, where = 1, tree   # ``where``: the deepest node with a position in the source
    stack = [(tree, 1, tree)]
    while stack:
        node, depth, placed = stack.pop()
        if hasattr(node, "lineno"):
            placed = node
        if depth > deepest:
            deepest, where = depth, placed
        stack.extend((child, depth + 1, placed) for child in ast.iter_child_nodes(node))
    return deepest, where


def copy_ast(tree: ast.AST) -> ast.AST:
    """A deep copy of a Python AST, made without recursion (``copy.deepcopy`` recurses a few
    frames per level and fails on deep expressions that Python itself compiles)."""
    def shallow(node: ast.AST) -> ast.AST:
        new = type(node).__new__(type(node))
        new.__dict__.update(node.__dict__)
        return new

    root = shallow(tree)
    stack = [root]
    while stack:
        node = stack.pop()
        for name, value in ast.iter_fields(node):
            if isinstance(value, ast.AST):
                child = shallow(value)
                setattr(node, name, child)
                stack.append(child)
            elif isinstance(value, list):
                items = [shallow(v) if isinstance(v, ast.AST) else v for v in value]
                setattr(node, name, items)
                stack.extend(v for v in items if isinstance(v, ast.AST))
    return root


def fix_missing_locations(tree: ast.AST) -> ast.AST:
    """``ast.fix_missing_locations`` without recursion (the standard one recurses per level):
    nodes without a position take their parent's."""
    fields = ("lineno", "col_offset", "end_lineno", "end_col_offset")
    stack = [(tree, (1, 0, 1, 0))]
    while stack:
        node, inherited = stack.pop()
        if "lineno" in node._attributes:
            position = []
            for name, default in zip(fields, inherited):
                value = getattr(node, name, None)
                if value is None:
                    setattr(node, name, default)
                    value = default
                position.append(value)
            inherited = tuple(position)
        stack.extend((child, inherited) for child in ast.iter_child_nodes(node))
    return tree


def names_read(tree: ast.AST) -> set[str]:
    """Every name loaded anywhere in ``tree``."""
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def local_names(tree: ast.FunctionDef | ast.Lambda) -> set[str]:
    """Parameters and names bound in the body (the function's locals)."""
    args = tree.args
    params = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
    params += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
    bound = set(params)
    body = tree.body if isinstance(tree.body, list) else [tree.body]
    declared_outside: set[str] = set()
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                bound.add(node.id)
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                declared_outside.update(node.names)
            elif isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
                bound.add(node.name)
            elif isinstance(node, ast.alias):
                bound.add((node.asname or node.name).split(".")[0])
    return bound - declared_outside


_MISSING = object()


def free_variables(func: Callable, fa: FunctionAST | None = None) -> dict[str, Any]:
    """Values of the globals, closure variables and builtins the function body reads.

    Names that are bound nowhere (a NameError waiting to happen) are left out.
    """
    func = unwrap_function(func)
    fa = fa or function_ast(func)
    wanted = names_read(fa.tree) - local_names(fa.tree)
    closure = {}
    if func.__closure__:
        for name, cell in zip(func.__code__.co_freevars, func.__closure__):
            try:
                closure[name] = cell.cell_contents
            except ValueError:  # empty cell: variable not yet assigned in the enclosing scope
                pass
    result = {}
    for name in sorted(wanted):
        for scope in (closure, func.__globals__, vars(builtins)):
            value = scope.get(name, _MISSING)
            if value is not _MISSING:
                result[name] = value
                break
    return result
