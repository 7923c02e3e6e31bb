"""``run_migrations(max_parallel=2)`` of ``AV2``/``BV2`` in a process of its own, for the
``kill -9`` test of parallel reindexes: ``python -m
tests.integration.indexes.reindex_parallel_worker CONTROL NAME URL PREFIX`` (run from the
repository root) holds (:func:`tests.integration.pausing.hold_here`) once both reindexes
reached their verify phase: both old indexes write-blocked, both new ones complete, no
alias swapped yet.
"""

from __future__ import annotations

import sys
import threading

import esmapper as em
from esmapper.indexes import ReindexProgress
from esmapper.migrations import run_migrations
from tests.integration.pausing import hold_here

from .test_reindex_parallel import AV2, BV2


def main(argv: list[str]) -> int:
    control, name, url, prefix = argv
    both = threading.Barrier(2)
    guard = threading.Lock()
    seen: set[str] = set()

    def progress(report: ReindexProgress) -> None:
        with guard:
            first = report.phase == "verify" and report.alias not in seen
            if first:
                seen.add(report.alias)
        if first and both.wait() == 0:
            hold_here(control, name)  # the other thread waits at the barrier's exit: held
        elif first:
            threading.Event().wait()

    with em.Mapper(url, models=[AV2, BV2], index_prefix=prefix) as mapper:
        run = run_migrations(mapper, max_parallel=2, progress=progress)
    print(run.result, run.error, file=sys.stderr)  # never reached: killed while held
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
