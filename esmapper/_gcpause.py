"""Pausing the cyclic garbage collector around a batch of document work.

A bulk write or a hydration of many hits allocates a few container objects per document
(bodies, states, outcomes) that all stay alive until the batch ends: each allocation
threshold crossed then runs a collection that traverses every live object, documents
included, and finds nothing to free. :func:`paused` switches the collector off for the
batch and back on after it (reference counting still frees everything that is not in a
cycle). Nested and concurrent batches share one pause: the collector is switched back on
when the last one ends, and only when it was on before the first one started.
"""

from __future__ import annotations

import functools
import gc
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

__all__ = ["paused", "pausing"]

P = ParamSpec("P")
R = TypeVar("R")

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def paused() -> Iterator[None]:
    """Run the body with the cyclic garbage collector off (see the module docstring)."""
    global _depth, _was_enabled  # noqa: PLW0603 - one process-wide pause
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            if _was_enabled:
                gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()


def pausing(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn`` run inside :func:`paused`."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with paused():
            return fn(*args, **kwargs)

    return wrapper
