"""nvcc: compile CUDA source for a named GPU architecture, with no GPU present.

``compile_cuda(source, arch="sm_90", target="cubin")`` returns the cubin (or PTX) bytes,
cached on disk; a rejected source raises ``CompileError`` with nvcc's output. On a machine
without a GPU this is the compile check of generated kernels; on a GPU machine the cubin is
what ``asp_core.backends.cuda`` loads.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from pathlib import Path
from typing import Sequence

from ..cache import DiskCache, disk_cache, stable_key
from ..errors import BackendUnavailable, CompileError
from .c import relocate_error, run_compiler

DEFAULT_ARCH = "sm_90"


@functools.lru_cache(maxsize=None)
def find_nvcc() -> tuple[str, str]:
    """(path, version line) of nvcc; ``BackendUnavailable`` if it is missing."""
    path = shutil.which("nvcc")
    if path is None:
        raise BackendUnavailable("nvcc (the CUDA compiler) is not on PATH")
    proc = subprocess.run([path, "--version"], capture_output=True, text=True)
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    return path, (lines[-1] if lines else "unknown")


@functools.lru_cache(maxsize=None)
def supported_architectures() -> tuple[str, ...]:
    """The real architectures (``sm_XX``) this nvcc can compile for."""
    path, _ = find_nvcc()
    proc = subprocess.run([path, "--list-gpu-code"], capture_output=True, text=True)
    return tuple(re.findall(r"sm_\d+[a-z]?", proc.stdout))


def compile_cuda(source: str, *, arch: str = DEFAULT_ARCH, target: str = "cubin",
                 options: Sequence[str] = (), name: str = "kernels",
                 cache: DiskCache | None = None) -> bytes:
    """Compile ``source`` with nvcc for ``arch``; return the ``cubin`` or ``ptx`` bytes."""
    if target not in ("cubin", "ptx"):
        raise ValueError(f"target must be 'cubin' or 'ptx', not {target!r}")
    if not re.fullmatch(r"sm_\d+[a-z]?", arch):
        raise ValueError(f"arch must look like 'sm_90', not {arch!r}")
    path, version = find_nvcc()
    if cache is None:
        from ..config import current

        cache = disk_cache(current().cache_dir)
    flags = (f"-arch={arch}", f"--{target}", "-O3", *options)
    key = stable_key("nvcc", source, version, flags, name)

    def build(folder: Path) -> None:
        src = folder / f"{name}.cu"
        src.write_text(source)
        out = folder / f"{name}.{target}"
        try:
            run_compiler([path, *flags, "-o", str(out), str(src)], src,
                         f"nvcc {name}.cu for {arch}")
        except CompileError as exc:
            raise relocate_error(exc, src, cache.keep_failed(key, src.name, source)) from None

    return (cache.entry(key, build) / f"{name}.{target}").read_bytes()
