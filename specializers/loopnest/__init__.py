"""The loop-nest specializer: ordinary nested ``for`` loops over NumPy arrays, specialized.

Subclass ``LoopKernel`` and write ``kernel()``; see ``kernel.py`` for the contract and
``pipeline.py`` for the order of the passes.
"""

from .kernel import LoopKernel
from .report import KernelCall, NestCall, Report, StatementCall

__all__ = ["LoopKernel", "KernelCall", "NestCall", "Report", "StatementCall"]
