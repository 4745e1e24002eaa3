"""signature: per-call argument signatures, hashable, with a stable text."""

import numpy as np

from asp_core.signature import (ArraySig, ObjectSig, ScalarSig, _Hashed, signature_of,
                                 signature_text)


def test_arrays():
    a = np.zeros((3, 4), dtype=np.float32)
    assert signature_of([a]) == (ArraySig(np.dtype(np.float32), 2, "C", True),)
    assert signature_of([a[:, ::2]])[0].layout == "S"
    assert signature_of([np.asfortranarray(a)])[0].layout == "S"
    ro = np.arange(3)
    ro.flags.writeable = False
    assert signature_of([ro])[0].writeable is False


def test_scalars_weak_and_strong():
    sig = signature_of([1, 2.0, True, np.float32(1), np.int64(2)])
    assert [s.weak for s in sig] == [True, True, True, False, False]
    assert sig[0].dtype == np.int64 and sig[3].dtype == np.float32


def test_other_objects():
    assert signature_of([[1, 2]]) == (ObjectSig("builtins.list"),)


def test_hashable_and_stable_text():
    a = np.zeros(3)
    assert hash(signature_of([a, 1])) == hash(signature_of([np.ones(3), 5]))
    assert signature_text(signature_of([a, 1.5])) == "(<f8[1d,C], py:<f8)"
    assert isinstance(signature_of([np.float64(1)])[0], ScalarSig)


def test_signatures_hash_once_and_compare_by_value():
    sigs = (ArraySig(np.dtype("f8"), 2, "S"), ScalarSig(np.dtype("i8"), True), ObjectSig("x.Y"))
    for sig in sigs:
        assert type(sig).__hash__ is _Hashed.__hash__  # not the dataclass's per-call hash
        twin = type(sig)(*(getattr(sig, f) for f in sig.__dataclass_fields__))
        assert twin == sig and hash(twin) == hash(sig) and twin is not sig
    assert ArraySig(np.dtype("f8"), 2, "S") != ArraySig(np.dtype("f8"), 2, "C")
