"""The PNG plots of ``asp report`` (``benchmarks.report``), drawn with matplotlib's Agg renderer.

* ``times.png``: per example, the best time against the size (log-log) of every variant of ours
  and every peer, the default kernel's own time (acm) as a black line, and at each size a ring
  on the variant the cost model chose (after the cost-model paper's Figure 6);
* ``penalty.png``: the misprediction penalty per example and size, a heat map (after its
  Figure 5): one row per example, its sizes from left to right, each cell naming its size and
  penalty;
* ``first-call.png``: per example and contender, the first call split into analysis, compile
  and run (stacked bars).

``draw_all(data, summary, folder)`` draws those the result has data for and returns their paths.
Figures are made with ``matplotlib.figure.Figure``, not pyplot: no display, no global state;
saving a PNG renders it with Agg.
"""

from __future__ import annotations

import math
from pathlib import Path

from matplotlib import colormaps
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

DPI = 110
#: Fixed styles, so that a variant looks the same in every panel.
STYLES = {"python": dict(color="0.45", marker="o", label="CPython (python)"),
          "c": dict(color="tab:blue", marker="s", label="c"),
          "opencl": dict(color="tab:purple", marker="D", label="opencl"),
          "cuda": dict(color="tab:pink", marker="D", label="cuda"),
          "numpy": dict(color="tab:orange", marker="^", linestyle="--", label="NumPy"),
          "numba": dict(color="tab:red", marker="v", linestyle="--", label="Numba @njit"),
          "numba-parallel": dict(color="tab:brown", marker="<", linestyle="--",
                                 label="Numba parallel (prange)")}
ACM = dict(color="black", marker="x", linewidth=2.0, markersize=7, alpha=0.7,
           label="acm: the model's choice, measured")
PHASES = (("analysis_s", "analysis", "tab:green"),
          ("compile_s", "compile (the rest of the first call: binding, selection, code "
           "generation, compiler, loading)", "tab:orange"),
          ("run_s", "run (a warm call)", "tab:blue"))


def style(name: str) -> dict:
    """The line style of a contender (OpenMP variants in shades of green by thread count)."""
    if name.startswith("openmp@"):
        threads = int(name.split("@")[1])
        shade = colormaps["Greens"](0.45 + 0.5 * min(1.0, math.log2(threads) / 6))
        return dict(color=shade, marker="o", markersize=4, label=name)
    return STYLES.get(name, dict(label=name))


def draw_all(data: dict, summary: dict, folder: Path) -> list[Path]:
    written = []
    if data["points"]:
        written.append(times(data, folder / "times.png"))
        written.append(penalty(summary, folder / "penalty.png"))
    if data["first_calls"]:
        written.append(first_calls(data, folder / "first-call.png"))
    return written


def _grid(count: int) -> tuple[int, int]:
    cols = min(4, count)
    return math.ceil(count / cols), cols


