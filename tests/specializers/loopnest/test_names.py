"""names: loop variables, arrays, scalars, invariants, and the checks that keep nests analysable."""

import pytest

from asp_core.errors import UnsupportedConstruct
from specializers.loopnest.frontend import kernel_source
from specializers.loopnest.ifconvert import if_convert
from specializers.loopnest.lowering import lower_nest
from specializers.loopnest.names import nest_names


def names_of(func):
    src = kernel_source(func)
    return nest_names(if_convert(lower_nest(src.ctx, src.nests[0], 0)))


def test_classification():
    def k(self, A, B, n, alpha):
        for i in range(n):
            t = A[i] * alpha
            if t > self.cut:
                B[i] = t
            s = t

    names = names_of(k)
    assert names.loop_vars == ("i",) and names.arrays == ("A", "B")
    assert names.scalars == ("s", "t") and names.temps == ("__asp_p1",)
    assert names.invariants == ("alpha", "n", "self.cut")
    assert names.outputs == ("s", "t", "i")
    assert names.inputs == ("A", "B", "alpha", "n", "self.cut", "s", "t", "i")


@pytest.mark.parametrize("body, message", [
    ("for i in range(n):\n        i = 2", "assignment to loop variable"),
    ("for i in range(n):\n        A[i] = A\n", "both as an array and as a scalar"),
    ("for i in range(n):\n        m = i\n        for j in range(m):\n            A[j] = 0",
     "depends on 'm'"),
    ("for i in range(n):\n        for j in range(A[i]):\n            A[j] = 0", "read array elements"),
    ("for i in range(n):\n        for j in range(0, n, i + 1):\n            A[j] = 0",
     "step may not depend"),
    ("for i in range(n):\n        for j in range(n):\n            A[j] = 0\n        A[0] = j",
     "read outside its loop"),
])
def test_rejected(tmp_path, body, message):
    import importlib.util

    path = tmp_path / f"mod_{abs(hash(body))}.py"
    path.write_text(f"def k(self, A, n):\n    {body}\n")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(UnsupportedConstruct, match=message):
        names_of(module.k)


CPP_KEYWORDS = ("new delete template this operator namespace virtual public protected friend "
                "typename using explicit mutable throw catch nullptr decltype constexpr "
                "noexcept static_cast std xor bitand compl export requires concept").split()


@pytest.mark.parametrize("backend", ["c", "cuda-emulated"])
def test_cpp_keywords_as_names(backend):
    """CUDA C and its host emulation are C++: a Python name that is a C++ keyword (``new``,
    ``this``, ``template`` ...) is renamed in the generated code, as C's keywords are. One
    kernel chains a value through every such name, arrays and loop variables among them."""
    import numpy as np

    from specializers.loopnest.checking import load_source

    from .helpers import assert_same_as_python

    names = CPP_KEYWORDS
    lines = ["from specializers.loopnest import LoopKernel",
             "class Kernel(LoopKernel):",
             f"    def kernel(self, new, delete, {names[2]}):",
             f"        for {names[3]} in range(new.shape[0]):",
             f"            {names[4]} = new[{names[3]}] * 2.0"]
    for previous, name in zip(names[4:], names[5:]):
        lines.append(f"            {name} = {previous} + 1.0")
    lines.append(f"            delete[{names[3]}] = {names[-1]} * {names[2]}")
    Kernel = load_source("\n".join(lines) + "\n")
    call = assert_same_as_python(Kernel(backend=backend, strict=True), np.arange(5.0),
                                 np.zeros(5), 3.0)
    assert call.nests[0].backend == backend
