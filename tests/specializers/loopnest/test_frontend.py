"""frontend: a kernel's top-level loop nests, and the names it reads outside each."""

import ast

import pytest

from specializers.loopnest.frontend import kernel_source, names_read_outside, top_level_loops


def test_top_level_loops_inside_compound_statements_but_not_nested_functions():
    def kernel(self, A, n):
        for i in range(n):          # 1
            for j in range(n):      # (inner, not top-level)
                A[i] = j
        if n > 1:
            for i in range(n):      # 2
                A[i] = 0
        while n > 0:
            n -= 1
            for i in range(n):      # 3
                A[i] += 1

        def helper():
            for q in range(3):      # (inside a nested function)
                pass
        return helper

    src = kernel_source(kernel)
    assert [node.lineno - kernel.__code__.co_firstlineno for node in src.nests] == [1, 5, 9]
    assert src.ctx.self_name == "self" and "helper" in src.ctx.local_names


def test_names_read_outside_a_nest():
    tree = ast.parse("def f(A):\n    s = 0\n    for i in range(3):\n        s += A[i]\n    return s\n")
    nest = top_level_loops(tree.body[0].body)[0]
    assert names_read_outside(tree, nest) == frozenset({"s"})


def test_reads_of_a_for_loops_own_variable_do_not_count():
    tree = ast.parse("def f(A, n):\n    for i in range(n):\n        A[i] = 0\n"
                     "    for i in range(n):\n        A[i] += i\n    return j\n")
    nest = top_level_loops(tree.body[0].body)[0]
    assert "i" not in names_read_outside(tree, nest)
    tree = ast.parse("def f(A, n):\n    for i in range(n):\n        A[i] = 0\n"
                     "    for j in range(i):\n        A[j] += 1\n")
    nest = top_level_loops(tree.body[0].body)[0]
    assert "i" in names_read_outside(tree, nest)  # range(i) reads the first loop's i


@pytest.mark.parametrize("backend", ["python", "c", "openmp"])
def test_a_kernel_with_comments_at_column_0_specializes(backend):
    """``# scop begin`` / ``# scop end`` at column 0 inside the method, as polyhedral tools
    write them: the kernel runs on every backend (it raised IndentationError on all)."""
    import numpy as np

    from specializers.loopnest.checking import load_source

    Kernel = load_source(
        "from specializers.loopnest import LoopKernel\n"
        "class Kernel(LoopKernel):\n"
        "    def kernel(self, a, n):\n"
        "# scop begin\n"
        "        for i in range(n):\n"
        "            a[i] = a[i] * 2.0 + i\n"
        "# scop end\n")
    want = np.ones(50)
    Kernel().original_kernel(want, 50)
    got = np.ones(50)
    kernel = Kernel(backend=backend, strict=True)
    kernel.kernel(got, 50)
    assert np.array_equal(got, want) and kernel.last_call.nests[0].backend == backend
