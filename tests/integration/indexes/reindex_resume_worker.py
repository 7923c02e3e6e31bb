"""A reindex in a process of its own, for the ``kill -9`` tests of the resumed rerun:
``python -m tests.integration.indexes.reindex_resume_worker CONTROL NAME URL PREFIX MODEL
POINT`` (run from the repository root) reindexes MODEL (``ItemV2``, ``PlainV2`` or the
time-series ``Log2Plain``, with a catch-up margin of 0) and holds
(:func:`tests.integration.pausing.hold_here`) at POINT:

- ``copied``: the copy completed and its record says so (before the catch-up and the block;
  of a time-series model: the first partition's);
- ``copying``: during the copy, at its first progress report (its task started; with URL a
  :class:`~esmapper.testing.cluster.ClusterProxy` whose tasks the test holds, the task
  waits at the proxy and outlives the process, as a real cluster's does).
"""

from __future__ import annotations

import datetime as dt
import sys
from typing import Any

import esmapper as em
from esmapper.indexes import ReindexProgress, _reindex_run, reindex
from esmapper.indexes._reindex_resume import Record
from tests.integration.pausing import hold_here

from .models import ItemV2, PlainV2
from .test_partition_reindex import Log2Plain

MODELS: dict[str, type[Any]] = {"ItemV2": ItemV2, "Log2Plain": Log2Plain, "PlainV2": PlainV2}


def main(argv: list[str]) -> int:
    control, name, url, prefix, model_name, point = argv
    model = MODELS[model_name]

    if point == "copied":
        real_record = _reindex_run.Run.record

        def record(self: _reindex_run.Run, record: Record) -> None:
            real_record(self, record)
            if record.completed:
                hold_here(control, name)

        _reindex_run.Run.record = record  # type: ignore[method-assign]

    def progress(report: ReindexProgress) -> None:
        if point == "copying" and report.phase == "copy" and not report.message:
            hold_here(control, name)

    with em.Mapper(url, models=[model], index_prefix=prefix) as mapper:
        reindex(
            mapper,
            model,
            progress=progress,
            catch_up_margin=dt.timedelta(0),
            lock_wait=dt.timedelta(seconds=40),
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