def times(data: dict, path: Path) -> Path:
    examples = [e["name"] for e in data["examples"]
                if any(p["example"] == e["name"] for p in data["points"])]
    names = data["meta"]["variants"] + data["meta"]["peers"]
    rows, cols = _grid(len(examples))
    width = max(8.0, 4.3 * cols)
    ncol = max(2, min(5, int(width / 2.6)))
    legend_rows = math.ceil((len(names) + 2) / ncol)
    fig = Figure(figsize=(width, 3.4 * rows + 0.6 + 0.25 * legend_rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False)
    for ax, example in zip(axes.flat, examples):
        points = [p for p in data["points"] if p["example"] == example]
        for name in names:
            got = [(p["n"], _time(p, name)) for p in points if _time(p, name) is not None]
            if got:
                kw = {"linestyle": "-", "markersize": 4, "linewidth": 1.3, **style(name)}
                ax.plot(*zip(*got), alpha=0.85, **kw)
        ax.plot([p["n"] for p in points], [p["acm"]["s"] for p in points], **ACM, zorder=4)
        for p in points:  # the ring: on the chosen variant where it is one of the lines
            chosen = p["acm"]["choice"]
            y = p["variants"].get(chosen, p["acm"]["s"])
            ax.plot([p["n"]], [y], marker="o", markersize=13, markerfacecolor="none",
                    markeredgecolor="black", markeredgewidth=1.4, linestyle="none", zorder=5)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(example, fontsize=11, fontweight="bold")
        ax.set_xlabel("size n", fontsize=9)
        ax.set_ylabel("seconds per call", fontsize=9)
        ax.tick_params(labelsize=8)
        ax.grid(True, which="major", alpha=0.3)
    for ax in axes.flat[len(examples):]:
        ax.set_visible(False)
    handles = [Line2D([], [], **{"linestyle": "-", "markersize": 5, **style(name)})
               for name in names]
    handles.append(Line2D([], [], **ACM))
    handles.append(Line2D([], [], marker="o", markersize=11, markerfacecolor="none",
                          markeredgecolor="black", linestyle="none",
                          label="the variant the model chose"))
    fig.suptitle("Time per call against size: warm calls, best of the rounds", fontsize=11)
    fig.legend(handles=handles, loc="outside lower center", ncol=ncol, fontsize=9,
               frameon=False)
    fig.savefig(path, dpi=DPI)
    return path


def _time(point: dict, name: str) -> float | None:
    return point["variants"].get(name, point["peers"].get(name))


def penalty(summary: dict, path: Path) -> Path:
    examples = [e["name"] for e in summary["examples"] if e["points"]]
    rows = [[p for p in summary["points"] if p["example"] == name] for name in examples]
    width = max(len(r) for r in rows)
    values = [[r[i]["penalty"] if i < len(r) else math.nan for i in range(width)] for r in rows]
    top = max(2.0, max(p["penalty"] for r in rows for p in r))
    fig = Figure(figsize=(max(6.5, 2.2 + 1.05 * width), 1.3 + 0.55 * len(rows)),
                 layout="constrained")
    ax = fig.subplots()
    image = ax.imshow(values, cmap="YlOrRd", norm=LogNorm(vmin=1.0, vmax=top), aspect="auto")
    threshold = summary["overall"]["threshold"]
    for y, row in enumerate(rows):
        for x, p in enumerate(row):
            dark = p["penalty"] > math.sqrt(top)
            ax.text(x, y, f"{p['penalty']:.2f}\nn={p['n']}", ha="center", va="center",
                    fontsize=7.5, color="white" if dark else "black",
                    fontweight="bold" if p["penalty"] > threshold else "normal")
    ax.set_yticks(range(len(examples)), examples, fontsize=9)
    ax.set_xticks(range(width), [f"{i + 1}" for i in range(width)], fontsize=8)
    ax.set_xlabel("size, smallest to largest (n in each cell)", fontsize=9)
    ax.set_title(f"Misprediction penalty: the chosen variant's time over the fastest variant's\n"
                 f"(bold: above {threshold}, a misprediction)", fontsize=9.5)
    bar = fig.colorbar(image, ax=ax, fraction=0.04, pad=0.02)
    ticks = [t for t in (1, 1.05, 1.1, 1.25, 1.5, 2, 3, 5, 10, 20, 50, 100) if t <= top]
    bar.set_ticks(ticks, labels=[f"{t:g}" for t in ticks])
    bar.minorticks_off()
    bar.ax.tick_params(labelsize=8)
    bar.set_label("penalty", fontsize=9)
    fig.savefig(path, dpi=DPI)
    return path


def first_calls(data: dict, path: Path) -> Path:
    """At each example's largest first-call size, one bar per contender."""
    largest = {}
    for call in data["first_calls"]:
        largest[call["example"]] = max(largest.get(call["example"], 0), call["n"])
    calls = [c for c in data["first_calls"] if c["n"] == largest[c["example"]]]
    labels = [f"{c['example']} n={c['n']}: {c['contender']}" for c in calls]
    fig = Figure(figsize=(9.5, 1.4 + 0.24 * len(calls)), layout="constrained")
    ax = fig.subplots()
    order = list(largest)  # the examples in the result's order
    for y, call in enumerate(calls):  # every other example on a grey band
        if order.index(call["example"]) % 2:
            ax.axhspan(y - 0.5, y + 0.5, color="0.93", zorder=0)
    left = [0.0] * len(calls)
    for key, label, color in PHASES:
        widths = [c[key] * 1e3 for c in calls]
        ax.barh(range(len(calls)), widths, left=left, color=color, label=label, height=0.7)
        left = [a + b for a, b in zip(left, widths)]
    for y, (c, end) in enumerate(zip(calls, left)):
        ax.text(end, y, f" {_ms(c['total_s'])}" + (" (cold: original code)" if c["cold"] else
                                                    ""), va="center", fontsize=7)
    ax.set_yticks(range(len(calls)), labels, fontsize=7.5)
    ax.set_xlim(0, max(left) * 1.25 if left and max(left) > 0 else 1)
    ax.set_xlabel("milliseconds (new process, empty cache)", fontsize=9)
    ax.set_title("First call in a new process: analysis, compile, run", fontsize=10)
    ax.set_ylim(len(calls) - 0.5, -0.5)
    fig.legend(loc="outside lower center", ncol=3, fontsize=8, frameon=False)
    ax.grid(True, axis="x", alpha=0.3)
    fig.savefig(path, dpi=DPI)
    return path


def _ms(seconds: float) -> str:
    return f"{seconds:.2f} s" if seconds >= 1 else f"{seconds * 1e3:.3g} ms"
