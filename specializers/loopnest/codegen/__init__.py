"""Code generation: one target-independent walker over the scheduled DAST, one emitter per
target (the plain-Python executor here; C and OpenMP later), module skeletons in templates."""
