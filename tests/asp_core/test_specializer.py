"""specializer: variant lookup, the fallback chain, warnings once per cause, strict mode, env."""

import warnings

import numpy as np
import pytest

from asp_core.config import Config
from asp_core.errors import (BackendUnavailable, CompileError, SourceLocation,
                             SpecializationError, UnsupportedConstruct)
from asp_core.specializer import FallbackWarning, Specializer, Variant


def double(x):
    return x * 2


class Toy(Specializer):
    """Backends 'fast' and 'slower'; a class attribute says which ones fail and how."""

    backends = ("fast", "slower")
    broken: dict = {}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.builds = []

    def build(self, backend, signature, args):
        self.builds.append((backend, signature))
        if backend in self.broken:
            raise self.broken[backend]
        if backend not in self.backends:
            return super().build(backend, signature, args)
        return Variant(backend, lambda x: ("variant", backend, x * 2))


def run(spec, *args):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = spec(*args)
    return result, [w for w in caught if issubclass(w.category, FallbackWarning)]


def test_first_backend_runs_and_variants_are_reused():
    spec = Toy(double, config=Config())
    assert run(spec, 3)[0] == ("variant", "fast", 6)
    assert spec.last_call.backend == "fast" and spec.last_call.fallback is None
    spec(4)
    spec(np.float64(1))  # another signature: another build
    assert [b for b, _ in spec.builds] == ["fast", "fast"]


def test_fallback_to_next_backend_names_the_cause(monkeypatch):
    monkeypatch.setattr(Toy, "broken", {"fast": BackendUnavailable("no fast hardware")})
    spec = Toy(double, config=Config())
    result, caught = run(spec, 1)
    assert result == ("variant", "slower", 2)
    assert spec.last_call.fallback == "fast: no fast hardware"
    assert len(caught) == 1 and "no fast hardware" in str(caught[0].message)


def test_fallback_to_python_warns_at_the_callers_line_once_by_default(monkeypatch):
    err = UnsupportedConstruct("while loop", SourceLocation("k.py", 7, 4))
    monkeypatch.setattr(Toy, "broken", {"fast": err, "slower": CompileError("boom")})
    spec = Toy(double, config=Config())
    result, caught = run(spec, 5)
    assert result == 10 and spec.last_call.backend == "python"
    assert "k.py:7:4: while loop" in spec.last_call.fallback
    assert len(caught) == 1 and "running plain Python" in str(caught[0].message)
    assert caught[0].filename == __file__   # the caller's line, not the framework's
    result, caught = run(spec, 6)
    assert result == 12 and len(caught) == 1  # simplefilter("always"): every time
    assert len(spec.builds) == 2  # failures are remembered too
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")   # Python's default: once per call site
        for k in range(3):
            spec(k)
    assert len([w for w in caught if issubclass(w.category, FallbackWarning)]) == 1


def test_strict_raises_instead_of_falling_back(monkeypatch):
    err = UnsupportedConstruct("while loop", SourceLocation("k.py", 7, 4))
    monkeypatch.setattr(Toy, "broken", {"fast": err, "slower": err})
    with pytest.raises(SpecializationError, match="while loop") as info:
        Toy(double, strict=True, config=Config())(1)
    assert info.value.location == SourceLocation("k.py", 7, 4)


def test_real_errors_are_not_swallowed(monkeypatch):
    monkeypatch.setattr(Toy, "broken", {"fast": ZeroDivisionError("bug in a specializer")})
    with pytest.raises(ZeroDivisionError):
        Toy(double, config=Config())(1)


def test_forced_backend_and_python():
    assert Toy(double, backend="slower", config=Config())(1) == ("variant", "slower", 2)
    spec = Toy(double, backend="python", config=Config())
    assert spec(2) == 4 and spec.last_call.backend == "python" and spec.last_call.fallback is None
    with pytest.raises(SpecializationError, match="no backend 'gpu'"):
        Toy(double, backend="gpu", strict=True, config=Config())(1)


