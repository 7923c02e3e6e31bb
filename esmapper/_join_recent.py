"""Where this process last wrote each join child: ``(alias, id) -> routing`` (its parent
id), the newest :data:`LIMIT` writes.

A save of a child not loaded reads its stored copy in real time on the shard of the
parent it names (:mod:`esmapper._originals`); a miss may be a copy under another parent.
That copy is looked for by id on every shard (a search: it sees what the index held at its
last refresh), and first, in real time, where this process last wrote that id
(:meth:`esmapper._join.ChildJoin.stray_copies`): a child written a moment ago and moved
at once is found without a refresh. (A copy another process wrote under another parent
less than a refresh interval ago is not found: see "Moving a child" in docs/models.md.)
"""

from __future__ import annotations

import threading
from collections import OrderedDict

__all__ = ["LIMIT", "RecentRoutings"]

#: the writes remembered (the oldest forgotten first)
LIMIT = 10_000


class RecentRoutings:
    """The routing each child id was last written with by this process (thread-safe)."""

    __slots__ = ("_lock", "_routings")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._routings: OrderedDict[tuple[str, str], str] = OrderedDict()

    def written(self, alias: str, id: str, routing: str | None) -> None:
        """``id`` was written with ``routing`` (``None``: removed, forgotten)."""
        key = (alias, id)
        with self._lock:
            if routing is None:
                self._routings.pop(key, None)
                return
            self._routings[key] = routing
            self._routings.move_to_end(key)
            while len(self._routings) > LIMIT:
                self._routings.popitem(last=False)

    def get(self, alias: str, id: str) -> str | None:
        """The routing ``id`` was last written with here (``None``: not known)."""
        with self._lock:
            return self._routings.get((alias, id))
