"""frontend: functions, methods, nested functions and lambdas -> AST with true positions."""

import ast
import inspect
import math

import pytest

from asp_core import frontend
from asp_core.errors import UnsupportedConstruct

SCALE = 3.0


def module_function(a, b):
    return a * SCALE + math.sqrt(b)


class Holder:
    def method(self, x):
        y = x + 1
        return y * SCALE

    @staticmethod
    def static(x):
        return -x


def make_closure(k):
    offset = 10

    def inner(x):
        return x * k + offset
    return inner


def test_module_function_positions_point_into_this_file():
    fa = frontend.function_ast(module_function)
    assert isinstance(fa.tree, ast.FunctionDef) and fa.name == "module_function"
    assert fa.filename == __file__
    line = inspect.getsourcelines(module_function)[1]
    assert fa.tree.lineno == line
    ret = fa.tree.body[0]
    assert ret.lineno == line + 1 and ret.col_offset == 4
    assert fa.location(ret).line == line + 1


def test_method_is_dedented_and_keeps_columns():
    fa = frontend.function_ast(Holder().method)  # bound method
    assert fa.parameters() == ["self", "x"]
    first = fa.tree.body[0]
    assert first.col_offset == 8  # as in the file, not after dedent
    src_line = open(__file__).read().splitlines()[first.lineno - 1]
    assert src_line[first.col_offset:].startswith("y = x + 1")


def test_staticmethod_and_nested_function():
    assert frontend.function_ast(Holder.__dict__["static"]).name == "static"
    inner = make_closure(2)
    fa = frontend.function_ast(inner)
    assert fa.name == "inner"
    assert frontend.free_variables(inner) == {"k": 2, "offset": 10}


def test_lambda():
    f = lambda u, v: u + v * 2  # noqa: E731
    fa = frontend.function_ast(f)
    assert isinstance(fa.tree, ast.Lambda) and fa.parameters() == ["u", "v"]
    assert fa.tree.lineno == inspect.getsourcelines(f)[1]


def test_free_variables_reads_globals_and_builtins_at_call_time():
    free = frontend.free_variables(module_function)
    assert free == {"SCALE": 3.0, "math": math}


def test_closures_sharing_code_share_the_tree_but_not_the_function():
    f, g = make_closure(1), make_closure(5)
    fa, ga = frontend.function_ast(f), frontend.function_ast(g)
    assert fa.tree is ga.tree and fa.func is f and ga.func is g
    assert frontend.free_variables(g)["k"] == 5


def test_source_not_available_is_unsupported():
    namespace = {}
    exec("def generated(x):\n    return x\n", namespace)
    with pytest.raises(UnsupportedConstruct, match="source"):
        frontend.function_ast(namespace["generated"])


def test_not_a_function():
    with pytest.raises(UnsupportedConstruct):
        frontend.function_ast(len)


def test_local_names():
    tree = ast.parse("def f(a, *r, k=1):\n    x = 1\n    for i in range(3): pass\n"
                     "    global g\n    g = 2\n").body[0]
    assert frontend.local_names(tree) == {"a", "r", "k", "x", "i"}


def test_equal_functions_in_two_files_keep_their_own_file(tmp_path):
    """Code objects compare equal across files; the cache must not mix them up."""
    import importlib.util

    funcs = []
    for name in ("first_mod", "second_mod"):
        path = tmp_path / f"{name}.py"
        path.write_text("def f(x):\n    return x + 1\n")
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        funcs.append((module.f, str(path)))
    assert funcs[0][0].__code__ == funcs[1][0].__code__  # CPython's code equality
    for func, path in funcs:
        assert frontend.function_ast(func).filename == path


def _load(tmp_path, name: str, text: str):
    import importlib.util

    path = tmp_path / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, path


def test_comment_lines_at_column_0_inside_a_method(tmp_path):
    """Source as polyhedral tools leave it (``# scop begin`` at column 0 in a method body):
    whatever Python accepts parses, with true positions."""
    module, path = _load(tmp_path, "scop_mod", (
        "class K:\n"
        "    def kernel(self, a, n):\n"
        "# scop begin\n"
        "        for i in range(n):\n"
        "            a[i] = 2\n"
        "# scop end\n"
        "        return a\n"))
    fa = frontend.function_ast(module.K.kernel)
    loop = fa.tree.body[0]
    assert isinstance(loop, ast.For) and (loop.lineno, loop.col_offset) == (4, 8)
    assert fa.filename == str(path) and "# scop begin" in fa.source


def test_decorated_and_same_named_functions_are_told_apart_by_line(tmp_path):
    module, _ = _load(tmp_path, "same_names", (
        "import functools\n"
        "class A:\n"
        "    def f(self):\n"
        "        return 1\n"
        "class B:\n"
        "    @staticmethod\n"
        "    @functools.lru_cache\n"
        "    def f():\n"
        "        return 2\n"))
    first = frontend.function_ast(module.A.f).tree
    second = frontend.function_ast(module.B.__dict__["f"].__wrapped__).tree
    assert first.body[0].value.value == 1 and first.lineno == 3
    assert second.body[0].value.value == 2 and second.lineno == 8


# -- trees deeper than Python's recursion limit -------------------------------------------------

def _deep_sum(terms: int) -> ast.Module:
    return ast.parse("x = " + " + ".join(f"a{k}" for k in range(terms)))


def test_ast_depth_counts_without_recursion_and_names_a_placed_node():
    depth, where = frontend.ast_depth(_deep_sum(1500))
    assert depth > 1500 and isinstance(where, ast.Name) and where.lineno == 1
    assert frontend.ast_depth(ast.parse("x"))[0] == 4  # Module, Expr, Name, Load


def test_copy_ast_copies_deep_trees_without_sharing_nodes():
    tree = _deep_sum(1500)
    copied = frontend.copy_ast(tree)
    originals = {id(n) for n in ast.walk(tree)}
    assert not any(id(n) in originals for n in ast.walk(copied))
    assert [type(n) for n in ast.walk(copied)] == [type(n) for n in ast.walk(tree)]
    assert ast.dump(frontend.copy_ast(ast.parse("y = f(a, *b)[1:2]"))) == \
        ast.dump(ast.parse("y = f(a, *b)[1:2]"))


def test_fix_missing_locations_without_recursion():
    tree = _deep_sum(1500)
    new = ast.Expr(ast.Call(ast.Name("g", ast.Load()), [], []))
    tree.body.append(new)
    frontend.fix_missing_locations(tree)
    assert new.lineno == 1 and new.value.func.lineno == 1
    compile(ast.parse("x = 1"), "<t>", "exec")
