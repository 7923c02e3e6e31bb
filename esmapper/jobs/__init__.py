"""Jobs that keep indexes healthy in production.

Every job is an object whose ``run(cancel=None)`` returns a :class:`JobResult`
(``success`` / ``failed`` / ``cancelled``, ``message``, ``error``, ``details``) and never
raises; each takes its lock (a lease renewed by a heartbeat) and logs what it sends at
DEBUG and a one-line summary at INFO (:mod:`esmapper.jobs.base`):

- :class:`MaintainIndexesJob`: time-series aliases and expired partitions (lock
  ``maintenance``);
- :class:`CleanupIndexesJob`: expired partitions, leftovers of successful reindexes and
  dated indexes by pattern; a dry run unless ``dry_run=False`` (lock ``index-cleanup``);
- :class:`SnapshotJob` / :class:`CleanupSnapshotsJob`: take a snapshot and wait for it;
  delete old ones, never the newest successful one (lock ``snapshots:<repository>``);
- :class:`JobRunner`: run jobs once or in a loop with an interval, stopping cleanly on a
  signal (``esmapper maintain --loop --interval 1h``);
- the queue path of reindexing: :class:`ReindexWorkItem` (:mod:`esmapper.jobs._work_items`),
  the :class:`WorkQueue` protocol with :class:`InMemoryWorkQueue`
  (:mod:`esmapper.jobs._work_queue`) and :class:`RedisWorkQueue`
  (:mod:`esmapper.jobs._redis_queue`), :func:`handle_reindex_work_item` and
  :class:`ReindexWorker` (:mod:`esmapper.jobs._reindex_items`;
  ``esmapper jobs reindex-worker``).

The CLI commands (``esmapper maintain``, ``esmapper snapshot create|cleanup``,
``esmapper indexes cleanup``) are thin shells over these.
"""

from esmapper.jobs._redis_queue import RedisWorkQueue
from esmapper.jobs._reindex_items import ReindexWorker, handle_reindex_work_item
from esmapper.jobs._work_items import ReindexWorkItem
from esmapper.jobs._work_queue import InMemoryWorkQueue, Lease, QueueCounts, WorkQueue
from esmapper.jobs.base import Job, JobContext, JobError, JobResult, JobStatus
from esmapper.jobs.durations import format_duration, parse_duration
from esmapper.jobs.indexes import (
    CleanupIndexesJob,
    CleanupItem,
    IndexCleanupReport,
    MaintainIndexesJob,
)
from esmapper.jobs.runner import JobRunner, LoopOutcome, RunOutcome, stop_on_signals
from esmapper.jobs.snapshots import (
    DEFAULT_NAME,
    DEFAULT_REPOSITORY,
    CleanupSnapshotsJob,
    SnapshotCleanupReport,
    SnapshotInfo,
    SnapshotJob,
    SnapshotProgress,
    snapshot_name,
)

__all__ = [
    "CleanupIndexesJob",
    "CleanupItem",
    "CleanupSnapshotsJob",
    "DEFAULT_NAME",
    "DEFAULT_REPOSITORY",
    "InMemoryWorkQueue",
    "IndexCleanupReport",
    "Job",
    "JobContext",
    "JobError",
    "JobResult",
    "JobRunner",
    "JobStatus",
    "Lease",
    "LoopOutcome",
    "MaintainIndexesJob",
    "QueueCounts",
    "RedisWorkQueue",
    "ReindexWorkItem",
    "ReindexWorker",
    "RunOutcome",
    "SnapshotCleanupReport",
    "SnapshotInfo",
    "SnapshotJob",
    "SnapshotProgress",
    "WorkQueue",
    "format_duration",
    "handle_reindex_work_item",
    "parse_duration",
    "snapshot_name",
    "stop_on_signals",
]
