"""benchmarks.suite and benchmarks.report through the command line: ``asp bench`` on two cheap
examples at two tiny sizes, then ``asp report`` on its result (the JSON, the Markdown and real
PNG plots); the report's numbers on a result made by hand, with a peer missing; the sizes a
sweep takes. Times are not judged here: they belong to the printout."""

import importlib.util
import json
import math

import pytest
from click.testing import CliRunner

from asp_core import cli
from benchmarks import report, suite
from benchmarks.selection_worker import case_named, forced_variants

PNG = b"\x89PNG\r\n\x1a\n"


def _asp(*args: str) -> str:
    result = CliRunner().invoke(cli.cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    return result.output


def test_bench_then_report(tmp_path):
    out = tmp_path / "result"
    out.mkdir()
    (out / "report.md").write_text("the report of an earlier result")
    text = _asp("bench", "--quick", "--only", "vadd,saxpy", "--sizes", "16", "--sizes", "64",
                "--out", str(out), "--no-calibration")
    assert f"written: {out / 'bench.json'}" in text and f"asp report {out}" in text
    assert not (out / "report.md").exists()
    assert text.count(" acm ") == 4  # one line per point

    data = json.loads((out / "bench.json").read_text())
    assert data["format"] == suite.FORMAT and data["meta"]["quick"]
    assert [(e["name"], e["sizes"]) for e in data["examples"]] == [("vadd", [16, 64]),
                                                                   ("saxpy", [16, 64])]
    numba = importlib.util.find_spec("numba") is not None
    peers = ["numpy", "numba", "numba-parallel"] if numba else ["numpy"]
    assert data["meta"]["peers"] == peers and data["meta"]["variants"] == forced_variants()
    assert numba or any("Numba is not installed" in note for note in data["meta"]["notes"])
    assert [(p["example"], p["n"]) for p in data["points"]] == [
        ("vadd", 16), ("vadd", 64), ("saxpy", 16), ("saxpy", 64)]
    for point in data["points"]:
        assert set(point["variants"]) | set(point["skipped"]) == set(forced_variants())
        assert set(point["peers"]) == set(peers)
        assert all(t > 0 for t in [*point["variants"].values(), *point["peers"].values()])
        assert point["acm"]["s"] > 0 and point["acm"]["choice"]
        assert point["oracle"] in point["variants"]
        assert math.isclose(point["pooled_penalty"],
                            point["acm"]["s"] / point["variants"][point["oracle"]])
        assert point["penalty"] > 0   # (paired by round: bench_selection's tests)
    contenders = ["c", "acm"] + (["numba"] if numba else [])
    assert [(c["example"], c["n"], c["contender"]) for c in data["first_calls"]] == [
        (name, 64, contender) for name in ("vadd", "saxpy") for contender in contenders]
    for call in data["first_calls"]:
        assert call["total_s"] > 0 and call["run_s"] > 0
        assert math.isclose(call["total_s"],
                            call["analysis_s"] + call["compile_s"] + call["run_s"])
    c_call = data["first_calls"][0]
    assert c_call["analysis_s"] > 0 and c_call["compile_s"] > 0 and c_call["choice"] == "c"

    text = _asp("report", str(out))
    names = ["summary.json", "report.md", "times.png", "penalty.png", "first-call.png"]
    assert text.startswith("written: ") and all(str(out / name) in text for name in names)
    summary = json.loads((out / "summary.json").read_text())
    assert [e["name"] for e in summary["examples"]] == ["vadd", "saxpy"]
    assert summary["overall"]["points"] == 4
    markdown = (out / "report.md").read_text()
    assert markdown.startswith("# asp bench: results")
    assert "| vadd | 64 |" in markdown and "| saxpy | 64 |" in markdown
    for name in names[2:]:
        image = (out / name).read_bytes()
        assert image.startswith(PNG) and len(image) > 10_000
        assert f"]({name})" in markdown


def _point(example, n, python, c, acm, choice, numba=None):
    variants = {"c": c} if python is None else {"python": python, "c": c}
    oracle = min(variants, key=variants.get)
    return {"example": example, "n": n, "variants": variants,
            "peers": {"numpy": 2 * c, **({"numba": numba} if numba else {})},
            "acm": {"s": acm, "choice": choice, "choices": {choice: 3}, "nests": [],
                    "timed_out": False, "warm_calls": 3},
            "oracle": oracle, "penalty": acm / variants[oracle],
            "skipped": {} if python else {"python": "over the cap (about 9 s)"},
            "medians": {}, "rounds": {}, "wall_s": 0.1}


def _result(numba: bool) -> dict:
    extra = 1e-3 if numba else None
    return {"format": suite.FORMAT,
            "meta": {"date": "2026-01-01 00:00:00", "argv": [], "platform": "CPU: test",
                     "cores": 2, "python": "3.11", "numpy": "2", "numba": "0.6" if numba else
                     None, "quick": True, "settings": {"first_rounds": 1},
                     "calibration": "defaults", "first_call_cache": "", "variants":
                     ["python", "c"], "peers": ["numpy"] + (["numba"] if numba else []),
                     "first_call_contenders": ["acm"], "threshold": 1.05,
                     "notes": [] if numba else ["Numba is not installed (pip install -e "
                                                ".[bench]): numba and numba-parallel are "
                                                "skipped"],
                     "load_start": [0, 0, 0], "load_end": [0, 0, 0], "run_s": 60.0},
            "examples": [{"name": "gemm", "sizes": [16, 32, 64]}, {"name": "jacobi",
                                                                   "sizes": [8]}],
            "points": [_point("gemm", 16, 1e-3, 1e-4, 1e-4, "c", extra),
                       _point("gemm", 32, 8e-3, 5e-4, 1e-3, "python", extra),
                       _point("gemm", 64, None, 2e-3, 2e-3, "c", extra),
                       _point("jacobi", 8, 1e-5, 2e-5, 1.2e-5, "python", extra)],
            "first_calls": [{"example": "gemm", "n": 64, "contender": "acm", "total_s": 0.3,
                             "analysis_s": 0.01, "compile_s": 0.25, "run_s": 0.04,
                             "choice": "c", "second_choice": "c", "cold": False,
                             "rounds": 1}]}


@pytest.mark.parametrize("numba", [True, False], ids=["with numba", "numba missing"])
def test_report_numbers(tmp_path, numba):
    (tmp_path / "bench.json").write_text(json.dumps(_result(numba)))
    written = report.write(tmp_path)
    assert [p.name for p in written] == ["summary.json", "report.md", "times.png",
                                         "penalty.png", "first-call.png"]
    summary = json.loads((tmp_path / "summary.json").read_text())
    gemm, jacobi = summary["examples"]
    assert gemm["n"] == 64 and gemm["choice"] == "c" and gemm["penalty_max"] == 2.0
    assert math.isclose(gemm["penalty_geomean"], 2 ** (1 / 3))
    assert gemm["mispredicted"] == 1 and summary["overall"]["mispredicted"] == 2
    # over CPython at the largest size it was timed at (32: 8 ms / 1 ms), over NumPy at 64
    assert gemm["speedup"]["python"] == 8.0 and gemm["speedup_at"]["python"] == 32
    assert gemm["speedup"]["numpy"] == 2.0 and gemm["speedup_at"]["numpy"] == 64
    assert jacobi["penalty_max"] == 1.2 and summary["overall"]["penalty_max_at"] == "gemm n=32"
    assert (gemm["speedup"]["numba"] == 0.5) if numba else gemm["speedup"]["numba"] is None
    markdown = (tmp_path / "report.md").read_text()
    assert "mispredicted 2 of 4" in markdown and "| gemm | 64 | c |" in markdown
    assert "| 8x (n=32) | 2x |" in markdown and numba == ("| 2x | 0.5x |" in markdown)
    assert numba == ("vs Numba |" in markdown)
    assert numba != ("* Numba is not installed" in markdown)
    for png in written[2:]:
        assert png.read_bytes().startswith(PNG)


def test_quick_sweep_and_first_call_sizes():
    quick, full = suite.settings_for(True), suite.settings_for(False)
    gemm = case_named("gemm")
    assert suite.sweep(gemm, full) == gemm.sizes(full.max_bytes, quick=False)
    assert suite.sweep(gemm, quick) == [16, 64, 256]
    assert suite.sweep(gemm, quick, [8, 1 << 20]) == [8]  # the second passes the memory cap
    assert suite.first_call_sizes([16, 64, 256], quick=True) == [256]
    assert suite.first_call_sizes([4, 8, 16, 32], quick=False) == [4, 16, 32]
    assert suite.first_call_contenders(["python", "c", "openmp@2", "openmp@4"], ["numpy"],
                                       quick=False)[:3] == ["c", "openmp@4", "acm"]
