"""templates: one Mako lookup, strict about undefined names; every project template renders;
compiled templates are verified cache entries, never a planted or truncated module."""

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest

from asp_core import cache
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


def _loopnest_finals():
    from specializers.loopnest.codegen.finals import finals_function
    from specializers.loopnest.pipeline import analyse_kernel

    a = analyse_kernel(sample_kernel).nests[0]
    return finals_function(a.nest, a.names.inputs, ("i",)).__asp_source__


def _sample_call():
    """(runner, call types, inferred types) of ``sample_kernel`` after one call."""
    import numpy as np

    from specializers.loopnest import LoopKernel
    from specializers.loopnest.typeinfer import infer_types

    class Sample(LoopKernel):
        kernel = sample_kernel

    kernel = Sample(backend="python")
    kernel.cut = 0.5
    kernel.kernel(np.arange(4.0), np.zeros(4), 4)
    runner = kernel._asp_current.runners[0]
    types, _ = runner.signature(runner.last_inputs)
    return runner, types, infer_types(runner.analysis, types)


def _loopnest_c_module(backend="c"):
    from specializers.loopnest.variants import generate

    runner, types, inferred = _sample_call()
    return generate(backend, runner.analysis, runner.last_plan, inferred, types, "sample")


def _loopnest_device_module():
    from specializers.loopnest.codegen.device import device_module

    runner, types, inferred = _sample_call()
    return device_module("cuda", runner.analysis, runner.last_plan, inferred, types,
                         "sample").source


def _calibration_kernels():
    from specializers.loopnest.cost.native_probes import kernel_source

    return kernel_source(True)


