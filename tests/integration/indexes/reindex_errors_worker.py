"""A reindex of ``CodeV2`` (its documents "x"/"y" cannot be copied) in a process of its
own, for the ``kill -9`` test of the error index: ``python -m
tests.integration.indexes.reindex_errors_worker CONTROL NAME URL PREFIX`` (run from the
repository root) holds (:func:`tests.integration.pausing.hold_here`) at the copy's last
progress report: the failures are recorded in the error index, the run has not failed and
rolled back yet (the new index is there, non-empty).
"""

from __future__ import annotations

import sys

import esmapper as em
from esmapper.indexes import ReindexProgress, reindex
from tests.integration.pausing import hold_here

from .test_reindex_errors import CodeV2


def main(argv: list[str]) -> int:
    control, name, url, prefix = argv

    def progress(report: ReindexProgress) -> None:
        if report.phase == "copy" and report.message:  # after the pass and its recording
            hold_here(control, name)

    with em.Mapper(url, models=[CodeV2], index_prefix=prefix) as mapper:
        reindex(mapper, CodeV2, progress=progress)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
