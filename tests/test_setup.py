"""setup.py: a wheel carries the templates; installed in a fresh virtualenv, it renders them.

Also checks the packaging metadata (dependencies and extras) the README promises.
"""

import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
IGNORE = shutil.ignore_patterns(".venv", ".git", "build", "dist", "*.egg-info", "__pycache__",
                                ".pytest_cache", ".hypothesis", ".gpu")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    src = tmp_path_factory.mktemp("src") / "project"
    shutil.copytree(ROOT, src, ignore=IGNORE)
    dist = tmp_path_factory.mktemp("dist")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                           "--quiet", "-w", str(dist), str(src)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    wheels = list(dist.glob("asp_sejits-*.whl"))
    assert len(wheels) == 1
    return wheels[0]


def test_wheel_contains_templates_and_packages(wheel):
    import zipfile

    names = zipfile.ZipFile(wheel).namelist()
    assert "asp_core/_templates/asp_core/cuda_emulation.cpp.mako" in names
    assert "asp_core/specializer.py" in names and "specializers/__init__.py" in names
    assert not any(n.startswith(("tests/", "examples/")) for n in names)


def test_installed_wheel_renders_templates_in_a_fresh_virtualenv(wheel, tmp_path):
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    purelib = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                  capture_output=True, text=True, check=True).stdout.strip())
    # Dependencies (mako, numpy, ...) come from the test environment through a .pth line; the
    # project itself only from the wheel.
    (purelib / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    proc = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install",
                           "--no-deps", "--no-index", "--quiet", str(wheel)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    check = (
        "import asp_core, asp_core.templates as t\n"
        "assert 'site-packages' in asp_core.__file__, asp_core.__file__\n"
        "d = t.project_templates_dir()\n"
        "assert d.name == '_templates' and 'site-packages' in str(d), d\n"
        "text = t.render('asp_core/cuda_emulation.cpp.mako', source='// k', kernels=[('k', [])])\n"
        "assert 'asp_launch_k' in text\n"
        "print(sorted(t.templates().names()))\n"
    )
    out = subprocess.run([str(python), "-I", "-c", check], capture_output=True, text=True,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "asp_core/cuda_emulation.cpp.mako" in out.stdout


def test_declared_dependencies_and_extras():
    text = (ROOT / "setup.py").read_text()
    for dep in ("numpy", "codepy", "cffi", "mako"):
        assert f'"{dep}' in text
    assert '"cuda": ["pycuda' in text and '"test": [' in text and "hypothesis" in text
    assert '"opencl": ["pyopencl' in text
