"""bench_selector_noise: the selector alone on simulated series, against a git revision's."""

from benchmarks import bench_selector_noise as bench


def test_a_quiet_series_costs_the_better_variant_and_a_revision_loads():
    quiet = bench.time_slices({"c": 100e-6, "openmp@2": 50e-6}, period=1e9, stall=0.0)
    for module in (bench.selection_module(None), bench.selection_module("HEAD")):
        total, alone = bench.series(module, quiet, (100e-6, 60e-6), calls=2000, seed=0)
        assert alone["openmp@2"] < alone["c"]
        assert alone["openmp@2"] <= total <= 1.05 * alone["openmp@2"]


def test_every_scenario_runs():
    for name, timing, predicted, calls in bench.scenarios():
        total, alone = bench.series(bench.selection_module(None), timing, predicted, 200, 0)
        assert total > 0 and min(alone.values()) > 0, name
