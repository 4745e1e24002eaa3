"""lru: a bounded cache (two generations) that forgets what was not used recently."""

import copy
import pickle
import random

import pytest

from asp_core.lru import LRUCache


def test_a_full_generation_turns_over_and_what_was_not_used_goes():
    cache = LRUCache(3)
    for key in "abc":
        cache[key] = key.upper()
    assert cache.get("a") == "A" and len(cache) == 3
    cache.put("d", "D")                 # recent was full: a, b, c become the older generation
    assert list(cache.recent) == ["d"] and cache.get("b") == "B"   # b used: back in recent
    cache.put("e", "E")                 # recent: d, b, e
    cache.put("f", "F")                 # turnover: a and c, never used since, are forgotten
    assert "a" not in cache and "c" not in cache and cache.get("a") is None
    assert sorted(cache) == ["b", "d", "e", "f"] and cache["d"] == "D"
    with pytest.raises(KeyError):
        cache["a"]


def test_keeps_the_most_recent_keys_and_at_most_twice_maxsize():
    cache = LRUCache(8)
    rng = random.Random(1)
    history = []
    for _ in range(2000):
        key = rng.randrange(40)
        if cache.get(key) is None:
            cache.put(key, str(key))
        history.append(key)
        assert len(cache) <= 16
        recent = list(dict.fromkeys(reversed(history)))[:8]   # the 8 most recently used
        assert all(cache.recent.get(k) == str(k) or cache.get(k) == str(k) for k in recent)


def test_writing_an_existing_key_replaces_it_without_a_turnover():
    cache = LRUCache(2)
    cache["a"], cache["b"] = 1, 2
    cache["a"] = 3
    assert cache.items() == [("a", 3), ("b", 2)] and len(cache) == 2


def test_as_a_bounded_set_and_deleting():
    seen = LRUCache(2)
    for key in (1, 2, 3):
        seen.add(key)
    assert 1 in seen and 3 in seen and 4 not in seen
    del seen[1]
    del seen[3]
    assert list(seen) == [2]
    seen.clear()
    assert len(seen) == 0


def test_deep_copies_and_pickles_keep_the_entries_and_the_bound():
    cache = LRUCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    for other in (copy.deepcopy(cache), pickle.loads(pickle.dumps(cache))):
        assert other.maxsize == 2 and sorted(other.items()) == [("a", 1), ("b", 2)]
        other.put("c", 3)
        assert sorted(other) == ["a", "b", "c"] and list(cache.recent) == ["a", "b"]


def test_needs_room_for_one_entry():
    with pytest.raises(ValueError):
        LRUCache(0)


def test_keys_values_and_items_read_both_generations():
    cache = LRUCache(1)
    cache.put("a", 1)
    cache.put("b", 2)                   # turnover: a in the older generation
    assert cache.keys() == ["a", "b"] and cache.values() == [1, 2]
    assert cache.items() == [("a", 1), ("b", 2)]
