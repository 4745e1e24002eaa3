import numpy as np
from examples.jacobi import Jacobi
from specializers.loopnest.typeinfer import infer_types
k = Jacobi(backend="python"); k.kernel(np.ones((5,5)), np.ones((5,5)))
r = k._asp_current.runners[0]
print(r.analysis.names.inputs, r.last_inputs[2:])
sig = r.signature(r.last_inputs)[0]
print(sig)
print(r.analysis.required)
info = infer_types(r.analysis, sig)
print(info)
from specializers.loopnest.typeinfer import expr_types, call_type, Ty, FLOAT
st = r.analysis.statements[1]
print(st.value)
import numpy as np
print(call_type("max", (FLOAT, Ty(np.dtype(np.float64)))))
