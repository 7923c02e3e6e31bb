"""Copies a version bump left stale: a document removed and added again under its id in the
old index while the bump ran.

The passes of a bump copy with external versions (:mod:`esmapper.indexes._reindex_pass`): a
document is written to the new index only when its ``_version`` in the old one is higher.
Elasticsearch forgets a delete's version ``index.gc_deletes`` (60 s by default) after it;
a document added again later under the same id starts over at ``_version`` 1, so the
passes skip it as a version conflict and the new index keeps the copy of the removed
document. Such a document was written during the bump, so it is among those whose
``updated_utc`` is not older than the copy's start; in the new index its ``updated_utc`` is
the removed document's. :func:`stale_ids` finds them; :func:`recreate_ids` deletes their
copies, and a pass with ``op_type: create`` copies them again. All this runs under the old
index's write block, after the final pass, so nothing changes meanwhile.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any, Final

from elasticsearch import Elasticsearch, TransportError

from esmapper._transport import is_unknown_outcome
from esmapper.indexes._reindex_pass import delete_ids

__all__ = ["recreate_ids", "stale_ids"]

log = logging.getLogger("esmapper.indexes")

_FIELD: Final = "updated_utc"
_BATCH: Final = 1000


def _batches(client: Elasticsearch, index: str, query: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """``{id: updated_utc}`` of the documents of ``index`` matching ``query``, a batch at a
    time (a scroll, ``_source`` limited to ``updated_utc``)."""
    response = client.search(
        index=index, query=query, scroll="2m", size=_BATCH, source_includes=[_FIELD], sort=["_doc"]
    )
    scroll_id = response.get("_scroll_id")
    try:
        while hits := response["hits"]["hits"]:
            yield {str(h["_id"]): (h.get("_source") or {}).get(_FIELD) for h in hits}
            response = client.scroll(scroll_id=scroll_id, scroll="2m")
            scroll_id = response.get("_scroll_id", scroll_id)
    finally:
        if scroll_id:
            client.options(ignore_status=404).clear_scroll(scroll_id=scroll_id)


def stale_ids(client: Elasticsearch, old: str, new: str, query: dict[str, Any]) -> list[str]:
    """The ids of the documents of ``old`` matching ``query`` (those changed since the copy
    started) whose copy in ``new`` has another ``updated_utc``: copies of a document removed
    and added again under its id. A document missing from ``new`` is not stale (a reindex
    script dropped it). Sends a scroll over ``old`` (``_source``: ``updated_utc`` only; the
    caller refreshed it) and, per batch of 1000, ``POST /<new>/_mget`` (real time: ``new``
    needs no refresh)."""
    stale: list[str] = []
    for batch in _batches(client, old, query):
        found = client.mget(index=new, ids=list(batch), source_includes=[_FIELD])["docs"]
        for doc in found:
            doc_id = str(doc.get("_id"))
            if doc.get("found") and (doc.get("_source") or {}).get(_FIELD) != batch[doc_id]:
                stale.append(doc_id)
    return stale


def recreate_ids(client: Elasticsearch, new: str, ids: list[str]) -> None:
    """Delete ``ids`` from ``new`` (``_bulk`` deletes, each sent once, 404 fine), so that the
    pass that follows creates them again (``op_type: create``: a pass run again after an
    unknown outcome, or still running after it, creates nothing twice and overwrites no
    later write). A bulk whose outcome is unknown is sent once more (deletes are
    idempotent, and nothing else writes to ``new`` before the swap)."""
    try:
        delete_ids(client, new, ids)
    except TransportError as exc:
        if not is_unknown_outcome(exc):
            raise
        log.warning("deleting stale copies from %s had an unknown outcome (%s); again", new, exc)
        delete_ids(client, new, ids)