def test_environment_settings(monkeypatch):
    monkeypatch.setenv("ASP_BACKEND", "slower")
    assert Toy(double)(1) == ("variant", "slower", 2)
    monkeypatch.setenv("ASP_DISABLE_JIT", "1")
    spec = Toy(double)
    assert spec(3) == 6 and spec.last_call.fallback == "disabled by ASP_DISABLE_JIT"
    assert spec.builds == []


def test_keyword_arguments_run_plain_python():
    spec = Toy(double, config=Config())
    with pytest.warns(FallbackWarning, match="keyword arguments"):
        assert spec(x=3) == 6
    assert "keyword" in spec.last_call.fallback


def test_dump_writes_intermediate_forms(tmp_path):
    spec = Toy(double, config=Config(), dump_dir=tmp_path)
    spec.dump("stage.txt", "DAST here")
    assert (tmp_path / "double" / "stage.txt").read_text() == "DAST here"
    Toy(double, config=Config()).dump("ignored.txt", "x")  # no folder: nothing written


def test_clear_forgets_variants():
    spec = Toy(double, config=Config())
    spec(1)
    spec.clear()
    spec(1)
    assert len(spec.builds) == 2


def test_variants_are_bounded_and_the_least_recently_used_are_forgotten(monkeypatch):
    monkeypatch.setattr(Toy, "variant_cache_size", 2)
    spec = Toy(double, config=Config())
    calls = [1, 1.5, np.float32(1), 2, np.int16(1), 3, 2.5]
    for x in calls:              # float (1.5) is not used while three others are: forgotten;
        spec(x)                  # int (1, 2, 3) is used all along: built once
    built = [spec.signature((x,)) for x in (1, 1.5, np.float32(1), np.int16(1), 2.5)]
    assert [sig for _, sig in spec.builds] == built
    assert len(spec._variants) <= 4


def test_forget_backend_drops_only_that_backend(monkeypatch):
    monkeypatch.setattr(Toy, "broken", {"fast": BackendUnavailable("no fast hardware")})
    spec = Toy(double, config=Config())
    run(spec, 1)                 # fast failed (remembered), slower built
    spec.forget_backend("fast")
    run(spec, 1)
    assert [b for b, _ in spec.builds] == ["fast", "slower", "fast"]


def test_a_fault_of_the_environment_is_retried_after_a_while(monkeypatch):
    """A CacheError (the cache folder deleted, not writable ...) may be repaired: the same
    specializer builds again once RETRY_ENVIRONMENT_S has passed, not at every call."""
    from asp_core import specializer as sp
    from asp_core.errors import CacheError

    clock = [100.0]
    monkeypatch.setattr(sp.time, "monotonic", lambda: clock[0])
    builds = []

    class Flaky(sp.Specializer):
        backends = ("c",)

        def build(self, backend, signature, args):
            builds.append(backend)
            if len(builds) == 1:
                raise CacheError("the cache folder /x cannot be used")
            return sp.Variant("c", lambda *a: "compiled")

    flaky = Flaky(lambda x: "python")
    with pytest.warns(sp.FallbackWarning, match="cannot be used"):
        assert flaky(1) == "python"
        assert flaky(1) == "python" and builds == ["c"]      # remembered for a while
    clock[0] += sp.RETRY_ENVIRONMENT_S
    assert flaky(1) == "compiled" and builds == ["c", "c"]


def test_a_user_file_beside_an_internal_folder_is_the_users(monkeypatch, tmp_path):
    """A warning is attributed to the user's file even where its name begins with an internal
    folder's path (``/x/asp`` internal, ``/x/asp_user.py`` the user's): folders are matched
    as folders."""
    import warnings

    from asp_core import specializer

    internal = tmp_path / "asp"
    internal.mkdir()
    monkeypatch.setattr(specializer, "_INTERNAL", specializer._INTERNAL + [str(internal)])
    user_file = str(tmp_path / "asp_user.py")
    code = compile("def call():\n    specializer.warn_once('k', 'a cause')\n", user_file, "exec")
    namespace = {"specializer": specializer}
    exec(code, namespace)  # noqa: S102 - a function whose frames say it is in user_file
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        namespace["call"]()
    assert [w.filename for w in caught] == [user_file]


