"""The loop-nest specializer: ordinary nested ``for`` loops over NumPy arrays, specialized.

Subclass ``LoopKernel`` and write ``kernel()``; see ``kernel.py`` for the contract and
``pipeline.py`` for the order of the passes.
"""

from pathlib import Path

from asp_core.specializer import internal_code

from .kernel import LoopKernel
from .report import KernelCall, NestCall, Report, StatementCall

internal_code(Path(__file__).parent)   # fallback warnings point past this package's frames

__all__ = ["LoopKernel", "KernelCall", "NestCall", "Report", "StatementCall"]
