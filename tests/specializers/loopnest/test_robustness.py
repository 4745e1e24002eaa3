"""Robustness of the front end: generated kernels are either accepted and run exactly as plain
Python (the plain-Python executor, strict mode), or rejected with UnsupportedConstruct naming a
line of their file; never an internal error."""

import copy
import warnings

from hypothesis import HealthCheck, given, settings

from asp_core.errors import SpecializationError, UnsupportedConstruct
from specializers.loopnest.pipeline import RejectedNest, analyse_kernel

from .generators import kernels, load_kernel, make_arguments
from .helpers import close, identical

SEEN = {"accepted": 0, "rejected": 0}
REASONS: dict[str, int] = {}   # construct -> nests run as Python for it


def outcome(call):
    try:
        return ("ok", call())
    except (ArithmeticError, IndexError, ValueError, TypeError, NameError) as exc:
        return ("error", type(exc))


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kernels())
def test_generated_kernels(source):
    Kernel, path = load_kernel(source)
    nests = analyse_kernel(Kernel.kernel.__wrapped__).nests
    rejected = [n for n in nests if isinstance(n, RejectedNest)]
    for nest in rejected:
        assert isinstance(nest.error, UnsupportedConstruct)
        assert nest.error.file == str(path) and nest.error.line >= nest.line
        REASONS[nest.error.construct] = REASONS.get(nest.error.construct, 0) + 1
    SEEN["rejected" if rejected else "accepted"] += 1
    args = make_arguments()
    kernel = Kernel(backend="python", strict=not rejected)
    plain_args = copy.deepcopy(args)
    want = outcome(lambda: kernel.original_kernel(*plain_args))
    spec_args = copy.deepcopy(args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = outcome(lambda: kernel.kernel(*spec_args))
    assert got[0] == want[0], (got, want, source)
    if got[0] == "ok":
        assert identical((got[1], spec_args), (want[1], plain_args)), source
    else:
        assert got[1] is want[1], source
    if kernel.last_call is not None:
        for record, nest in zip(kernel.last_call.nests, nests):
            if record.ran:
                assert (record.fallback is None) == (not isinstance(nest, RejectedNest)), source
    if got[0] == "ok":
        # The order checker: parallel loops reversed and shuffled give the same results (up
        # to the rounding of reordered floating-point reductions).
        for order in ("python-reversed", "python-shuffled"):
            checked_args = copy.deepcopy(args)
            checker = Kernel(backend=order, strict=not rejected)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = outcome(lambda: checker.kernel(*checked_args))
            assert result[0] == "ok", (order, result, source)
            assert close((result[1], checked_args), (want[1], plain_args)), (order, source)


def test_both_outcomes_were_exercised():
    """The generator is only useful if it produces both accepted and rejected kernels (and the
    property test above ran at least 200 of them)."""
    if sum(SEEN.values()) == 0:  # this test was selected alone
        test_generated_kernels()
    assert sum(SEEN.values()) >= 200, SEEN
    assert SEEN["accepted"] >= 100 and SEEN["rejected"] >= 10, SEEN
    total = sum(SEEN.values())
    reasons = ", ".join(f"{name}: {count}" for name, count in sorted(REASONS.items(),
                                                                     key=lambda x: -x[1]))
    from tests.conftest import report

    report(f"generated kernels: {SEEN['rejected']} of {total} "
           f"({100 * SEEN['rejected'] / total:.0f}%) had a nest run as Python; the constructs "
           f"(the generator draws unsupported ones on purpose): {reasons}")


def test_strict_mode_names_the_line_of_a_rejected_nest():
    source = ("from specializers.loopnest import LoopKernel\n\n"
              "class Kernel(LoopKernel):\n"
              "    def kernel(self, A, n):\n"
              "        for i in range(n):\n"
              "            while A[i] > 1:\n"
              "                A[i] /= 2\n"
              "            else:\n"
              "                A[i] = 0.0\n")
    Kernel, path = load_kernel(source)
    import numpy as np
    import pytest

    with pytest.raises(SpecializationError) as info:
        Kernel(backend="python", strict=True).kernel(np.ones(3) * 5, 3)
    assert info.value.location.file == str(path) and info.value.location.line == 6