class Guarded(Toy):
    """Counts the signatures it computes and the choices it makes (``candidates``); its guard
    vouches for a call of the same types."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.signatures = self.choices = 0

    def signature(self, args):
        self.signatures += 1
        return super().signature(args)

    def candidates(self):
        self.choices += 1
        return super().candidates()

    def guard(self, signature, args):
        return lambda a: super(Guarded, self).signature(a) == signature


def test_a_forced_backends_guarded_calls_skip_the_signature_and_the_choice_until_the_variants_go():
    from asp_core.specializer import FAST_CALLS, GUARD_AFTER

    spec = Guarded(double, backend="fast", config=Config())
    warm = (GUARD_AFTER + 2) * (FAST_CALLS + 1)   # (the guard is asked for after a while)
    for x in range(warm):
        assert spec(float(x)) == ("variant", "fast", 2.0 * x)
    assert spec._fast[5] is not None
    before, chosen = spec.signatures, spec.choices
    for x in range(1000):
        assert spec(float(x)) == ("variant", "fast", 2.0 * x)
    assert (spec.signatures, spec.choices) == (before, chosen)
    assert spec.last_call.backend == "fast"
    assert spec(3) == ("variant", "fast", 6)           # another signature: computed, chosen
    assert (spec.signatures, spec.choices) == (before + 1, chosen + 1)
    assert spec(2.5) == ("variant", "fast", 5.0)
    spec.clear()                                       # the variants go: the path too
    assert spec(1.5) == ("variant", "fast", 3.0)
    assert (spec.signatures, spec.choices) == (before + 3, chosen + 3)


class Told(Guarded):
    """Chooses as ``Chosen`` does (defined below); records what ``guarded`` is told, as a specializer keeping per-call state there does
    (``NestRunner`` keeps the call's binding), and what ``signature`` last computed."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.told, self.current = [], None

    def signature(self, args):
        self.current = found = super().signature(args)
        return found

    def guarded(self, signature):
        self.told.append(signature)
        self.current = signature

    def estimates(self, signature, args):
        return Chosen.estimates(self, signature, args)


def test_guarded_is_told_once_per_run_of_warm_calls_and_again_after_a_signature():
    """A run of warm calls the guard vouches for tells ``guarded`` once; a call whose
    signature is computed (another signature) may change the state ``guarded`` set, so the
    next warm call of the first signature tells it again: the state always matches the call."""
    from asp_core.specializer import FAST_CALLS, GUARD_AFTER

    spec = Told(double, config=Config())
    warm = (GUARD_AFTER + 2) * (FAST_CALLS + 1)
    for x in range(warm):
        spec(float(x))
    floats = spec.current
    assert spec._fast[5] is not None
    told = len(spec.told)
    for x in range(100):
        assert spec(float(x)) == ("variant", "fast", 2.0 * x)
        assert spec.current == floats
    assert len(spec.told) - told <= 1          # once for the whole run
    assert spec(3) == ("variant", "fast", 6)   # another signature, computed...
    assert spec.current != floats
    assert spec._fast[0] == floats             # ...while the warm path stays the floats'
    assert spec(2.5) == ("variant", "fast", 5.0)
    assert spec.current == floats              # told again: the state is the call's


class Chosen(Guarded):
    """A cost model's choice: fixed estimates (the fast variant predicted 1 us), counted."""

    ESTIMATES = None

    def estimates(self, signature, args):
        from asp_core.selection import Estimate

        self.asked = getattr(self, "asked", 0) + 1
        if Chosen.ESTIMATES is None:
            Chosen.ESTIMATES = (Estimate("fast", 1e-6, {}), Estimate("slower", 50e-6, {}))
        return Chosen.ESTIMATES


def test_a_stable_choice_is_repeated_until_a_reprobe_is_due_not_every_few_calls():
    """The fast path of the model's choice lasts until the selector's next re-probe (or about
    ``RECHOOSE_S`` of predicted time): a tiny call pays for the estimates and the choice once
    in hundreds of calls, and re-probing keeps its schedule."""
    from asp_core.specializer import FAST_CALLS

    spec = Chosen(double, config=Config())
    calls = 4000
    for x in range(calls):
        spec(float(x))
    assert spec.last_call.backend == "fast"
    assert spec.asked < calls / (4 * FAST_CALLS)   # (every FAST_CALLS + 1 calls before)
    pending = spec._fast[4] - spec._fast[1] if spec._fast else 0   # (told when it ends)
    assert spec.selector._calls + pending == calls  # every call counts for re-probing


class Counted(Chosen):
    """``Chosen``, whose guard vouches only for the value it was made for (a stricter guard
    than the signature: other floats take the path that computes it) and counts what it
    observes; ``native``: the guard is a native one (``asp_core.call_guard``), which counts
    the fast path's calls itself, else a Python function, whose calls the dispatcher counts."""

    native = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.timed = []

    def guard(self, signature, args):
        from asp_core import call_guard as cg

        value = args[0]
        if self.native and type(value) is float:
            return cg.make_guard([cg.float_equal(value)], [])
        return lambda a: type(a[0]) is type(value) and a[0] == value

    def observed(self, estimate, seconds, variant=None):
        self.timed.append(self.selector._calls)
        super().observed(estimate, seconds, variant)


class PythonCounted(Counted):
    native = False


class SteadyClock:
    """``time`` for the dispatcher, whose clock advances 1 us a read: every call measures the
    same, so what the dispatcher does depends on its counts alone."""

    def __init__(self):
        import time

        self.now, self.sleep, self.monotonic = 0.0, time.sleep, time.monotonic

    def perf_counter(self):
        self.now += 1e-6
        return self.now


@pytest.mark.parametrize("seed", range(6))
def test_a_native_guard_counts_and_times_the_calls_as_the_dispatcher_would(seed, monkeypatch):
    """The native guards count the model's fast-path calls in C (``call_guard.count``): over
    generated call sequences (runs of one value, other floats the guard refuses, ints: another
    signature), the calls timed, the choices made and the calls told to the selector are
    those of the same specializer whose Python guard leaves the counting to the dispatcher."""
    import random

    from asp_core import call_guard
    from asp_core import specializer as specializer_module

    if call_guard.unavailable() is not None:
        pytest.skip(f"call guards cannot be built here: {call_guard.unavailable()}")
    monkeypatch.setattr(specializer_module, "time", SteadyClock())
    rng = random.Random(seed)
    calls = []
    while len(calls) < 6000:
        value = rng.choice([1.5, 2.5, 3, rng.random()])
        calls += [value] * rng.choice([1, 7, 64, 300, 1500])
    native, python = Counted(double, config=Config()), PythonCounted(double, config=Config())
    counted = 0
    for x in calls:
        assert native(x) == python(x) == ("variant", "fast", 2 * x)
        counted += bool(native._fast and native._fast[8])
    assert counted > 1000   # (the native guard counted a good share of the calls)
    assert native.timed == python.timed and native.asked == python.asked
    for spec in (native, python):
        spec._end_fast()
        assert spec.selector._calls == len(calls)   # every call counts for re-probing


class Renting(Chosen):
    """The fast variant predicted 1 us but not built (a build of 10 ms predicted); the slower
    one, 50 us, built: its calls rent until their losses reach the build."""

    def estimates(self, signature, args):
        from asp_core.selection import Estimate

        self.asked = getattr(self, "asked", 0) + 1
        built = any(label == "fast" for (_, label) in self._variants.recent)
        return (Estimate("fast", 1e-6, {}, 0.0 if built else 10e-3),
                Estimate("slower", 50e-6, {}))



def test_calls_that_rent_skip_the_choice_and_their_losses_still_pay_for_the_build(
        monkeypatch):
    """While the losses of the best built variant add up towards a faster one's build, the
    calls repeat it on the fast path (a full choice on every call had cost fbcorr on 8 x 8
    images 40 us beside its 18: more than the loss itself), and the build comes when the
    losses reach it, as when every call chose: 10 ms at 49 us a call, the 205th call. (The
    toy's calls are not timed: their microsecond would correct the predictions.)"""
    spec = Renting(double, config=Config())
    monkeypatch.setattr(spec, "observed", lambda estimate, seconds, variant=None: None)
    spec(0.5)   # (its "slower" variant built for floats: the calls below rent it)
    spec.builds.clear()
    spec.asked = 0
    labels = []
    for x in range(400):
        spec(float(x))
        labels.append(spec.last_call.backend)
    assert spec.asked < 400 / 4
    switch = labels.index("fast")
    assert set(labels[:switch]) == {"slower"} and set(labels[switch:]) == {"fast"}
    assert 200 <= switch <= 206
    assert [backend for backend, _ in spec.builds] == ["fast"]


@pytest.mark.parametrize("predicted_s, period", [(1e-7, 256), (1e-6, 64), (10e-6, 8),
                                                 (50e-6, 1), (1.0, 1)])
def test_a_stable_choice_times_fewer_of_its_calls_the_shorter_they_are(predicted_s, period,
                                                                       monkeypatch):
    """Where timing a call costs 0.5 us (two clock reads, the selector's bookkeeping): of the
    calls repeating a choice, every one predicted from 50 us up is timed, one in
    ``_timing_period`` below (1% of their time at most), at least one in 256."""
    from asp_core import specializer
    from asp_core.selection import Estimate

    monkeypatch.setattr(specializer, "timing_cost", lambda: 0.5e-6)
    assert specializer._timing_period(predicted_s) == period
    monkeypatch.setattr(Chosen, "ESTIMATES", (Estimate("fast", predicted_s, {}),
                                              Estimate("slower", 100 * predicted_s, {})))
    spec = Chosen(double, config=Config())
    timed = []
    monkeypatch.setattr(spec, "observed", lambda estimate, seconds, variant=None: timed.append(seconds))
    calls = 2048
    for x in range(calls):
        spec(float(x))
    assert spec.last_call.backend == "fast"
    chooses = spec.asked   # (each call that chooses is timed too)
    assert abs(len(timed) - chooses - (calls - chooses) / period) <= 2 + calls / 256


def test_overlapping_background_jobs_keep_the_short_switch_interval_until_the_last_ends(
        monkeypatch):
    """A build and the call guards' load overlap: the interval goes back to what it was only
    when both are over (each once restored the interval it found: the one that started second
    and ended first put the default back while the other still ran)."""
    import sys

    from asp_core import specializer
    from asp_core.specializer import BUILD_SWITCH_INTERVAL, fast_switching

    monkeypatch.setattr(specializer, "_SWITCHING_USERS", [0, 0.0])  # (another test's builds)
    before = sys.getswitchinterval()
    first, second = fast_switching(), fast_switching()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)   # the first to start ends first...
    try:
        assert sys.getswitchinterval() == pytest.approx(min(before, BUILD_SWITCH_INTERVAL))
    finally:
        second.__exit__(None, None, None)  # ...the interval comes back with the last
    assert sys.getswitchinterval() == pytest.approx(before)


