"""``asp report DIR``: the summary, the Markdown report and the plots of an ``asp bench`` result.

Reads ``DIR/bench.json`` (its format: ``benchmarks.suite``) and nothing else, and writes beside
it:

* ``summary.json``: per point and per example, the numbers the report derives: the speedups
  of the model's choice over CPython, NumPy, Numba and Numba parallel (the peer's time over
  the model's; above 1, ours is faster), the chosen variant, the misprediction penalty (the
  chosen variant's time over the fastest variant of ours, ``bench_selection``'s definition), and
  over all points the geometric mean and maximum penalty and the mispredicted share (a penalty
  above the threshold the result names, 1.05);
* ``report.md``: a Markdown summary of the same, the first calls split into analysis, compile
  and run, every point's times, and the plots;
* ``times.png``, ``penalty.png``, ``first-call.png``: ``benchmarks.plots``.

Per example, the speedups are those at its largest size (over CPython: at the largest size at
which CPython was timed; the size is given).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Iterable, Sequence

from .bench_selection import BUSY_LOAD, _load, _s

FORMAT = "asp-bench/1"
SUMMARY = "summary.json"
MARKDOWN = "report.md"
#: Every file ``write`` may make (``asp bench`` removes them where it writes a new result).
OUTPUTS = (SUMMARY, MARKDOWN, "times.png", "penalty.png", "first-call.png")
#: The peers a speedup is given over, and their names in the report.
OVER = {"python": "CPython", "numpy": "NumPy", "numba": "Numba", "numba-parallel":
        "Numba parallel"}


class ReportError(Exception):
    """The folder holds no bench result this module can read (one line, for the user)."""


def load(folder: Path) -> dict:
    """The bench result of ``folder`` (``ReportError`` if missing or of another format)."""
    path = folder / "bench.json"
    if not path.is_file():
        raise ReportError(f"no bench result in {folder}: {path.name} is missing (write one with "
                          f"asp bench --out {folder})")
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ReportError(f"{path} cannot be read: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ReportError(f"{path} is not an asp bench result of format {FORMAT}")
    return data


# -- the numbers -----------------------------------------------------------------------------------

def _time_of(point: dict, name: str) -> float | None:
    if name in point["variants"]:
        return point["variants"][name]
    return point["peers"].get(name)


def point_summary(point: dict) -> dict[str, Any]:
    acm = point["acm"]["s"]
    speedups = {name: (t / acm if (t := _time_of(point, name)) else None) for name in OVER}
    return {"example": point["example"], "n": point["n"], "choice": point["acm"]["choice"],
            "acm_s": acm, "timed_out": point["acm"]["timed_out"], "oracle": point["oracle"],
            "oracle_s": point["variants"][point["oracle"]], "penalty": point["penalty"],
            "speedup": speedups}


def geomean(values: Iterable[float]) -> float | None:
    values = [v for v in values if v]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def summarize(data: dict) -> dict[str, Any]:
    """Every derived number of the report (written as ``summary.json``)."""
    threshold = data["meta"]["threshold"]
    points = [point_summary(p) for p in data["points"]]
    examples = []
    for example in data["examples"]:
        own = [p for p in points if p["example"] == example["name"]]
        if not own:
            examples.append({"name": example["name"], "points": 0})
            continue
        last = own[-1]
        speedup, at = dict(last["speedup"]), {name: last["n"] for name in OVER}
        with_python = [p for p in own if p["speedup"]["python"]]
        if with_python:  # CPython is not timed at the larger sizes: its largest timed one
            speedup["python"], at["python"] = with_python[-1]["speedup"]["python"], \
                with_python[-1]["n"]
        else:
            at["python"] = None
        penalties = [p["penalty"] for p in own]
        examples.append({"name": example["name"], "points": len(own), "n": last["n"],
                         "choice": last["choice"], "acm_s": last["acm_s"],
                         "timed_out": last["timed_out"],
                         "oracle": last["oracle"], "oracle_s": last["oracle_s"],
                         "penalty_geomean": geomean(penalties), "penalty_max": max(penalties),
                         "mispredicted": sum(p > threshold for p in penalties),
                         "speedup": speedup, "speedup_at": at})
    measured = [e for e in examples if e["points"]]
    penalties = [p["penalty"] for p in points]
    worst = max(points, key=lambda p: p["penalty"]) if points else None
    overall = {"points": len(points), "threshold": threshold,
               "penalty_geomean": geomean(penalties),
               "penalty_max": worst["penalty"] if worst else None,
               "penalty_max_at": f"{worst['example']} n={worst['n']}" if worst else None,
               "mispredicted": sum(p > threshold for p in penalties),
               "speedup_geomean": {name: geomean(e["speedup"][name] for e in measured)
                                   for name in OVER}}
    return {"format": "asp-report/1", "source": "bench.json", "overall": overall,
            "examples": examples, "points": points}


# -- Markdown --------------------------------------------------------------------------------------

def _x(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3g}x" if value < 100 else f"{value:,.0f}x"


def _table(header: Sequence[str], rows: Iterable[Sequence[str]], right_from: int = 1) -> list[str]:
    align = ["---" if i < right_from else "---:" for i in range(len(header))]
    return ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |",
            *("| " + " | ".join(row) + " |" for row in rows)]


def markdown(data: dict, summary: dict, plots: Sequence[str]) -> str:
    meta, overall = data["meta"], summary["overall"]
    platform = [line for line in meta["platform"].splitlines()
                if not line.startswith("CPU cores")]
    out = ["# asp bench: results", "",
           f"Measured {meta['date']} on {meta['cores']} cores; Python {meta['python']}, NumPy "
           f"{meta['numpy']}, Numba {meta['numba'] or 'absent'}; "
           f"{'quick run' if meta['quick'] else 'full sweep'}, {len(data['examples'])} "
           f"example{'s' * (len(data['examples']) != 1)}, {overall['points']} points, "
           f"{meta['run_s'] / 60:.1f} minutes.", "",
           *(f"* {line}" for line in platform),
           f"* load average (1, 5, 15 minutes) at the start {_load(meta['load_start'])}, at the "
           f"end {_load(meta['load_end'])}"
           + (": other processes shared the cores, and these figures are noisy"
              if max(meta["load_start"][0], meta["load_end"][0]) > BUSY_LOAD else ""), "",
           f"Variants of ours: {', '.join(meta['variants'])} (python: the original code, run "
           f"by CPython); peers: {', '.join(meta['peers']) or 'none'}; the model's choice: "
           "acm (the default kernel, `Cls().kernel`).", "",
           f"Cost model: {meta['calibration']}.", ""]
    if meta["notes"]:
        out += ["Notes:", "", *(f"* {note}" for note in meta["notes"]), ""]
    out += ["## Summary", ""]
    if overall["points"]:
        out += [f"The model's choice over all {overall['points']} points: geometric-mean "
                f"penalty {overall['penalty_geomean']:.3f}, maximum "
                f"{overall['penalty_max']:.2f} ({overall['penalty_max_at']}), mispredicted "
                f"{overall['mispredicted']} of {overall['points']} (penalty above "
                f"{overall['threshold']}). The penalty is the chosen variant's time over the "
                "fastest variant's of ours at that point, paired round by round (the median "
                "of its ratios to each variant's time in the same rounds).", ""]
        speed = overall["speedup_geomean"]
        out += ["Speedup of the model's choice at each example's largest size, the peer's time "
                "over ours (above 1: ours is faster), geometric mean over the examples: "
                + ", ".join(f"over {OVER[name]} {_x(speed[name])}" for name in OVER
                            if speed[name] is not None)
                + " (over CPython: at the largest size CPython was timed at).", ""]
    peers = [name for name in OVER if name in meta["peers"]]
    rows = []
    for e in summary["examples"]:
        if not e["points"]:
            rows.append([e["name"], "-", "not measured"] + ["-"] * (4 + len(peers)))
            continue
        at = e["speedup_at"]["python"]
        python = f"{_x(e['speedup']['python'])}" + (f" (n={at})" if at not in (None, e["n"])
                                                     else "")
        rows.append([e["name"], str(e["n"]), e["choice"] or "-",
                     ">" * e["timed_out"] + _s(e["acm_s"]),
                     f"{e['oracle']} {_s(e['oracle_s'])}",
                     f"{e['penalty_geomean']:.2f} / {e['penalty_max']:.2f}", python,
                     *(_x(e["speedup"][name]) for name in peers)])
    out += _table(["example", "largest n", "chosen", "its time", "fastest of ours",
                   "penalty geomean / max", "vs CPython", *(f"vs {OVER[name]}" for name in peers)],
                  rows, right_from=3)
    out += ["", "Speedups: the peer's time over the model's choice's at the largest size (above "
            "1: ours is faster). Penalty over all the example's sizes.", ""]
    out += _first_calls(data)
    out += _every_point(data, summary)
    if plots:
        out += ["## Plots", ""]
        titles = {"times.png": "Time against size per variant; the model's choice ringed",
                  "penalty.png": "Misprediction penalty per example and size",
                  "first-call.png": "First calls: analysis, compile and run"}
        for name in plots:
            out += [f"![{titles.get(name, name)}]({name})", ""]
    return "\n".join(out).rstrip() + "\n"


def _first_calls(data: dict) -> list[str]:
    calls = data["first_calls"]
    if not calls:
        return []
    rows = [[c["example"], str(c["n"]), c["contender"], _s(c["total_s"]),
             _s(c["analysis_s"]) if c["analysis_s"] else "-",
             _s(c["compile_s"]) if c["compile_s"] else "-", _s(c["run_s"]),
             "original code (cold)" if c["cold"] else c["choice"] or c["contender"]]
            for c in calls]
    return ["## First calls", "",
            "Each the first call in a new process with an empty cache (best of "
            f"{data['meta']['settings']['first_rounds']}). Analysis: the kernel's static "
            "analysis; compile: the rest of the first call over a warm call (binding, cost "
            "model, code generation, compiler, loading; Numba's typing and compile); run: a "
            "warm call in that process.", "",
            *_table(["example", "n", "contender", "total", "analysis", "compile", "run", "ran"],
                    rows, right_from=3), ""]


def _every_point(data: dict, summary: dict) -> list[str]:
    names = data["meta"]["variants"] + data["meta"]["peers"]
    rows = []
    for point, derived in zip(data["points"], summary["points"]):
        cells = [_s(t) if (t := _time_of(point, name)) is not None else "skipped"
                 for name in names]
        rows.append([point["example"], str(point["n"]), *cells, point["acm"]["choice"] or "-",
                     ">" * point["acm"]["timed_out"] + _s(point["acm"]["s"]),
                     f"{derived['penalty']:.2f}"])
    return ["## Every point", "", "<details><summary>Best times per contender (skipped: "
            "CPython over its cap, or a peer that failed)</summary>", "",
            *_table(["example", "n", *names, "acm chose", "acm", "penalty"], rows, right_from=2),
            "",
            "</details>", ""]


# -- writing ---------------------------------------------------------------------------------------

def write(folder: Path) -> list[Path]:
    """Read ``folder/bench.json``; write the summary, the Markdown report and the plots;
    return their paths."""
    from . import plots

    data = load(folder)
    summary = summarize(data)
    written = plots.draw_all(data, summary, folder)
    (folder / SUMMARY).write_text(json.dumps(summary, indent=1) + "\n")
    (folder / MARKDOWN).write_text(markdown(data, summary, [p.name for p in written]))
    return [folder / SUMMARY, folder / MARKDOWN, *written]
