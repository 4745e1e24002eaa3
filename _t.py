import numpy as np
from specializers.loopnest.pipeline import analyse_kernel

def listing1(self, arg_a, k, limits):
    im, jm = limits
    for i in range(0, im, 1):
        for j in range(0, jm, 1):
            arg_a[i + k, j] = arg_a[i, j] + 4
            arg_a[i + 16, j] = arg_a[i, j]

def listing2(self, arg_a, arg_b, constants, limits):
    im, jm, km, mm = limits
    p1, p2, p3 = constants
    for i in range(0, im, 1):
        for j in range(2, jm, 1):
            for k in range(0, km, 1):
                for m in range(0, mm, 1):
                    arg_a[i + p1, j, k, m] = arg_a[i, j, k, m] + 4 + arg_b[i]
                    arg_a[i, j + p2, k, m] = arg_a[i, j + p3, k, m] + 43

a1 = analyse_kernel(listing1).nests[0]
print(a1.names.inputs)
for im, jm, k in [(32,1024,64),(32,1024,8),(16,1024,16)]:
    A = np.zeros((im + max(k,16), jm))
    inputs = {"arg_a": A, "im": im, "jm": jm, "k": k, "i": None, "j": None}
    vals = tuple(inputs[n] for n in a1.names.inputs)
    plan = a1.plan(a1.binder.key(vals))
    print((im,jm,k), [(s.sid, s.sequential, s.parallel) for s in plan.schedule.statements])
a2 = analyse_kernel(listing2).nests[0]
print(a2.names.inputs)
for p in [(0,1,-2),(1,1,-1),(10,99,-1)]:
    im,jm,km,mm = 10,100,100,100
    A = np.zeros((im+10, jm+100, km, mm), dtype=np.float32)
    inputs = {"arg_a": A, "arg_b": np.zeros(im), "im": im, "jm": jm, "km": km, "mm": mm, "p1": p[0], "p2": p[1], "p3": p[2], "i": None, "j": None, "k": None, "m": None}
    vals = tuple(inputs[n] for n in a2.names.inputs)
    import time; t=time.perf_counter()
    plan = a2.plan(a2.binder.key(vals))
    print(p, [(s.sid, s.sequential, s.parallel) for s in plan.schedule.statements], f"{(time.perf_counter()-t)*1e3:.1f}ms")
    for e in plan.graph.edges: print("   ", e.source, e.sink, e.kind, e.vector, e.level, e.distance, e.test)
