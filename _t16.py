import importlib, sys, copy, warnings
from tests.examples.test_loopnest_examples import SMALL, KERNELS
from examples.harness import run_example
for name in sorted(SMALL):
    m = importlib.import_module(f"examples.{name}")
    cls = getattr(m, KERNELS[name])
    for backend in ("c", "openmp"):
        try:
            r = run_example(name, lambda backend=None, b=backend: cls(backend=b, strict=True), m.make_inputs(**SMALL[name]), m.numpy_reference)
            print(r.line())
        except Exception as e:
            print(name, backend, "ERROR", type(e).__name__, str(e)[:3000])
