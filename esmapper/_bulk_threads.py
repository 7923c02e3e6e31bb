"""Sending the chunks of one bulk write from several threads (``bulk_concurrency``).

:class:`esmapper.bulk.BulkWriter` cuts a write into chunks and, with a concurrency above
1, hands them to :func:`send_concurrently`: that many threads each take the next chunk,
send it (one ``POST /_bulk`` and its retries) and fill in its items' outcomes, which sit
at disjoint positions of one list, so the outcomes come back in input order whatever
order the chunks were answered in. Nothing here talks to Elasticsearch itself.
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from esmapper.bulk import BulkAction

__all__ = [
    "check_concurrency",
    "one_write_per_document",
    "same_document_twice",
    "send_concurrently",
]

_ID = operator.attrgetter("id")


def check_concurrency(value: Any) -> int:
    """``value`` as a number of bulk threads; anything but an int >= 1 raises
    ``ValueError`` naming ``bulk_concurrency``."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(
            f"bulk_concurrency={value!r} must be an integer >= 1 (how many _bulk requests "
            "of one write may be in flight at once; 1 sends them one after the other)"
        )
    return value


def _document(a: BulkAction) -> tuple[str, str | None]:
    """Which document an action writes, as far as ordering goes: its id and routing, not
    its target. One document is reached through several names (a write conditioned on a
    version goes to the fence alias of the index it was read from, an add of the same id
    to the model's alias), and the bulk writer cannot tell which names meet in one index:
    two actions of one id in different indexes are ordered too, which costs at most a
    cut chunk and is never wrong."""
    return (str(a.id), a.routing)


def same_document_twice(actions: Sequence[BulkAction]) -> bool:
    """Whether two actions may write the same document (same id and routing, whatever
    their target: :func:`_document`): then the order in which they are applied matters
    and their chunks are sent one after the other."""
    if len(set(map(_ID, actions))) == len(actions):  # the common case: every id once
        return False
    seen: set[tuple[str, str | None]] = set()
    for a in actions:
        if a.id is not None:
            key = _document(a)
            if key in seen:
                return True
            seen.add(key)
    return False


def one_write_per_document(
    chunks: list[list[int]], actions: Sequence[BulkAction]
) -> list[list[int]]:
    """``chunks`` cut further so that no chunk holds two actions on one document (id and
    routing: :func:`_document`): a chunk is cut before an action whose document it
    already holds.

    Why: the items of one ``_bulk`` request are applied in order, but the writer resends
    an item answered 429/503 (or refused by a write block) *after* its request, when the
    later items of that request are applied already. With one write per document in a
    request, and chunks holding the same document sent one after the other (each with all
    its retries before the next starts), every document's writes are applied in the order
    they were given, retried or not."""
    out: list[list[int]] = []
    for chunk in chunks:
        seen: set[tuple[str, str | None]] = set()
        current: list[int] = []
        for i in chunk:
            a = actions[i]
            if a.id is not None:
                key = _document(a)
                if key in seen:
                    out.append(current)
                    current, seen = [], set()
                seen.add(key)
            current.append(i)
        out.append(current)
    return out


def send_concurrently(
    chunks: list[list[int]],
    send: Callable[[list[int]], None],
    threads: int,
) -> None:
    """Send ``chunks`` with ``send`` from ``threads`` threads (each takes the next chunk
    when it is done with one). The first exception raised by ``send`` (a rejected
    request) stops the start of further chunks; the chunks in flight finish, then that
    exception is raised in the calling thread. An exception raised in the calling thread
    while it waits (``KeyboardInterrupt``, a signal handler's) does the same: no chunk
    starts after it, and it is raised once the chunks in flight are answered, so that
    nothing of this write reaches the server after the caller was told it stopped (and
    its cache invalidation runs after the last request)."""
    lock = threading.Lock()
    todo = iter(chunks)
    errors: list[BaseException] = []
    stopped = False

    def worker(finished: threading.Event) -> None:
        try:
            while True:
                with lock:
                    if errors or stopped:
                        return
                    chunk = next(todo, None)
                if chunk is None:
                    return
                try:
                    send(chunk)
                except BaseException as e:  # handed to the calling thread
                    with lock:
                        errors.append(e)
                    return
        finally:
            finished.set()

    # Each worker's end is an Event, not Thread.join(): a join interrupted by a signal may
    # mark a thread that is still running as stopped (bpo-45274), so that waiting for it
    # again returns at once.
    done = [threading.Event() for _ in range(threads)]
    workers = [
        threading.Thread(target=worker, args=(finished,), name=f"esmapper-bulk-{n}", daemon=True)
        for n, finished in enumerate(done)
    ]
    try:
        for t in workers:
            t.start()
        for finished in done:
            finished.wait()
    except BaseException:
        with lock:
            stopped = True  # interrupted: start no further chunk
        for t, finished in zip(workers, done, strict=True):
            if t.ident is not None:  # started (the interrupt may come while starting them)
                finished.wait()  # its request in flight is answered (a second interrupt
                # is not waited on)
        raise
    for t in workers:
        t.join()
    if errors:
        raise errors[0]
