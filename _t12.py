import importlib
from tests.examples.test_loopnest_examples import SMALL, KERNELS
from specializers.loopnest.typeinfer import infer_types
for name in sorted(SMALL):
    m = importlib.import_module(f"examples.{name}")
    k = getattr(m, KERNELS[name])(backend="python", strict=True)
    k.kernel(*m.make_inputs(**SMALL[name]))
    for r in k._asp_current.runners:
        sig = r.signature(r.last_inputs)[0]
        try:
            info = infer_types(r.analysis, sig)
            print(name, {k: str(v) for k, v in info.variables.items() if k in r.analysis.names.scalars}, info.converted_inputs)
        except Exception as e:
            print(name, "ERROR", e)
