"""asp_core: the generic core of a SEJITS framework (Selective Embedded JIT Specialization).

Modules, each with one job:

* ``frontend``: a Python function -> its AST (positions in the user's file) and free variables
* ``dast``: the frozen node base for domain ASTs; ``visitors``: visitors and transformers
* ``templates``: the Mako template lookup; ``cache``: stable keys and the on-disk cache;
  ``cache_cap``: its size cap (entries listed by last use, the least recently used pruned)
* ``backends``: C (codepy + cffi), nvcc, CUDA (pycuda), host emulation of CUDA launches,
  OpenCL (pyopencl)
* ``signature``: argument signatures; ``config``: settings from the environment
* ``platform``: cores, CPU identity, compilers, OpenMP, GPUs; ``specializer``: dispatch and
  fallback; ``dumps``: writing ``ASP_DUMP_DIR`` safely; ``lru``: bounded in-memory caches;
  ``forking``: OpenMP and ``fork()``; ``openmp_runtime``: the OpenMP wait policy;
  ``selection``: variant choice by predicted cost, corrected online; ``calibration``: stored
  machine parameters; ``pysource``: small generated Python functions, without a template;
  ``cli``: the ``asp`` command (calibrate, explain, cache care)

Importing the package does no work: nothing is compiled, probed or read until used.
"""

from .errors import (AspError, BackendUnavailable, CacheError, CompileError, SourceLocation,
                     SpecializationError, UnsupportedArgument, UnsupportedConstruct)
from .version import VERSION

__version__ = VERSION

__all__ = ["AspError", "BackendUnavailable", "CacheError", "CompileError", "SourceLocation",
           "SpecializationError", "UnsupportedArgument", "UnsupportedConstruct", "VERSION",
           "__version__"]
