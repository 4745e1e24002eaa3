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


# Every template of the project, rendered through the code that really uses it. A new template
# without an entry here fails test_every_template_is_rendered.
RENDERERS = {
    "asp_core/cuda_emulation.cpp.mako": lambda: emulation.emulation_source(SAMPLE_CUDA)[0],
    "loopnest/python_nest.py.mako": _loopnest_executor,
    "loopnest/python_gather.py.mako": _loopnest_gather,
    "loopnest/python_finals.py.mako": _loopnest_finals,
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
