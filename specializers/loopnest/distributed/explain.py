"""The readable report of an ``on_dask`` call: per nest, how it was cut, or why not.

For each step: the loop partitioned and its values, the boundaries of the blocks and the array
whose chunks gave them, each array's partitioned dimension and halo (with the subscripts that
set it) or why it goes whole to every block, and each reduction and how its blocks' results
combine. Unrolled loops are shown with their trip counts and the steps inside.
"""

from __future__ import annotations

from .partition import ArrayPart, Reduction, Step, Unrolled


def explain_text(run, refusal) -> str:
    fa = run.analysis.source.fa
    lines = [f"kernel {fa.qualname} on Dask arrays ({fa.filename}:{fa.tree.lineno}): "
             f"{len(run.analysis.nests)} top-level loop nest(s)"]
    seen = set()
    for record in run.records:
        seen.add(record.index)
        lines.append("")
        if record.partition is None:
            lines.append(f"nest {record.index} at line {record.line}: refused: "
                         f"{record.refused}")
            continue
        partition = record.partition
        lines.append(f"nest {record.index} at line {record.line}: {partition.steps} step(s)")
        lines += _region(partition.root, record.layouts, "  ")
    for index, nest in enumerate(run.analysis.nests):
        if index not in seen:
            lines += ["", f"nest {index} at line {nest.line}: did not run"
                      + (" (the call stopped at a refusal)" if refusal is not None else "")]
    if refusal is not None:
        lines += ["", f"refused: {refusal}"]
    else:
        lines += ["", "Each block runs its nest through the specializer on a worker: the "
                  "variant the cost model chooses for the block's size (or the kernel's "
                  "backend), compiled once per process through the disk cache."]
    return "\n".join(lines)


def _region(node: Step | Unrolled, layouts: dict, indent: str) -> list[str]:
    if isinstance(node, Unrolled):
        lines = [f"{indent}loop {node.var} (line {node.line}) unrolled: each iteration runs, "
                 "in order:"]
        for child in node.body:
            lines += _region(child, layouts, indent + "  ")
        return lines
    layout = layouts.get(node)
    head = f"{indent}loop {node.var} (line {node.line}) partitioned"
    if layout is None:
        return [head + " (not run)"]
    start, stop, step = layout.loop_range
    cuts = ", ".join(str(c) for c in layout.cuts)
    source = f" (from the chunks of {layout.primary})" if layout.primary else ""
    lines = [f"{head} into {layout.blocks} block(s) of its values; {node.var} in "
             f"range({start}, {stop}, {step})" + (f", cut at {cuts}{source}" if cuts else "")]
    if node.unrolled:
        lines.append(f"{indent}  inside the unrolled loop(s) {', '.join(node.unrolled)}: the "
                     "blocks of each iteration read what the previous steps wrote")
    for part in node.arrays:
        if part.name in layout.whole:
            part = ArrayPart(part.name, None, why_whole=f"its halo {part.halo} exceeds a "
                             "quarter of the array")
        lines.append(f"{indent}  {_part(part)}")
    for reduction in node.reductions:
        lines.append(f"{indent}  {_reduction(reduction)}")
    return lines


def _part(part: ArrayPart) -> str:
    use = "written (each block returns its own rows)" if part.written else "read"
    if part.dim is None:
        return f"{part.name}: whole to every block ({part.why_whole}); {use}"
    low, high = part.halo
    halo = "no halo" if (low, high) == (0, 0) else \
        f"halo {low} row(s) below, {high} above (from {', '.join(part.sources)})"
    return f"{part.name}: dimension {part.dim}, {halo}; {use}"


def _reduction(reduction: Reduction) -> str:
    if reduction.op in ("max", "min"):
        how = (f"each block from its value on entry, the blocks' results combined in block "
               f"order with {reduction.func}")
    else:
        how = ("each block from 0 (or 1), the blocks' results combined in block order and "
               "with the value on entry; floating-point results are reassociated "
               "(exact_reductions=True refuses the partition instead)")
    return f"{reduction.name}: {reduction.op}-reduction over the blocks ({how}, through " \
           "dask.array.reduction)"
