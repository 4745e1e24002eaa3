"""Runnable example programs: a small specializer written on asp_core (``elementwise``) and the
loop-nest benchmark programs. Each program has a ``main()``."""
