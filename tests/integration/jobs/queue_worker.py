"""A reindex worker in a process of its own, for the kill -9 and SIGSTOP tests: ``python -m
tests.integration.jobs.queue_worker CONTROL NAME ES_URL PREFIX REDIS_URL QUEUE LEASE
LOCK_TTL PAUSE`` (run from the repository root) takes reindex work items of ``ItemV2`` from
the Redis queue QUEUE (waiting up to 60 s for one: another worker's lease may have to run
out first) with a lease of LEASE seconds and a reindex lock of LOCK_TTL seconds, and holds
at PAUSE (:func:`tests.integration.pausing.hold_here`): ``copy`` (the first progress report
of the copy) or ``none``.

Prints one JSON line: ``{"status": "success"|"failed"|..., "reindex": <status or null>,
"message": ...}``, or ``{"status": "none"}`` when no item came.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
import time
from typing import Any

import esmapper as em
from esmapper.jobs import RedisWorkQueue, ReindexWorker
from tests.integration.indexes.models import ItemV2
from tests.integration.pausing import hold_here


def main(argv: list[str]) -> int:
    control, name, es_url, prefix, redis_url, queue_name, lease, lock_ttl, pause = argv
    held: list[bool] = []

    def progress(report: em.ReindexProgress) -> None:
        if pause == "copy" and report.phase == "copy" and not held:
            held.append(True)
            hold_here(control, name)

    queue = RedisWorkQueue(redis_url, name=queue_name)
    outcome: dict[str, Any] = {"status": "none"}
    with em.Mapper(es_url, models=[ItemV2], index_prefix=prefix, work_queue=queue) as mapper:
        worker = ReindexWorker(
            mapper,
            lease=dt.timedelta(seconds=float(lease)),
            lock_ttl=dt.timedelta(seconds=float(lock_ttl)),
            lock_wait=dt.timedelta(seconds=40),
            progress=progress,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            result = worker.run_once()
            if result is not None:
                details = result.details
                outcome = {
                    "status": result.status.value,
                    "reindex": None if details is None else details.status,
                    "message": result.message,
                }
                break
            time.sleep(0.1)
    queue.close()
    print(json.dumps(outcome), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
