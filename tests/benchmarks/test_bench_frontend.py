"""benchmarks.bench_frontend runs and reports every figure it promises (quick mode)."""

from benchmarks import bench_frontend


def test_benchmark_runs(capsys):
    results = bench_frontend.main(quick=True)
    assert len(results["analysis"]) == 12 and all(t > 0 for t in results["analysis"].values())
    assert "nest dispatch" in capsys.readouterr().out
