"""A reindex in a process of its own, for the SIGSTOP tests: ``python -m
tests.integration.indexes.reindex_worker CONTROL NAME URL PREFIX LOCK_TTL PAUSE`` (run from
the repository root) reindexes ``ItemV2`` with a ``lock_ttl`` of LOCK_TTL seconds and holds
at PAUSE (:func:`tests.integration.pausing.hold_here`):

- ``swap``: after the renewal made right before the alias swap, as the swap is sent;
- ``copy``: at the first progress report of the copy (the target claimed, still empty);
- ``none``: no pause.

Prints one JSON line: ``{"status": ...}`` or ``{"error": <class name>, "message": ...}``.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from typing import Any

import esmapper as em
from esmapper.indexes import ReindexProgress, _reindex_run, reindex
from tests.integration.pausing import hold_here

from .models import ItemV2


def main(argv: list[str]) -> int:
    control, name, url, prefix, ttl, pause = argv
    held: list[bool] = []

    def hold_once() -> None:
        if not held:
            held.append(True)
            hold_here(control, name)

    if pause == "swap":
        real_swap = _reindex_run._swap

        def swap(run: _reindex_run.Run) -> None:
            hold_once()
            real_swap(run)

        _reindex_run._swap = swap  # type: ignore[assignment]

    def progress(report: ReindexProgress) -> None:
        if pause == "copy" and report.phase == "copy":
            hold_once()

    outcome: dict[str, Any]
    with em.Mapper(url, models=[ItemV2], index_prefix=prefix) as mapper:
        try:
            result = reindex(
                mapper,
                ItemV2,
                progress=progress,
                lock_ttl=dt.timedelta(seconds=float(ttl)),
                lock_wait=dt.timedelta(seconds=40),
            )
            outcome = {"status": result.status}
        except Exception as exc:
            outcome = {"error": type(exc).__name__, "message": str(exc)}
    print(json.dumps(outcome), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
