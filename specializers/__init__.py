"""Specializers built on asp_core. ``specializers.loopnest``: nested ``for`` loops over NumPy
arrays, parallelized after dependence analysis (in the line of ALPyNA)."""
