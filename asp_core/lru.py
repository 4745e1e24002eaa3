"""A bounded in-memory cache that forgets the least recently used entries first.

The per-call memos of the specializers (variants per call signature, plans per binding,
executors, checked signatures) are keyed by values that can take unboundedly many forms, array
lengths among them: unbounded dicts would keep every one for the life of the process. An
``LRUCache`` keeps a bounded number; what it forgets is rebuilt by the next call that needs it
(compiled code from the disk cache, in milliseconds).

Those memos are read on every call, with keys that are rebuilt each time (so each lookup hashes
and compares them afresh, some hundreds of nanoseconds): an exact LRU, which moves an entry on
every hit, would pay a second lookup per call. This one is the two-generation approximation: the
entries used since the last turnover are in ``recent``, a plain dict; the previous generation is
kept aside. A hit in ``recent`` is just that dict's lookup; an entry found in the older
generation moves back into ``recent``; when ``recent`` holds ``maxsize`` entries, it becomes
the older generation and the one before is forgotten. So every entry used since the last
turnover is kept (at least the ``maxsize`` most recently used keys, whatever their pattern),
entries not used for two turnovers are gone, and at most ``2 * maxsize`` are held. The fast
read of a memo on a hot path:

    found = cache.recent.get(key)       # one dict lookup, no Python frame
    if found is None:
        found = cache.get(key)          # the older generation (moved back), or None
        if found is None:
            found = cache.put(key, make())
"""

from __future__ import annotations

from typing import Hashable, Iterator, TypeVar

V = TypeVar("V")


class LRUCache:
    """At most ``2 * maxsize`` entries; those not used during the last two generations of
    ``maxsize`` insertions are forgotten."""

    __slots__ = ("maxsize", "recent", "_older")

    def __init__(self, maxsize: int):
        if maxsize < 1:
            raise ValueError(f"an LRU cache needs room for one entry, not {maxsize}")
        self.maxsize = maxsize
        self.recent: dict = {}   # the current generation (read it directly on hot paths)
        self._older: dict = {}

    def get(self, key: Hashable, default=None):
        """The value of ``key`` (now recently used), or ``default``."""
        try:
            return self.recent[key]
        except KeyError:
            pass
        if key not in self._older:
            return default
        return self.put(key, self._older.pop(key))

    def put(self, key: Hashable, value: V) -> V:
        """Store ``value`` as recently used (turning the generation over if ``recent`` is
        full) and return it."""
        recent = self.recent
        if key not in recent and len(recent) >= self.maxsize:
            self._older = recent
            self.recent = recent = {}
        self._older.pop(key, None)
        recent[key] = value
        return value

    def __setitem__(self, key: Hashable, value) -> None:
        self.put(key, value)

    def __getitem__(self, key: Hashable):
        found = self.get(key, _ABSENT)
        if found is _ABSENT:
            raise KeyError(key)
        return found

    def add(self, key: Hashable) -> None:
        """Use as a bounded set: remember ``key`` (its value is True)."""
        self.put(key, True)

    def __contains__(self, key: Hashable) -> bool:
        return key in self.recent or key in self._older

    def __delitem__(self, key: Hashable) -> None:
        if key in self.recent:
            del self.recent[key]
        else:
            del self._older[key]

    def __len__(self) -> int:
        return len(self.recent) + len(self._older)

    def __iter__(self) -> Iterator:
        """The keys, older generation first."""
        yield from list(self._older)
        yield from list(self.recent)

    def keys(self) -> list:
        return list(self)

    def values(self) -> list:
        return list(self._older.values()) + list(self.recent.values())

    def items(self) -> list[tuple]:
        return list(self._older.items()) + list(self.recent.items())

    def clear(self) -> None:
        self.recent = {}
        self._older = {}

    def __repr__(self) -> str:
        return f"LRUCache(maxsize={self.maxsize}, {len(self)} entries)"


_ABSENT = object()
