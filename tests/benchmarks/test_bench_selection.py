"""benchmarks.bench_selection runs end to end and reports what it promises (quick mode, one
example, warm calls); the penalties are not judged here: targets belong to the printout."""

import json
import re

import numpy as np
import pytest

from benchmarks import bench_selection
from benchmarks.bench_selection import DEFAULT, RULE, Mode, Point, final_line, summarize
from benchmarks.selection_worker import forced_variants

SUMMARY = re.compile(r"ACM: warm \d+\.\d\d/\d+\.\d\d, first-call -/-, loaded -/- "
                     r"\(geomean/max penalty\), mispredicted \d+ of 3")


def test_benchmark_runs(capsys, tmp_path):
    results = bench_selection.main(["--quick", "--only", "vadd", "--modes", "warm",
                                    "--no-calibration", "--out", str(tmp_path / "sel")])
    (mode,) = results["modes"]
    assert mode.name == "warm" and [p.n for p in mode.points] == [16, 256, 4096]
    for point in mode.points:
        assert set(point.times) | set(point.skipped) == set(forced_variants())
        assert all(t > 0 for t in point.times.values())
        assert point.chosen_s[DEFAULT] > 0 and point.chosen_s[RULE] > 0
        assert point.choice[DEFAULT] and point.choice[RULE]
    out = capsys.readouterr().out.splitlines()
    assert any(line.startswith("timing a call: two clock reads") for line in out)
    assert SUMMARY.fullmatch(out[-2]), out[-2]  # the last line of the report
    assert out[-1].startswith("written: ")
    assert (tmp_path / "sel.txt").read_text().splitlines()[-1] == out[-2]
    data = json.loads((tmp_path / "sel.json").read_text())
    assert [p["n"] for p in data["modes"][0]["points"]] == [16, 256, 4096]


def _point(n, fastest, acm, rule):
    return Point("x", n, times={"python": 10.0, "c": fastest},
                 chosen_s={DEFAULT: acm, RULE: rule})


def test_penalties_and_summary_line():
    points = [_point(1, 1.0, 1.0, 2.0), _point(2, 2.0, 2.2, 2.0), _point(4, 1.0, 4.0, 1.0)]
    assert [p.penalty(DEFAULT) for p in points] == [1.0, 1.1, 4.0]
    s = summarize(points, DEFAULT)
    assert s["mispredicted"] == 2 and s["points"] == 3 and s["max"] == 4.0
    assert abs(s["geomean"] - (1.0 * 1.1 * 4.0) ** (1 / 3)) < 1e-12
    modes = [Mode("warm", points, (0, 0, 0), (0, 0, 0)), Mode("loaded", points[:1], (0, 0, 0),
                                                               (0, 0, 0))]
    assert final_line(modes, DEFAULT) == ("ACM: warm 1.64/4.00, first-call -/-, loaded "
                                          "1.00/1.00 (geomean/max penalty), mispredicted 2 of 4")
    assert final_line(modes, RULE).startswith("rule: warm 1.26/2.00,")


def test_the_choice_is_judged_apart_from_the_noise_of_its_own_calls():
    """``choice_penalty``: the forced time of the variant the model ran most, over the
    oracle's; its own calls' time where it ran a mix over several nests."""
    same = Point("x", 1, times={"c": 1.0, "openmp@2": 2.0}, chosen_s={DEFAULT: 1.7},
                 choices={DEFAULT: {"c": 90, "openmp@2": 3}})
    other = Point("x", 2, times={"c": 1.0, "openmp@2": 1.2}, chosen_s={DEFAULT: 1.3},
                  choices={DEFAULT: {"openmp@2": 50}})
    mix = Point("x", 4, times={"c": 1.0}, chosen_s={DEFAULT: 1.4},
                choices={DEFAULT: {"c+openmp@2": 9}})
    assert [p.penalty(DEFAULT) for p in (same, other, mix)] == [1.7, 1.3, 1.4]
    assert [p.choice_penalty(DEFAULT) for p in (same, other, mix)] == [1.0, 1.2, 1.4]
    unlucky = Point("x", 8, times={"c": 1.0, "openmp@2": 50.0}, chosen_s={DEFAULT: 1.1},
                    choices={DEFAULT: {"openmp@2": 9}})   # forced OpenMP's one bad round
    assert unlucky.choice_penalty(DEFAULT) == 1.1
    line = bench_selection._choice_summary("warm", [same, other, mix])
    assert "max 1.40" in line and "of the 1 points above 1.5, 1 ran the fastest" in line
    assert bench_selection.choice_line([Mode("warm", [same], (0,) * 3, (0,) * 3)]) == (
        "ACM's choices timed as forced variants: warm 1.00/1.00, first-call -/-, loaded -/- "
        "(geomean/max penalty)")


