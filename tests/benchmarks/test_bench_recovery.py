"""benchmarks.bench_recovery: when OpenMP counts as chosen again, and a short run end to end
(the figures are not judged here: they belong to the printout)."""

import pytest

from benchmarks import bench_recovery
from benchmarks.bench_recovery import IN_A_ROW, back_after


def test_back_is_the_first_of_in_a_row_openmp_calls():
    choices = ["c"] * 5 + ["openmp@2"] * 3 + ["c"] + ["openmp@2"] * IN_A_ROW + ["c"]
    ends = [0.001 * (k + 1) for k in range(len(choices))]
    assert back_after(choices, ends) == (9, pytest.approx(9.0))   # (the 9th call ended at 9 ms)
    assert back_after(["openmp@2"] * IN_A_ROW, ends) == (0, 0.0)
    assert back_after(["c", "openmp@2"] * IN_A_ROW, ends * 2) == (None, None)


def test_a_short_run_reports_each_run(tmp_path, capsys):
    out = tmp_path / "recovery.txt"
    (run,) = bench_recovery.main(["--only", "vadd:4096", "--runs", "1", "--settle", "0.2",
                                  "--load", "0.2", "--after", "0.3", "--out", str(out)])
    assert run.point == "vadd:4096"
    assert 0 <= run.omp_before <= 1 and 0 <= run.omp_during <= 1 and 0 <= run.omp_after <= 1
    assert run.mean_during_s > 0 and run.mean_after_s > 0 and run.c_s > 0 and run.omp_s > 0
    text = out.read_text().splitlines()
    assert text[0].startswith("load average at start") and "vadd:4096" in text[2]
    assert text[-1].startswith("load average at end")
    assert capsys.readouterr().out.splitlines()[-1] == text[-1]