# Every template of the project, rendered through the code that really uses it. A new template
# without an entry here fails test_every_template_is_rendered.
RENDERERS = {
    "asp_core/cuda_emulation.cpp.mako": lambda: emulation.emulation_source(SAMPLE_CUDA)[0],
    "loopnest/python_nest.py.mako": _loopnest_executor,
    "loopnest/python_finals.py.mako": _loopnest_finals,
    "loopnest/c_module.c.mako": lambda: _loopnest_c_module("openmp").source,
    "loopnest/c_runtime.h.mako": lambda: tpl.render("loopnest/c_runtime.h.mako"),
    "loopnest/calibration.c.mako": _calibration_kernels,
    "loopnest/device_module.mako": _loopnest_device_module,
    "asp_core/host_loops.c.mako": lambda: tpl.render("asp_core/host_loops.c.mako"),
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
    if name == "loopnest/device_module.mako":  # its CUDA dialect, as the host emulation has it
        src = tmp_path / "t.cpp"
        src.write_text(emulation.emulation_source(text)[0])
        subprocess.run(["g++", "-fsyntax-only", "-std=gnu++17", str(src)], check=True)
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


# -- compiled templates are cache entries, checked like compiled variants ----------------------

@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    """A cache folder of this test's own, and no template loaded in this process yet."""
    monkeypatch.setenv("ASP_CACHE_DIR", str(tmp_path / "cache"))
    cache.clear_memo()
    tpl.clear_cache()
    yield tmp_path / "cache"
    cache.clear_memo()
    tpl.clear_cache()


def _template(tmp_path, text="value: ${x}\n") -> Path:
    folder = tmp_path / "tpl"
    folder.mkdir(exist_ok=True)
    (folder / "t.mako").write_text(text)
    return folder


def _module_entries(root: Path) -> list[Path]:
    return [m.parent for m in root.glob(f"*/*/{tpl.MODULE}")]


def _fresh_process():
    """Forget what this process loaded, as a new process would."""
    cache.clear_memo()
    tpl.clear_cache()


def test_compiled_template_is_a_verified_entry_reused_without_compiling(own_cache, tmp_path,
                                                                        monkeypatch):
    folder = _template(tmp_path)
    assert tpl.templates([folder]).render("t.mako", x=1) == "value: 1\n"
    (entry,) = [e for e in _module_entries(own_cache)
                if "t.mako" in (e / tpl.MODULE).read_text()]
    assert cache.verified_bytes(entry, tpl.MODULE) == (entry / tpl.MODULE).read_bytes()
    assert {p.name for p in own_cache.iterdir()} >= {"locks", "tmp"}
    assert not list(own_cache.glob("mako-*"))  # no folder of modules Mako would import
    _fresh_process()

    def no_compiling(*args, **kwargs):
        raise AssertionError("compiled again")

    monkeypatch.setattr(tpl, "Template", no_compiling)
    assert tpl.templates([folder]).render("t.mako", x=2) == "value: 2\n"


def _entry_of(own_cache: Path) -> Path:
    (entry,) = [e for e in _module_entries(own_cache)
                if "t.mako" in (e / tpl.MODULE).read_text()]
    return entry


PLANTED = "open({marker!r}, 'w').write('ran')\n"


def test_planted_or_changed_module_is_never_run(own_cache, tmp_path):
    marker = tmp_path / "marker"
    folder = _template(tmp_path)
    tpl.templates([folder]).render("t.mako", x=1)
    entry = _entry_of(own_cache)
    module = entry / tpl.MODULE
    planted = module.read_text().replace("_magic_number", PLANTED.format(marker=str(marker))
                                         + "_magic_number", 1)
    module.unlink()
    module.write_text(planted)  # the manifest still has the real module's digest
    (entry / "other.py").write_text(PLANTED.format(marker=str(marker)))  # listed nowhere
    (own_cache / "mako-0123456789abcdef").mkdir(mode=0o700)  # where Mako used to look
    (own_cache / "mako-0123456789abcdef" / "t.mako.py").write_text(
        PLANTED.format(marker=str(marker)))
    _fresh_process()
    assert tpl.templates([folder]).render("t.mako", x=3) == "value: 3\n"
    assert not marker.exists()


def _rewrite(entry: Path, data: bytes, *, fix_manifest: bool) -> None:
    module = entry / tpl.MODULE
    module.unlink()
    module.write_bytes(data)
    if fix_manifest:
        manifest = json.loads((entry / cache.MANIFEST).read_text())
        manifest["files"][tpl.MODULE] = [len(data), hashlib.sha256(data).hexdigest()]
        (entry / cache.MANIFEST).write_text(json.dumps(manifest))


@pytest.mark.parametrize("fix_manifest", [False, True])
def test_truncated_compiled_template_is_rebuilt(own_cache, tmp_path, fix_manifest):
    folder = _template(tmp_path)
    tpl.templates([folder]).render("t.mako", x=1)
    entry = _entry_of(own_cache)
    whole = (entry / tpl.MODULE).read_bytes()
    cut = whole.index(b"def render_body")
    _rewrite(entry, whole[:whole.index(b"\n", cut + 40) + 1], fix_manifest=fix_manifest)
    _fresh_process()
    assert tpl.templates([folder]).render("t.mako", x=4) == "value: 4\n"
    _fresh_process()
    rebuilt = cache.verified_bytes(_entry_of(own_cache), tpl.MODULE)
    assert rebuilt.rstrip().endswith(b'__M_END_METADATA\n"""')  # whole again
    assert tpl.templates([folder]).render("t.mako", x=5) == "value: 5\n"


def test_unusable_cache_compiles_templates_in_memory(own_cache, tmp_path):
    own_cache.write_text("a file where the cache folder should be")
    folder = _template(tmp_path)
    assert tpl.templates([folder]).render("t.mako", x=6) == "value: 6\n"
    assert tpl.render("loopnest/c_runtime.h.mako")


def test_changed_template_text_is_compiled_again(own_cache, tmp_path):
    folder = _template(tmp_path)
    lookup = tpl.templates([folder])
    assert lookup.render("t.mako", x=1) == "value: 1\n"
    (folder / "t.mako").write_text("changed: ${x}\n")
    later = os.stat(folder / "t.mako").st_mtime + 5
    os.utime(folder / "t.mako", (later, later))
    assert lookup.render("t.mako", x=1) == "changed: 1\n"
    _fresh_process()
    assert tpl.templates([folder]).render("t.mako", x=2) == "changed: 2\n"
