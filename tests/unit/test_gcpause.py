"""esmapper._gcpause: a batch defers the collector's full passes (the generation-2
threshold raised out of reach) and puts the threshold back when the last batch of any
thread ends; ``pause_gc`` switches the collector off instead."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

from esmapper import _gcpause
from esmapper._gcpause import DEFERRED, MAX_HOLD, paused, pausing

THRESHOLD = (700, 10, 10)


@pytest.fixture(autouse=True)
def collector(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Known thresholds and a running collector; the module's process-wide state is back
    to rest after each test (a failing test does not leak a deferral into the next)."""
    was_enabled, was_threshold = gc.isenabled(), gc.get_threshold()
    gc.enable()
    gc.set_threshold(*THRESHOLD)
    monkeypatch.setattr(_gcpause, "_full_passes", -1)
    try:
        yield
        assert _gcpause._depth == 0
        assert _gcpause._saved is None
    finally:
        _gcpause.enable(False)
        monkeypatch.setattr(_gcpause, "_depth", 0)
        monkeypatch.setattr(_gcpause, "_saved", None)
        monkeypatch.setattr(_gcpause, "_switched_off", False)
        gc.set_threshold(*was_threshold)
        (gc.enable if was_enabled else gc.disable)()


def deferred() -> bool:
    return gc.get_threshold() == (700, 10, DEFERRED)


def test_a_batch_defers_full_passes_and_puts_the_threshold_back() -> None:
    with paused():
        assert deferred()
        assert gc.isenabled()  # young passes go on
    assert gc.get_threshold() == THRESHOLD


def test_the_threshold_is_put_back_when_the_batch_raises() -> None:
    with pytest.raises(KeyError), paused():
        raise KeyError("x")
    assert gc.get_threshold() == THRESHOLD


def test_nested_batches_share_one_deferral() -> None:
    with paused():
        with paused():
            assert deferred()
        assert deferred()  # the outer batch still runs
    assert gc.get_threshold() == THRESHOLD


def test_decorated_functions_run_as_batches() -> None:
    seen: list[bool] = []

    @pausing
    def read() -> str:
        seen.append(deferred())
        return "page"

    @paused()
    def search() -> None:
        seen.append(deferred())

    assert read() == "page"
    search()
    assert seen == [True, True]
    assert gc.get_threshold() == THRESHOLD


def test_overlapping_batches_of_two_threads_end_the_deferral_with_the_last() -> None:
    """A starts, B starts, A ends (B still runs: still deferred), B ends (put back)."""
    b_started, b_may_end = threading.Event(), threading.Event()
    seen: dict[str, object] = {}

    def b() -> None:
        with paused():
            b_started.set()
            b_may_end.wait(30)
            seen["b after a ended"] = deferred()

    with paused():
        thread = threading.Thread(target=b)
        thread.start()
        assert b_started.wait(30)
    seen["after a ended"] = deferred()
    b_may_end.set()
    thread.join(30)
    assert seen == {"after a ended": True, "b after a ended": True}
    assert gc.get_threshold() == THRESHOLD


def test_many_threads_entering_and_leaving_at_once_leave_nothing_behind() -> None:
    """The count is kept under one lock: whatever the interleaving, the threshold is the
    application's once every batch ended, and deferred while any runs."""
    threads, rounds = 8, 200
    barrier = threading.Barrier(threads)
    wrong: list[tuple[int, int, int]] = []

    def worker() -> None:
        barrier.wait(30)
        for _ in range(rounds):
            with paused():
                if not deferred():
                    wrong.append(gc.get_threshold())

    workers = [threading.Thread(target=worker) for _ in range(threads)]
    for t in workers:
        t.start()
    for t in workers:
        t.join(60)
    assert wrong == []
    assert gc.get_threshold() == THRESHOLD


def test_thresholds_set_by_the_application_during_a_batch_are_kept() -> None:
    with paused():
        gc.set_threshold(1000, 20, 30)
    assert gc.get_threshold() == (1000, 20, 30)


def test_nothing_is_deferred_while_the_collector_is_off() -> None:
    gc.disable()
    with paused():
        assert gc.get_threshold() == THRESHOLD
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_nothing_is_deferred_when_automatic_passes_are_off() -> None:
    gc.set_threshold(0)
    with paused():
        assert gc.get_threshold()[0] == 0
        assert gc.get_threshold()[2] != DEFERRED
    assert gc.get_threshold()[0] == 0


def test_overlapping_batches_cannot_hold_full_passes_off_for_long(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A batch ending MAX_HOLD seconds after the deferral began puts the threshold back
    although another still runs, and no batch defers again until a full pass ran."""
    now = [100.0]
    monkeypatch.setattr(_gcpause, "_clock", lambda: now[0])
    first = paused()
    first.__enter__()  # thread 1's batch, the deferral begins at 100
    with paused():  # thread 2's batch
        now[0] = 100.0 + MAX_HOLD
        first.__exit__(None, None, None)  # thread 1 ends after MAX_HOLD: put back
        assert gc.get_threshold() == THRESHOLD
        with paused():  # thread 3 starts: no full pass since, so no deferral
            assert gc.get_threshold() == THRESHOLD
        gc.collect()  # a full pass
        with paused():  # now it defers again
            assert deferred()
        assert deferred()  # thread 2's batch still runs
    assert gc.get_threshold() == THRESHOLD


def test_a_batch_ending_before_max_hold_keeps_the_deferral_for_the_others(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [100.0]
    monkeypatch.setattr(_gcpause, "_clock", lambda: now[0])
    first = paused()
    first.__enter__()
    with paused():
        now[0] = 100.0 + MAX_HOLD - 1
        first.__exit__(None, None, None)
        assert deferred()
    assert gc.get_threshold() == THRESHOLD


def test_pause_gc_switches_the_collector_off_during_a_batch() -> None:
    _gcpause.enable(True)
    with paused():
        with paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    assert gc.get_threshold() == THRESHOLD


def test_pause_gc_leaves_a_collector_that_was_off_off() -> None:
    _gcpause.enable(True)
    gc.disable()
    with paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_pause_gc_across_threads_switches_the_collector_on_after_the_last_batch() -> None:
    _gcpause.enable(True)
    started, may_end = threading.Event(), threading.Event()
    seen: list[bool] = []

    def other() -> None:
        with paused():
            started.set()
            may_end.wait(30)
            seen.append(gc.isenabled())

    with paused():
        thread = threading.Thread(target=other)
        thread.start()
        assert started.wait(30)
    seen.append(gc.isenabled())  # the other batch still runs
    may_end.set()
    thread.join(30)
    assert seen == [False, False]
    assert gc.isenabled()
