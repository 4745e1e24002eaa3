"""benchmarks.bench_dependence runs and reports its figures (quick mode, few nests)."""

from benchmarks import bench_dependence


def test_benchmark_runs(capsys):
    results = bench_dependence.main(["--quick", "--nests", "10"])
    assert len(results["times"]) == 12
    assert results["precision"]["missed"] == 0  # soundness is not negotiable, even here
    assert "precision over 10 random affine nests" in capsys.readouterr().out
