"""Keeping the cyclic garbage collector's full passes out of a batch of document work.

A bulk write, a search page or a ``get_many`` allocates a few container objects per
document (bodies, states, outcomes) that all stay alive until the batch ends. The
collector's young passes only look at recent objects and stay cheap; its full
(generation 2) passes traverse every live object, i.e. every document the caller holds,
and find nothing to free: at 200,000 documents they were a quarter of ``repo.add``'s
client CPU, and most of its GC time.

By default :func:`paused` *defers* full passes while a batch runs: the generation-2
threshold is raised out of reach at the start of the first batch and put back when the
last one ends. Young passes go on (young cyclic garbage is freed as usual, nothing is
promoted unseen, unlike ``gc.freeze``), and the full pass that was due runs at the first
young pass after the batch. What it costs: cyclic garbage among old objects waits for
the end of the batch. Process-wide, so:

* batches of several threads share one deferral (counted under one lock): the threshold
  is put back when the last batch ends, and only if it is still the one set here (an
  application that called ``gc.set_threshold`` meanwhile keeps its own);
* overlapping batches (a server whose threads write all the time) cannot keep full
  passes away for long: a batch ending :data:`MAX_HOLD` seconds or more after the
  deferral began puts the threshold back even while others run, and no batch defers
  again until a full pass has run;
* nothing is done when the collector is off (``gc.disable()``: no passes to defer).

``Mapper(pause_gc=True)`` (or :func:`enable`) switches the collector off instead while a
batch runs (the young passes too; the collector is switched back on when the last batch
ends, and only if it was on before the first began): for batch jobs and bulk loads. A
change of that setting takes effect at the next batch that starts while none runs.
"""

from __future__ import annotations

import functools
import gc
import threading
import time
from collections.abc import Callable
from contextlib import ContextDecorator
from typing import ParamSpec, TypeVar

__all__ = ["DEFERRED", "MAX_HOLD", "enable", "paused", "pausing"]

P = ParamSpec("P")
R = TypeVar("R")

DEFERRED = 1 << 30
"""The generation-2 threshold while a batch runs (full passes counted in young passes: out
of reach)."""

MAX_HOLD = 30.0
"""Seconds after which the end of a batch puts the threshold back even while other
batches run."""

_clock: Callable[[], float] = time.monotonic  # tests replace it

_lock = threading.Lock()
_depth = 0  # batches running, all threads
_active = False  # pause_gc: switch the collector off instead
_switched_off = False  # the running batches switched the collector off (to switch back on)
_saved: tuple[int, int, int] | None = None  # thresholds to put back while deferring
_since = 0.0  # when the deferral began
_full_passes = -1  # full passes counted when a held deferral was ended (-1: not held)


def enable(flag: bool = True) -> None:
    """Switch the collector off while a batch runs, in this process (``False``, the
    default: defer its full passes only)."""
    global _active  # noqa: PLW0603 - one process-wide setting
    _active = flag


def _full_pass_count() -> int:
    return int(gc.get_stats()[2]["collections"])


def _defer() -> None:
    """Raise the generation-2 threshold (under ``_lock``) unless the collector is off,
    automatic passes are off (threshold 0) or a held deferral ended without a full pass
    since."""
    global _saved, _since
    if not gc.isenabled() or (_full_passes >= 0 and _full_pass_count() == _full_passes):
        return
    threshold = gc.get_threshold()
    if threshold[0] == 0 or threshold[2] >= DEFERRED:
        return
    gc.set_threshold(threshold[0], threshold[1], DEFERRED)
    _saved, _since = threshold, _clock()


def _undefer() -> None:
    """Put the saved thresholds back (under ``_lock``) if they are still the ones set by
    :func:`_defer`."""
    global _saved  # noqa: PLW0603 - one process-wide pause
    assert _saved is not None
    if gc.get_threshold() == (_saved[0], _saved[1], DEFERRED):
        gc.set_threshold(*_saved)
    _saved = None


def _enter() -> None:
    global _depth, _switched_off  # noqa: PLW0603 - one process-wide pause
    with _lock:
        _depth += 1
        if _depth == 1 and _active:
            _switched_off = gc.isenabled()
            if _switched_off:
                gc.disable()
            return
        if _saved is None and not _switched_off:
            _defer()


def _exit() -> None:
    global _depth, _switched_off, _full_passes  # noqa: PLW0603 - one process-wide pause
    with _lock:
        _depth -= 1
        if _depth == 0:
            if _switched_off:
                _switched_off = False
                gc.enable()
            if _saved is not None:
                _undefer()
        elif _saved is not None and _clock() - _since >= MAX_HOLD:
            _undefer()
            _full_passes = _full_pass_count()


class paused(ContextDecorator):
    """The body (or the decorated function) run as a batch: full passes deferred, or the
    collector off with :func:`enable` (see the module docstring)."""

    def __enter__(self) -> None:
        _enter()

    def __exit__(self, *exc: object) -> None:
        _exit()


def pausing(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn`` run inside :func:`paused`."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        _enter()
        try:
            return fn(*args, **kwargs)
        finally:
            _exit()

    return wrapper
