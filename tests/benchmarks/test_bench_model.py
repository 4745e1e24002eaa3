"""benchmarks.bench_model: the raw predictions it reports are the model's own for the call it
times (no timing is asserted: figures belong in the benchmark's output)."""

import math

from benchmarks import bench_model


def test_a_point_reports_a_prediction_and_a_time_per_variant(monkeypatch):
    monkeypatch.setattr(bench_model, "device_variants", lambda: [])
    best, predicted = bench_model.measure("saxpy", 4096, ["c"], rounds=1, burst=0.01)
    assert best["c"] > 0 and math.isfinite(best["c"])
    assert predicted["c"] > 0 and "original" in predicted


def test_the_report_summarizes_each_variant(monkeypatch):
    monkeypatch.setattr(bench_model, "device_variants", lambda: [])
    lines = bench_model.run([8], ["saxpy"], rounds=1, burst=0.01)
    assert any(line.startswith("saxpy") for line in lines)
    assert any(line.startswith("c ") and "geomean factor either way" in line for line in lines)