def test_calls_that_choose_give_up_the_gil_while_a_background_job_runs(monkeypatch):
    """A caller busy in Python kept the GIL from a background build (0.1 s alone, 15 s beside
    a loop calling the kernel): each call that chooses gives it up first while one runs."""
    import time as time_module

    from asp_core import specializer
    from asp_core.specializer import fast_switching

    monkeypatch.setattr(specializer, "_SWITCHING_USERS", [0, 0.0])  # (another test's builds)
    yields = []
    monkeypatch.setattr(time_module, "sleep", lambda seconds: yields.append(seconds))
    spec = Chosen(double, config=Config())
    spec._fast = None
    spec(1.0)
    assert yields == []
    with fast_switching():
        for x in range(3):
            spec._fast = None   # (each call chooses)
            assert spec(float(x)) == ("variant", "fast", 2.0 * x)
    assert yields == [0, 0, 0]


def test_what_timing_a_call_costs_is_measured_once_per_process():
    """The timing period follows what timing costs on this machine (``timing_cost``): a call
    whose timing would cost over 1% of it is timed one in a period that brings it there."""
    from asp_core import specializer

    cost = specializer.timing_cost()
    assert specializer.TIMING_COST_S <= cost < 50e-6
    assert specializer.timing_cost() is cost or specializer.timing_cost() == cost  # (once)
    assert specializer._timing_period(cost / specializer.TIMING_SHARE * 1.01) == 1
    assert specializer._timing_period(cost / specializer.TIMING_SHARE * 0.99) == 2
