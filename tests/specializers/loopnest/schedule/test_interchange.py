"""schedule.interchange: moving parallel loops outward, only when legal."""

from specializers.loopnest.schedule.interchange import parallel_outward


def test_gemm_k_outermost_moves_inward():
    # loops k=0, i=1, j=2; C[i, j] carried by k: (<, =, =)
    assert parallel_outward([0, 1, 2], [{0: "<", 1: "=", 2: "="}]) == \
        [(1, True), (2, True), (0, False)]


def test_illegal_interchange_is_refused():
    # (<, >): moving the second loop out would reverse the dependence; the order stays
    assert parallel_outward([0, 1], [{0: "<", 1: ">"}]) == [(0, False), (1, True)]
    # (<, *) after the carrying level: unknown direction there, so it cannot move out first
    assert parallel_outward([0, 1], [{0: "<", 1: "*"}]) == [(0, False), (1, True)]


def test_no_dependence_everything_parallel_in_order():
    assert parallel_outward([3, 4], []) == [(3, True), (4, True)]
