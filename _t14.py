import numpy as np
from examples.jacobi import Jacobi
from specializers.loopnest import typeinfer as T
k = Jacobi(backend="python"); k.kernel(np.ones((5,5)), np.ones((5,5)))
r = k._asp_current.runners[0]
st = r.analysis.statements[1]
arrays = {"A": T.Ty(np.dtype(np.float64)), "B": T.Ty(np.dtype(np.float64))}
vars_ = {"err": frozenset({T.FLOAT}), "i": frozenset({T.INT}), "j": frozenset({T.INT})}
try:
    print(T.expr_types(st.value, vars_, arrays))
except Exception as e:
    print("raised", e)
print(list(st.value.children()))
