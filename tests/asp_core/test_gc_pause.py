"""gc_pause: the cyclic collector off during builds, counted across overlapping builds, and
left as the program had it."""

import gc
import threading

from asp_core import gc_pause


def test_the_collector_is_off_inside_and_back_on_after():
    assert gc.isenabled()
    with gc_pause.paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_overlapping_pauses_end_with_the_last():
    """A build in a background thread that starts inside a call's build and ends after it:
    the collector stays off until the second ends."""
    inside, release, done = threading.Event(), threading.Event(), threading.Event()

    def background():
        with gc_pause.paused():
            inside.set()
            release.wait(10)
        done.set()

    with gc_pause.paused():
        thread = threading.Thread(target=background)
        thread.start()
        assert inside.wait(10)
    assert not gc.isenabled()      # the background build is still under way
    release.set()
    thread.join(10)
    assert done.is_set() and gc.isenabled()


def test_a_program_that_turned_the_collector_off_keeps_it_off():
    gc.disable()
    try:
        with gc_pause.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_an_exception_inside_turns_it_back_on():
    try:
        with gc_pause.paused():
            raise KeyError("a build that fails")
    except KeyError:
        pass
    assert gc.isenabled()
