import traceback
from tests.specializers.loopnest.generators import load_kernel, make_typed_arguments
src='import math\nimport numpy as np\nfrom specializers.loopnest import LoopKernel\n\n\nclass Kernel(LoopKernel):\n    def kernel(self, A, B, C, F, idx, n, alpha):\n        half = n // 2\n        s0 = 0.0\n        m0 = -1e300\n        for i in range(n):\n            t1 = max(A[0, 0], alpha)\n        s0 = s0 * 0.5\n        return s0, m0\n'
K, _ = load_kernel(src)
try:
    print(K(backend="c", strict=True).kernel(*make_typed_arguments()))
except Exception:
    traceback.print_exc()