def test_the_loaded_mode_judges_median_calls_and_shows_the_best_beside():
    """Under a load put there on purpose, a variant's best burst is its luckiest: the loaded
    mode's times are medians (``STATISTIC``), the best calls a second view."""
    assert bench_selection.STATISTIC == {"warm": "best", "first-call": "best",
                                         "loaded": "median"}
    rounds = {"c": [{"s": 48e-6, "median_s": 49e-6}, {"s": 47e-6, "median_s": 50e-6}],
              "openmp@2": [{"s": 25e-6, "median_s": 539e-6}, {"s": 30e-6, "median_s": 600e-6}],
              DEFAULT: [{"s": 50e-6, "median_s": 51e-6, "choice": "c", "nests": []}]}
    for statistic, oracle in (("best", "openmp@2"), ("median", "c")):
        point = Point("black_scholes", 1024, statistic=statistic)
        bench_selection._record(point, rounds)
        assert point.oracle == oracle
        assert point.bests["openmp@2"] == 25e-6
        assert point.medians["openmp@2"] == pytest.approx(569.5e-6)
    # judged round by round: the model ran one round, paired with each variant's first
    assert point.penalty(DEFAULT) == pytest.approx(51e-6 / 49e-6)
    assert point.pooled_penalty(DEFAULT) == pytest.approx(51e-6 / 49.5e-6)
    assert point.best_penalty(DEFAULT) == pytest.approx(50e-6 / 25e-6)
    assert "on best calls: ACM geomean 2.000" in bench_selection._other_summary("loaded",
                                                                                 [point])


def _settings(recheck, rounds=3):
    return bench_selection.Settings(rounds=rounds, first_rounds=2, burst=0.0, python_cap=2.0,
                                    limit=10.0, max_bytes=1e9, quick=False, recheck=recheck)


def _scripted(times):
    """A ``call`` for ``_timed_rounds`` answering each contender's times in turn (the last
    one over and over), and the contenders it was asked for, in order."""
    asked = []

    def call(name, limit):
        asked.append(name)
        seen = asked.count(name)
        s = times[name][min(seen, len(times[name])) - 1]
        return {"s": s, "median_s": s, "calls": 1, "choice": "c", "nests": []}
    return call, asked


@pytest.mark.parametrize("acm, expect_again, rounds", [
    ([1.6, 1.7, 1.6, 1.0, 1.0, 1.0], True, 6),     # unlucky rounds, then its usual time
    ([1.6, 1.7, 1.6, 1.6, 1.6, 1.6], True, 12),    # truly slower: it stays so, above 1.5
    ([1.0, 1.02, 1.1], False, 3)])                 # within THRESHOLD: not timed again
def test_a_doubtful_point_is_timed_again_for_every_contender(acm, expect_again, rounds):
    """A point whose model's penalty is above THRESHOLD after its rounds is timed as many
    rounds again, every contender still in them (the oracle too: its time may fall as well),
    and judged on all of them; what the first rounds gave is kept and shown. Where it is then
    still above TARGET_MAX, it is timed once more, as many rounds again as it has had."""
    times = {"c": [1.0, 1.0, 1.0, 0.9], "openmp@2": [5.0], "python": [1.2],
             DEFAULT: acm, RULE: [1.0]}
    point = Point("x", 1)
    call, asked = _scripted(times)
    bench_selection._timed_rounds(point, call, ["python", "c", "openmp@2", DEFAULT, RULE],
                                  _settings(recheck=True))
    assert bool(point.recheck) is expect_again
    if not expect_again:
        assert asked.count(DEFAULT) == 3 and asked.count("c") == 3
        assert point.penalty(DEFAULT) == pytest.approx(1.02)   # the median round's
        assert point.pooled_penalty(DEFAULT) == pytest.approx(1.0)  # the best round's
        return
    assert point.recheck["rounds"] == 3
    assert point.recheck["penalty"][DEFAULT] == pytest.approx(1.6)
    assert point.recheck["penalty"][RULE] == pytest.approx(1.0)
    # every contender still in the rounds ran three more (and six more again where still
    # above 1.5); OpenMP, pruned after the first round (five times the fastest), did not
    # come back
    assert [asked.count(n) for n in ("python", "c", DEFAULT, RULE)] == [rounds] * 4
    assert asked.count("openmp@2") == 1
    assert point.rounds[DEFAULT] == rounds and point.times["c"] == 0.9   # the oracle's fell
    assert point.pooled_penalty(DEFAULT) == pytest.approx(min(acm) / 0.9)
    # paired with serial C round by round (its 1.0 three times, then 0.9): the median
    acm_rounds = acm + [acm[-1]] * (rounds - len(acm))
    assert point.penalty(DEFAULT) == pytest.approx(
        float(np.median([a / c for a, c in zip(acm_rounds, [1.0] * 3 + [0.9] * 9)])))
    assert sum(point.choices[DEFAULT].values()) == rounds     # each call counted once
    row = bench_selection._row(point)
    if rounds == 6:
        assert "again" not in point.recheck
        assert row.endswith("(timed again: 1.60 after 3 rounds)")
    else:
        after_six = float(np.median([a / c for a, c in zip(acm, [1.0] * 3 + [0.9] * 3)]))
        assert point.recheck["again"] == {"rounds": 6, "penalty": pytest.approx(after_six)}
        assert row.endswith("(timed again: 1.60 after 3 rounds; once more: 1.74 after 6)")  # (above 1.5)
    modes = [Mode("warm", [point], (0,) * 3, (0,) * 3)]
    assert bench_selection.recheck_line(modes) == (
        "ACM before doubtful points were timed again: warm 1.60/1.60 (1 timed again), "
        "first-call -/-, loaded -/-")


