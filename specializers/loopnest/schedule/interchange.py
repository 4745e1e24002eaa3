"""Loop interchange on a perfect band, to move parallel loops outward (Allen and Kennedy 6.2).

Given the loops of a perfectly nested band (outermost first) and the direction vectors of the
dependences among its statements at those loops, ``parallel_outward`` picks a new order
greedily: the next loop is the first remaining one that carries no unsatisfied dependence
(it runs in parallel); failing that, the first one whose directions on the unsatisfied
dependences are all ``=`` or ``<`` (it runs sequentially and satisfies those with ``<``). A
permutation is legal when every dependence's permuted vector stays lexicographically
non-negative, which this construction guarantees; if no loop can be placed the band keeps its
order (None).
"""

from __future__ import annotations

from typing import Sequence


def parallel_outward(band: Sequence[int], vectors: Sequence[dict[int, str]]
                     ) -> list[tuple[int, bool]] | None:
    """[(lid, parallel), ...] in the new order, or None if no legal reordering was found.

    ``vectors`` map each band loop to the dependence's direction there (``<``, ``=``, ``>``
    or ``*``); dependences satisfied outside the band must not be passed.
    """
    remaining = list(band)
    unsatisfied = list(vectors)
    order: list[tuple[int, bool]] = []
    while remaining:
        chosen = None
        for lid in remaining:
            if all(v.get(lid, "=") == "=" for v in unsatisfied):
                chosen = (lid, True)
                break
        if chosen is None:
            for lid in remaining:
                if all(v.get(lid, "=") in ("=", "<") for v in unsatisfied):
                    chosen = (lid, False)
                    break
        if chosen is None:
            return None
        lid, parallel = chosen
        if not parallel:
            unsatisfied = [v for v in unsatisfied if v.get(lid, "=") == "="]
        remaining.remove(lid)
        order.append(chosen)
    return order
