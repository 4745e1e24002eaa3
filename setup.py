"""Packaging for asp-sejits: the generic SEJITS core (asp_core) and the loop-nest specializer.

The top-level ``templates/`` folder ships inside the wheel as the package ``asp_core._templates``
so that ``asp_core.templates`` finds it both in a checkout and in an installed wheel. The ``asp``
command line (``asp_core.cli``) is installed as a console script.
"""

import os
import re

from setuptools import Extension, find_packages, setup

HERE = os.path.dirname(os.path.abspath(__file__))


def read_version():
    with open(os.path.join(HERE, "asp_core", "version.py"), encoding="utf-8") as f:
        return re.search(r'^VERSION = "([^"]+)"', f.read(), re.M).group(1)


def template_packages():
    """One package per folder under templates/, mapped to asp_core._templates[.sub]."""
    packages = []
    root = os.path.join(HERE, "templates")
    for folder, _dirs, _files in os.walk(root):
        rel = os.path.relpath(folder, root)
        name = "asp_core._templates" + ("" if rel == "." else "." + rel.replace(os.sep, "."))
        if "__pycache__" not in name:
            packages.append(name)
    return packages


setup(
    name="asp-sejits",
    version=read_version(),
    description="Selective Embedded JIT Specialization for Python loop nests (C, OpenMP, CUDA)",
    long_description=open(os.path.join(HERE, "README.md"), encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.11",
    packages=find_packages(include=["asp_core", "asp_core.*", "specializers", "specializers.*"])
    + template_packages(),
    package_dir={"asp_core._templates": "templates"},
    package_data={name: ["*.mako", "*.c"] for name in template_packages()},
    install_requires=[
        "numpy>=1.24",
        "codepy>=2023.1",
        "cffi>=1.15",
        "mako>=1.2",
        "platformdirs>=3",
        "tqdm>=4.60",
        "click>=8.1",
    ],
    # The cold gate (specializers/loopnest/_coldgate.c): optional, so that a machine without
    # Python's headers installs all the same and runs the gate's Python equivalent.
    ext_modules=[Extension("specializers.loopnest._coldgate",
                           ["specializers/loopnest/_coldgate.c"], optional=True)],
    entry_points={"console_scripts": ["asp = asp_core.cli:main"]},
    extras_require={
        "cuda": ["pycuda>=2022.2"],
        "opencl": ["pyopencl>=2022.1"],
        "test": ["pytest>=7", "pytest-xdist>=3.8", "hypothesis>=6.80", "setuptools>=64", "wheel",
                 "matplotlib>=3.7", "dask[array]>=2023.1", "distributed>=2023.1"],
        "bench": ["numba>=0.58", "matplotlib>=3.7"],
        "dask": ["dask[array]>=2023.1", "distributed>=2023.1"],
    },
)
