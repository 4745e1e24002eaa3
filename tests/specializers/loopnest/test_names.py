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