def test_no_point_is_timed_again_unless_asked():
    times = {"c": [1.0], DEFAULT: [1.6]}
    point = Point("x", 1)
    call, asked = _scripted(times)
    bench_selection._timed_rounds(point, call, ["c", DEFAULT], _settings(recheck=False))
    assert not point.recheck and asked.count(DEFAULT) == 3
    assert bench_selection.recheck_line([Mode("warm", [point], (0,) * 3, (0,) * 3)]) is None


def test_penalties_pair_each_round_with_the_same_round_of_the_variants():
    """A time in a round is judged against the variants' times in the same round: where the
    machine's speed changes between rounds (this VM's vCPUs, OpenMP under a load), a
    contender's own median over its rounds can fall on the slow ones while another's falls
    on the fast ones."""
    slow = 60e-6
    rounds = {"c": [{"s": 1e-6, "median_s": x} for x in (1e-6, slow, 1e-6, slow, 1e-6)],
              "openmp@2": [{"s": 1e-6, "median_s": 5e-6}] * 5,
              DEFAULT: [{"s": 1e-6, "median_s": x, "choice": "c", "nests": []}
                        for x in (1e-6, slow, 1e-6, slow, slow)]}
    point = Point("x", 1, statistic="median")
    bench_selection._record(point, rounds)
    assert point.pooled_penalty(DEFAULT) == pytest.approx(60.0)
    # against serial C: 1, 1, 1, 1, 60 (its one fast round against the model's slow one)
    # against OpenMP: 0.2, 12, 0.2, 12, 12; the larger of the two medians
    assert point.penalty(DEFAULT) == pytest.approx(12.0)
    rounds["openmp@2"] = [{"s": 1e-6, "median_s": 100e-6}]   # pruned after its first round
    bench_selection._record(point, rounds)
    assert point.penalty(DEFAULT) == pytest.approx(1.0)
    assert "pooled rounds (unpaired): ACM geomean 60.000, max 60.00, mispredicted 1 of 1" in \
        bench_selection._pooled_summary("loaded", [point])
    assert bench_selection.pooled_line([Mode("loaded", [point], (0,) * 3, (0,) * 3)]) == (
        "ACM on pooled rounds (unpaired): warm -/-, first-call -/-, loaded 60.00/60.00 "
        "(geomean/max penalty)")


def test_a_variant_pruned_after_a_round_does_not_judge_the_point_on_that_round_alone():
    """A variant pruned after its first round (twice the fastest's time or more) is paired
    with the model on that one round: where the model's first round was its bad one, that
    ratio was the point's penalty, though against the fastest variant, over all rounds, the
    model lost little (loaded conv2d at 32, 2.06 against OpenCL's one round, 1.06 against
    serial C's ten). It counts only where it shares ``MIN_PAIRED`` rounds, or is the oracle."""
    model = [517.0] + [8.0] * 9
    point = Point("conv2d", 32, times={"c": 7.7, "opencl": 250.8},
                  round_bests={"c": [8.1] + [7.7] * 9, "opencl": [250.8], DEFAULT: model})
    assert point.penalty(DEFAULT) == pytest.approx(8.0 / 7.7)
    assert point.paired(DEFAULT, {"opencl": [250.8], DEFAULT: model}) is None
    # the oracle counts however few rounds it shares: here the pruned one is the fastest
    point.times = {"c": 300.0, "opencl": 250.8}
    assert point.penalty(DEFAULT) == pytest.approx(517.0 / 250.8)
    # a model with fewer rounds than MIN_PAIRED pairs with every variant on what it has
    point.times = {"c": 7.7, "opencl": 250.8}
    point.round_bests[DEFAULT] = [517.0]
    assert point.penalty(DEFAULT) == pytest.approx(517.0 / 8.1)


def test_the_penalty_is_against_the_variant_the_choice_loses_most_to():
    """``x / min(v) == max(x / v)``: paired with each forced variant, the largest ratio; the
    plain-Python rounds pair too; a point without rounds is judged on its times."""
    point = Point("x", 1, times={"c": 2.0, "openmp@2": 1.0}, chosen_s={DEFAULT: 1.5})
    assert point.penalty(DEFAULT) == point.pooled_penalty(DEFAULT) == 1.5
    point.round_bests = {"c": [2.0, 2.2], "openmp@2": [1.0, 1.1], DEFAULT: [1.5, 1.5]}
    assert point.penalty(DEFAULT) == pytest.approx(np.median([1.5, 1.5 / 1.1]))
    assert point.paired("nobody", point.round_bests) is None
    # first calls are not paired: each is a process of its own (``PAIRED``)
    assert bench_selection.PAIRED == {"warm": True, "first-call": False, "loaded": True}
    point.pairing = False
    assert point.penalty(DEFAULT) == point.pooled_penalty(DEFAULT) == 1.5
    assert point.best_penalty(DEFAULT) is None   # (no bests recorded by hand)
