"""conway: one generation of Conway's game of life on a 2-D board (ALPyNA benchmark)."""

import numpy as np

from examples.harness import run_example
from specializers.loopnest import LoopKernel


class Conway(LoopKernel):
    def kernel(self, board, out):
        n, m = board.shape
        for i in range(1, n - 1):
            for j in range(1, m - 1):
                neighbours = (board[i - 1, j - 1] + board[i - 1, j] + board[i - 1, j + 1]
                              + board[i, j - 1] + board[i, j + 1]
                              + board[i + 1, j - 1] + board[i + 1, j] + board[i + 1, j + 1])
                if board[i, j] == 1 and (neighbours < 2 or neighbours > 3):
                    out[i, j] = 0
                elif board[i, j] == 0 and neighbours == 3:
                    out[i, j] = 1
                else:
                    out[i, j] = board[i, j]


def make_inputs(n=512, seed=0):
    rng = np.random.default_rng(seed)
    board = (rng.random((n, n)) < 0.3).astype(np.int32)
    return board, board.copy()


def numpy_reference(board, out):
    b = board
    nb = (b[:-2, :-2] + b[:-2, 1:-1] + b[:-2, 2:] + b[1:-1, :-2] + b[1:-1, 2:]
          + b[2:, :-2] + b[2:, 1:-1] + b[2:, 2:])
    alive = b[1:-1, 1:-1] == 1
    out[1:-1, 1:-1] = np.where(alive, ((nb == 2) | (nb == 3)).astype(np.int32),
                               (nb == 3).astype(np.int32))
    return None, (board, out)


def main(n=512, python=True, backend=None):
    return run_example("conway", Conway, make_inputs(n), numpy_reference, python=python,
                       backend=backend)


if __name__ == "__main__":
    print(main().line())
