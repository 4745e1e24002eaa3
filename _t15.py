import numpy as np, importlib, sys
from tests.examples.test_loopnest_examples import SMALL, KERNELS
from specializers.loopnest.typeinfer import infer_types
from specializers.loopnest.variants import generate
name = sys.argv[1]; backend = sys.argv[2]
m = importlib.import_module(f"examples.{name}")
k = getattr(m, KERNELS[name])(backend="python", strict=True)
k.kernel(*m.make_inputs(**SMALL[name]))
for r in k._asp_current.runners:
    sig, key = r.signature(r.last_inputs)
    types = infer_types(r.analysis, sig)
    mod = generate(backend, r.analysis, r.last_plan, types, sig, r.name)
    print(mod.source[mod.source.index("#define ASP_AT"):])
