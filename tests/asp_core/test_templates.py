"""templates: one Mako lookup, strict about undefined names; every project template renders."""

import subprocess

import pytest

from asp_core import templates as tpl
from asp_core.backends import emulation

SAMPLE_CUDA = """
extern "C" __global__ void scale(float *x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}
"""

def sample_kernel(self, A, B, n):
    total = 0.0
    for i in range(n):
        if A[i] > self.cut:
            B[i] = A[i] * 2
        total += B[i]
    return total


def _loopnest_executor():
    from specializers.loopnest.codegen.python import python_source
    from specializers.loopnest.pipeline import analyse_kernel

    a = analyse_kernel(sample_kernel).nests[0]
    return python_source(a.nest, a.sequential, a.names.inputs, a.names.outputs, name="nest_0",
                         header="sample")[0]


def _loopnest_gather():
    from specializers.loopnest.pipeline import analyse_kernel
    from specializers.loopnest.runtime import gather_source

    analysis = analyse_kernel(sample_kernel)
    return gather_source(analysis.nests[0], analysis.source.ctx, "gather_0")


def _loopnest_finals():
    from specializers.loopnest.codegen.finals import finals_function
    from specializers.loopnest.pipeline import analyse_kernel

    a = analyse_kernel(sample_kernel).nests[0]
    return finals_function(a.nest, a.names.inputs, ("i",)).__asp_source__


def _loopnest_c_module(backend="c"):
    import numpy as np

    from specializers.loopnest import LoopKernel
    from specializers.loopnest.typeinfer import infer_types
    from specializers.loopnest.variants import generate

    class Sample(LoopKernel):
        kernel = sample_kernel

    kernel = Sample(backend="python")
    kernel.cut = 0.5
    kernel.kernel(np.arange(4.0), np.zeros(4), 4)
    runner = kernel._asp_current.runners[0]
    types, _ = runner.signature(runner.last_inputs)
    return generate(backend, runner.analysis, runner.last_plan,
                    infer_types(runner.analysis, types), types, "sample")


def _loopnest_call():
    from specializers.loopnest.variants import _call_function

    class Loaded:
        ffi = None

        def function(self, name):
            return None

    return _call_function(_loopnest_c_module(), Loaded(), 0).__asp_source__


# Every template of the project, rendered through the code that really uses it. A new template
# without an entry here fails test_every_template_is_rendered.
RENDERERS = {
    "asp_core/cuda_emulation.cpp.mako": lambda: emulation.emulation_source(SAMPLE_CUDA)[0],
    "loopnest/python_nest.py.mako": _loopnest_executor,
    "loopnest/python_gather.py.mako": _loopnest_gather,
    "loopnest/python_finals.py.mako": _loopnest_finals,
    "loopnest/python_call.py.mako": _loopnest_call,
    "loopnest/c_module.c.mako": lambda: _loopnest_c_module("openmp").source,
    "loopnest/c_runtime.h.mako": lambda: tpl.render("loopnest/c_runtime.h.mako"),
}


def test_every_template_is_rendered():
    assert set(tpl.templates().names()) == set(RENDERERS)


@pytest.mark.parametrize("name", sorted(RENDERERS))
def test_template_renders_to_compilable_text(name, tmp_path):
    text = RENDERERS[name]()
    assert "${" not in text and "% for" not in text
    if name.endswith(".cpp.mako"):
        src = tmp_path / "t.cpp"
        src.write_text(text)
        subprocess.run(["g++", "-fsyntax-only", "-std=gnu++17", str(src)], check=True)
    if name.endswith(".py.mako"):
        compile(text, name, "exec")
    if name.endswith((".c.mako", ".h.mako")):
        src = tmp_path / "t.c"
        src.write_text(text)
        subprocess.run(["gcc", "-fsyntax-only", "-std=gnu11", "-fopenmp", "-Wall", "-Werror",
                        "-Wno-unused-function", "-Wno-unused-variable", str(src)], check=True)


def test_undefined_name_is_an_error(tmp_path):
    (tmp_path / "t.mako").write_text("value: ${missing}\n")
    with pytest.raises(NameError):
        tpl.templates([tmp_path]).render("t.mako")


def test_extra_directories_are_searched_first(tmp_path):
    (tmp_path / "asp_core").mkdir()
    (tmp_path / "asp_core" / "cuda_emulation.cpp.mako").write_text("override ${x}")
    assert tpl.templates([tmp_path]).render("asp_core/cuda_emulation.cpp.mako", x=1) == "override 1"


def test_project_templates_found_in_checkout():
    assert (tpl.project_templates_dir() / "asp_core" / "cuda_emulation.cpp.mako").is_file()
