"""examples.__main__: the main job runs the twelve examples and the element-wise map
specialized, and reports for each what ran, the speedup and the check against plain Python."""

from examples.__main__ import EXAMPLES, main


def test_main_job_quick(capsys):
    import warnings

    from asp_core.specializer import FallbackWarning

    with warnings.catch_warnings():
        warnings.simplefilter("error", FallbackWarning)  # no nest falls back
        assert main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "CPU cores available" in out
    lines = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    for name in EXAMPLES:
        line = lines[name]
        assert "same as Python, matches NumPy" in line, line
        ran = line.split()[1]
        # chosen by the cost model: compiled, or plain Python where that is faster
        assert set(ran.split("+")) <= {"c", "openmp", "python"}, line
    assert "geometric mean speedup over plain Python" in out
    assert "ran on c" in out and "identical" in out  # the element-wise map
