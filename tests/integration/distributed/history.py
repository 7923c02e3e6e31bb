"""Checking a concurrent history of cached reads against the writes of that moment.

Each id is written by one thread only (its owner), so the writes of an id are a sequence.
A read of ``id`` that started at ``t0`` and ended at ``t1`` (``time.monotonic()``, one clock
for every process of the machine) may return the state left by the last write that ended
before ``t0``, or by any later write that started before ``t1`` (those overlap the read).
Anything older is **stale**; its staleness is how long before ``t0`` the state it returned
had been replaced (the end of the write that replaced it).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from typing import Any

import attrs


@attrs.frozen
class Write:
    id: str
    start: float
    end: float
    version: str | None  # None: a remove


@attrs.frozen
class Read:
    id: str
    start: float
    end: float
    version: str | None  # None: not found


@attrs.frozen
class Verdict:
    reads: int
    writes: int
    stale: list[tuple[Read, float]]  # (read, staleness in seconds)
    unexplained: list[Read]  # a version no write produced

    def beyond(self, bound: float) -> list[tuple[Read, float]]:
        """Stale reads whose staleness exceeds ``bound`` seconds."""
        return [(r, s) for r, s in self.stale if s > bound]


def check(writes: Iterable[Write], reads: Iterable[Read]) -> Verdict:
    """Classify every read (see the module docstring). The first write of each id is its
    initial state (``start == end == -inf`` is fine)."""
    by_id: dict[str, list[Write]] = {}
    for w in writes:
        by_id.setdefault(w.id, []).append(w)
    for history in by_id.values():
        history.sort(key=lambda w: w.start)
    ends = {i: [w.end for w in h] for i, h in by_id.items()}
    starts = {i: [w.start for w in h] for i, h in by_id.items()}
    stale: list[tuple[Read, float]] = []
    unexplained: list[Read] = []
    count = 0
    for read in reads:
        count += 1
        history = by_id[read.id]
        done = bisect.bisect_left(ends[read.id], read.start) - 1  # last write ended before
        begun = bisect.bisect_left(starts[read.id], read.end) - 1  # last write begun before end
        allowed = {w.version for w in history[max(done, 0) : begun + 1]}
        if read.version in allowed:
            continue
        older = [j for j in range(max(done, 0)) if history[j].version == read.version]
        if older:
            replaced = history[older[-1] + 1]
            stale.append((read, read.start - replaced.end))
        else:
            unexplained.append(read)
    return Verdict(count, sum(len(h) for h in by_id.values()), stale, unexplained)


def from_json(rows: Sequence[Sequence[Any]], kind: type[Write] | type[Read]) -> list[Any]:
    return [kind(*row) for row in rows]
