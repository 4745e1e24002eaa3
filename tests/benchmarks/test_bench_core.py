"""benchmarks.bench_core runs and reports every figure it promises (values are not judged here:
timing targets belong to the benchmark's printout, not to tests)."""

from benchmarks import bench_core


def test_benchmark_runs(capsys):
    results = bench_core.main()
    assert set(results) >= {"cold_build_s", "cached_load_s", "call_overhead_s", "dispatch_overhead_s"}
    assert all(v > 0 for v in results.values())
    assert "cached load in a fresh process" in capsys.readouterr().out
