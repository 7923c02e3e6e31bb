"""Copies a version bump left stale: a document removed and added again under its id in the
old index while the bump ran.

The passes of a bump copy with external versions (:mod:`esmapper.indexes._reindex_pass`): a
document is written to the new index only when its ``_version`` in the old one is higher.
Elasticsearch forgets a delete's version ``index.gc_deletes`` (60 s by default) after it;
a document added again later under the same id starts over at ``_version`` 1, so the
passes skip it as a version conflict and the new index keeps the copy of the removed
document.

The rule, for every model: such a document was written after the copy began, so its
``_seq_no`` in the old index is above the highest one of its shard when the copy began
(:func:`~esmapper.indexes._reindex_quiet.write_marks`, read before the copy: the lowest of
the primaries' ``max_seq_no``,
so with several shards a superset; when no shard's ``max_seq_no`` moved, nothing was
written during the run and nothing is compared). :func:`stale_ids` lists the documents of the old
index above that floor (a server-side ``range`` on ``_seq_no`` where the server answers
it, else an id scroll filtered on the ``_seq_no`` of each hit; ``HasDates`` models narrow
the listing further with ``updated_utc`` >= the copy's start) and compares each with its
copy in the new index: a correct copy carries the old document's ``_version`` (the passes
write with external versions), so another version is a stale copy; with the same version
the copies are compared by content: ``updated_utc`` for ``HasDates`` models, the whole
``_source`` without a reindex script, and without either (a script may change the
source) the copy is taken as stale (copied again: the same result when it was not).
:func:`recreate_ids` deletes the stale copies, and a pass with ``op_type: create`` copies
them again. All this runs under the old index's write block, after the final pass, so
nothing changes meanwhile.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Final

from elasticsearch import Elasticsearch, TransportError

from esmapper._shards import count_all, scroll_all
from esmapper._transport import is_unknown_outcome
from esmapper.errors import IndexConfigurationError
from esmapper.indexes._lookup import listed_id, mget_stored
from esmapper.indexes._reindex_pass import count, delete_ids

if TYPE_CHECKING:
    from esmapper.indexes.spec import IndexSpec

__all__ = ["floor_of", "recreate_ids", "seq_no_query", "stale_ids", "written_ids"]

log = logging.getLogger("esmapper.indexes")

_BATCH: Final = 1000


def floor_of(seq_nos: dict[str, int] | None) -> int:
    """The ``_seq_no`` above which lies every document written after ``seq_nos`` was read
    (``-1``: unknown, every document)."""
    return min(seq_nos.values()) if seq_nos else -1


def seq_no_query(client: Elasticsearch, index: str, floor: int) -> dict[str, Any] | None:
    """``range _seq_no > floor`` when the server answers such a query (Elasticsearch does;
    checked with a count of ``_seq_no >= 0`` against the index's count), else ``None``
    (the hits are then filtered on their ``_seq_no``; ``floor`` < 0, unknown: ``None``).
    Sends the two counts."""
    if floor < 0:
        return None
    total = count(client, index)
    what = f"the _seq_no probe count of {index}"
    probe = count_all(client, what=what, index=index, query={"range": {"_seq_no": {"gte": 0}}})
    return {"range": {"_seq_no": {"gt": floor}}} if total == probe else None


def _written_since(
    client: Elasticsearch, index: str, query: dict[str, Any] | None, floor: int, dated: str | None
) -> Iterator[dict[str, tuple[int, Any]]]:
    """``{id: (_version, updated date)}`` of the documents of ``index`` matching ``query``
    (each id with its hit's ``_routing``: :func:`~esmapper.indexes._lookup.listed_id`)
    whose ``_seq_no`` is above ``floor``, a batch at a time (a scroll; ``_source`` only
    the updated date field ``dated`` when given, else none), every page answered by every shard
    (:func:`esmapper._shards.scroll_all`: else :class:`~esmapper.errors.PartialResultsError`,
    a stale copy must not go unnoticed)."""
    source: dict[str, Any] = {"source_includes": [dated]} if dated else {"source": False}
    pages = scroll_all(
        client,
        what=f"the listing of documents written to {index} during the copy",
        index=index,
        query=query or {"match_all": {}},
        size=_BATCH,
        **source,
        version=True,
        seq_no_primary_term=True,
        sort=["_doc"],
    )
    for hits in pages:
        batch = {
            listed_id(h): (int(h.get("_version") or 0), (h.get("_source") or {}).get(dated or ""))
            for h in hits
            if _above(h, floor)
        }
        if batch:
            yield batch


def written_ids(client: Elasticsearch, index: str, floor: int) -> Iterator[list[str]]:
    """The ids of the documents of ``index`` whose ``_seq_no`` is above ``floor``, a batch
    at a time: a scroll of every document (no ``_source``) filtered on each hit's
    ``_seq_no``, for servers that answer no ``_seq_no`` range (:func:`seq_no_query`);
    every page answered by every shard, else
    :class:`~esmapper.errors.PartialResultsError`."""
    for batch in _written_since(client, index, None, floor, None):
        yield list(batch)


def _above(hit: dict[str, Any], floor: int) -> bool:
    seq_no = hit.get("_seq_no")
    return not isinstance(seq_no, int) or seq_no > floor


def _docs(
    client: Elasticsearch, index: str, ids: list[str], source: Any, spec: IndexSpec
) -> dict[str, dict[str, Any]]:
    """The found documents ``ids`` of ``index`` by id (``POST /<index>/_mget``, real time,
    each id with its hit's routing: :func:`~esmapper.indexes._lookup.mget_stored`;
    ``source``: ``True``, ``False`` or the fields to include). An entry the server
    answers with an error raises :class:`~esmapper.errors.IndexConfigurationError`."""
    option = {"source_includes": source} if isinstance(source, list) else {"source": source}
    found = client.mget(index=index, **mget_stored(spec, ids), **option)["docs"]
    refused = [doc for doc in found if "error" in doc]
    if refused:  # not a missing copy: a stale one would go unnoticed
        raise IndexConfigurationError(
            f"reading {len(refused)} document(s) of {index} failed: {refused[0]['error']}",
            index=index,
            ids=[str(doc.get("_id")) for doc in refused],
        )
    return {str(doc["_id"]): doc for doc in found if doc.get("found")}


def stale_ids(
    client: Elasticsearch,
    old: str,
    new: str,
    *,
    spec: IndexSpec,
    floor: int,
    since: dict[str, Any] | None = None,
    scripted: bool = False,
) -> list[str]:
    """The ids of the documents of ``old`` written since the copy began (``_seq_no`` above
    ``floor``; ``since``: a narrower query, a ``HasDates`` model's) whose copy in ``new`` is
    stale (see the module docstring). A document missing from ``new`` is not stale (a
    reindex script dropped it, or nothing copied it: the final pass did). Sends two counts
    (is ``_seq_no`` searchable) unless ``since`` is given, a scroll over ``old`` (the
    caller refreshed it) and, per batch of 1000, ``POST /<new>/_mget`` (real time) and,
    when whole sources are compared, ``POST /<old>/_mget``, each entry with the request
    parameters of ``spec``'s model (a routing); an entry answered with an error raises
    :class:`~esmapper.errors.IndexConfigurationError` (never taken for a missing copy)."""
    query = since if since is not None else seq_no_query(client, old, floor)
    dates_field = spec.info.updated_field  # every write sets it (esmapper._dates)
    has_dates = dates_field is not None
    by_source = not has_dates and not scripted
    wanted: Any = [dates_field] if has_dates else by_source
    stale: list[str] = []
    for batch in _written_since(client, old, query, floor, dates_field):
        ids = list(batch)
        copies = _docs(client, new, ids, wanted, spec)
        held = _docs(client, old, ids, True, spec) if by_source else {}
        for doc_id, (version, dates) in batch.items():
            copy = copies.get(doc_id)
            if copy is None:
                continue
            if int(copy.get("_version") or 0) != version:
                same = False  # a correct copy carries the old document's version
            elif has_dates:
                same = (copy.get("_source") or {}).get(dates_field or "") == dates
            elif by_source:
                same = copy.get("_source") == (held.get(doc_id) or {}).get("_source")
            else:
                same = False  # a script ran and no date tells: copied again
            if not same:
                stale.append(doc_id)
    return stale


def recreate_ids(client: Elasticsearch, new: str, ids: list[str], *, spec: IndexSpec) -> None:
    """Delete ``ids`` of ``spec``'s model from ``new`` (``_bulk`` deletes with each id's
    request parameters, each sent once, 404 fine), so that the
    pass that follows creates them again (``op_type: create``: a pass run again after an
    unknown outcome, or still running after it, creates nothing twice and overwrites no
    later write). A bulk whose outcome is unknown is sent once more (deletes are
    idempotent, and nothing else writes to ``new`` before the swap)."""
    try:
        delete_ids(client, new, ids, spec=spec)
    except TransportError as exc:
        if not is_unknown_outcome(exc):
            raise
        log.warning("deleting stale copies from %s had an unknown outcome (%s); again", new, exc)
        delete_ids(client, new, ids, spec=spec)
