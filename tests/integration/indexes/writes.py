"""A write during a version bump that changes no document's content: it keeps a bump from
proving its old index untouched (:mod:`esmapper.indexes._reindex_quiet`), so the tests of
the passes that look for writes made during the run see them run."""

from __future__ import annotations

from collections.abc import Callable

from elasticsearch import Elasticsearch

from esmapper.indexes import ReindexProgress


def rewrite_one(es_client: Elasticsearch, index: str) -> None:
    """Index one document of ``index`` again with its own ``_source`` (a raw write: no
    ``updated_utc`` bump, so no dated pass selects it; its content stays)."""
    hit = es_client.search(index=index, size=1, sort=["_doc"])["hits"]["hits"][0]
    es_client.index(index=hit["_index"], id=hit["_id"], document=hit["_source"])


def after_the_copy(
    es_client: Elasticsearch, index: str, then: Callable[[ReindexProgress], None] | None = None
) -> Callable[[ReindexProgress], None]:
    """A progress callback: :func:`rewrite_one` of ``index`` once the copy pass ended, and
    ``then`` for every report."""
    done: list[bool] = []

    def progress(report: ReindexProgress) -> None:
        if report.phase == "copy" and report.message and not done:
            done.append(True)
            rewrite_one(es_client, index)
        if then is not None:
            then(report)

    return progress
