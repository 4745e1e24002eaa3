"""bench_noise_floor: one variant timed as two contenders, as bench_selection times them."""

from benchmarks import bench_noise_floor as bench


def test_twins_give_a_ratio_per_variant_and_statistic():
    point = bench.twins("vadd", bench.Bench("vadd", 64, bench.VARIANTS), burst=0.002,
                        recheck=True)
    assert set(point) == set(bench.VARIANTS)
    for ratios in point.values():
        assert set(ratios) == {"best", "median", "best paired", "median paired"}
        assert all(r >= 1.0 for r in ratios.values())


def test_the_summary_counts_the_points_past_the_thresholds():
    line = bench.summary([1.0, 1.1, 2.0])
    assert "max 2.00" in line and "above 1.05: 2" in line and "above 1.5: 1 of 3" in line


def test_first_call_twins_time_the_original_code_in_new_processes(tmp_path):
    from benchmarks.bench_selection import empty_cache_template

    template, _ = empty_cache_template(tmp_path)
    ratios = bench.first_call_twins("vadd", 16, template, recheck=False)
    assert set(ratios) == {"first", "first paired"}
    assert all(r >= 1.0 for r in ratios.values())
