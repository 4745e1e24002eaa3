"""codegen.walker: the walk visits loops and statements in schedule order."""

from specializers.loopnest.codegen.walker import walk
from specializers.loopnest.pipeline import analyse_kernel


class Recorder:
    def __init__(self):
        self.events = []

    def loop(self, loop, node, body):
        self.events.append(f"loop {loop.var}")
        body()
        self.events.append(f"end {loop.var}")

    def statement(self, stmt, node):
        self.events.append(f"S{stmt.sid}")


def test_walk_order():
    def kernel(self, A, n):
        for i in range(n):
            A[i, 0] = 0
            for j in range(n):
                A[i, j] += 1
            A[i, 1] = 2

    a = analyse_kernel(kernel).nests[0]
    rec = Recorder()
    walk(a.sequential, a.nest, rec)
    assert rec.events == ["loop i", "S0", "loop j", "S1", "end j", "S2", "end i"]
