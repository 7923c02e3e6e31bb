"""Reads by id: the one place that builds a GET, HEAD or ``_mget`` of a model's documents.

Every by-id read of a model goes through here, so the request parameters its features ask
for (the ``read_params`` point of :mod:`esmapper._features`: a routing;
:func:`~esmapper.indexes._lookup.read_params`) are on every one of them: the repository's
``get``/``get_many``/``exists`` (:mod:`esmapper._reading`), a patch's read of the stored
document, the time-series lookups of a write's target. (A write's own read-back,
:mod:`esmapper._outcomes` and :mod:`esmapper._fenced`, reads with what the write's action
carries: its ``routing``, set by the ``shape`` point.)

A model that is not time-series is read through its read alias: ``GET``, ``HEAD`` or
``_mget`` with ``ids``. A time-series model: a single-document GET cannot go through the
umbrella alias once it spans several partitions (Elasticsearch: "alias has more than one
index associated with it"). These helpers read by id in real time, like a GET: an ObjectId
id names its period, so its dated alias gets a real-time GET (a miss there falls back to an
``ids`` search on the umbrella alias, for documents stored outside their id's period by
other programs: :func:`search_documents`, whose hits are confirmed in real time where
they were found, so a copy deleted or replaced since the last refresh is never shown as
it was; a copy written there since is not found yet); any other id is looked up
with the real-time ``_mget`` on every partition (:mod:`esmapper.indexes._lookup`), so a
document added a moment ago is found, and a miss means no partition holds it. (The
reference implementation searches for non-ObjectId ids, near-real-time; esmapper does not,
see "Deviations from Foundatio.Repositories" in the CHANGELOG.)

They return raw hits (``_index``, ``_id``, ``_source``, ``_seq_no``, ``_primary_term``), the
shape a GET answers, so the repository builds documents and versions from them as usual. A
missing document is a miss, never an error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from elasticsearch import Elasticsearch, NotFoundError

from esmapper._raw_answers import RawJson, answer, decode_docs, parse
from esmapper._shards import search_all
from esmapper.ids import ObjectId
from esmapper.indexes._lookup import (
    MGET_ENTRIES,
    check_entry,
    is_unrouted,
    mget_ids,
    read_params,
    sent_params,
    stored_copies,
    unrouted,
)
from esmapper.indexes.spec import IndexSpec
from esmapper.indexes.timeseries import parse_partition

__all__ = [
    "document_exists",
    "get_document",
    "get_documents",
    "get_documents_raw",
    "locate_documents",
    "read_params",
    "search_documents",
    "sent_params",
    "unrouted",
]

_IDS_PER_SEARCH = 1000
#: The hits a time-series search by id asks for (Elasticsearch's default
#: ``index.max_result_window``): up to ten copies per id of a full chunk.
_COPIES_WINDOW = 10_000


def search_documents(
    client: Elasticsearch,
    spec: IndexSpec,
    ids: Sequence[str],
    *,
    source_includes: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """The stored copies among ``ids`` (missing ids omitted; a time-series model's copies
    of an id in several partitions: newest partition first).

    Sends ``POST /<read alias>/_search`` with ``{"ids": {"values": [...]}}`` and
    ``seq_no_primary_term=true``, per 1000 ids. A search shows what each shard held at its
    last refresh: a document deleted since is still a hit, a document replaced since shows
    its old source and version. For a time-series model, when the search found anything,
    one real-time ``POST /_mget`` of the hits follows, each on the partition it came from
    with its routing (:func:`_confirmed`); its answers win (not found: left out; found: its
    source and version), so the copies are as stored now. A document written since the
    last refresh into a partition where the search did not see it is not found (nothing
    tells where to look for it). Other models (a join child read by a plain id, whose
    routing only the hit could tell, and a search hit may not carry ``_routing``): the hits
    as the search shows them, near-real-time. Raises the client's
    ``ApiError`` for an answer other than 200 or 404, and DocumentError for an ``_mget``
    entry answered with an error (its document's state is unknown).
    """
    lenient = client.options(ignore_status=404)
    extra = _source_params(source_includes)
    hits: list[dict[str, Any]] = []
    unique = list(dict.fromkeys(ids))
    for start in range(0, len(unique), _IDS_PER_SEARCH):
        chunk = unique[start : start + _IDS_PER_SEARCH]
        response = search_all(  # every shard: a missing hit would read as "not found"
            lenient,
            what=f"the search by id of {spec.read_target}",
            index=spec.read_target,
            query={"ids": {"values": chunk}},
            # a time-series id may have a copy in several partitions: room for them all
            size=_COPIES_WINDOW if spec.is_time_series else len(chunk),
            seq_no_primary_term=True,
            **extra,
        )
        if response.meta.status == 200:
            found = response.body.get("hits", {}).get("hits", [])
            if found and spec.is_time_series:
                hits += _confirmed(client, spec, found, extra)
            else:  # a join child's plain id: no routing to confirm with (documented)
                hits += found
    return _newest_first(spec, hits)


def _confirmed(
    client: Elasticsearch, spec: IndexSpec, hits: Sequence[dict[str, Any]], extra: dict[str, Any]
) -> list[dict[str, Any]]:
    """The live state of the searched ``hits``: one real-time ``POST /_mget`` with an
    entry per hit (``_index`` the hit's partition, ``routing`` its ``_routing``, else
    the id's :func:`sent_params`),
    with the search's ``_source`` parameters ``extra``; the entries found, as the GET
    answers them (``_seq_no``/``_primary_term`` included). An entry answering a missing
    index is not found; any other error raises DocumentError
    (:func:`~esmapper.indexes._lookup.check_entry`)."""
    docs: list[dict[str, Any]] = []
    for hit in hits:
        entry: dict[str, Any] = {"_index": hit["_index"], "_id": hit["_id"]}
        routing = hit.get("_routing")
        if isinstance(routing, str) and routing:
            entry["routing"] = routing
        else:  # the model's routing of the id (a routing_field), if any
            entry.update(sent_params(spec, str(hit["_id"])))
        docs.append(entry)
    live: list[dict[str, Any]] = []
    for start in range(0, len(docs), MGET_ENTRIES):
        response = client.mget(docs=docs[start : start + MGET_ENTRIES], **extra)
        for doc in response.body["docs"]:
            if doc.get("error") is not None:
                check_entry(spec, doc, doc["error"])
            elif doc.get("found"):
                live.append(dict(doc))
    return live


def _newest_first(spec: IndexSpec, hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``hits`` with a time-series model's newest partition (then version) first, as
    :func:`~esmapper.indexes._lookup.stored_copies` orders copies; others as they are."""
    if not spec.is_time_series or len(hits) < 2:
        return hits

    def newest(hit: dict[str, Any]) -> tuple[float, int]:
        partition = parse_partition(spec, str(hit["_index"]))
        if partition is None:  # not a partition of the model: last
            return (float("-inf"), 0)
        return (partition.start.timestamp(), partition.version)

    return sorted(hits, key=newest, reverse=True)


def get_document(
    client: Elasticsearch,
    spec: IndexSpec,
    id: str,
    *,
    source_includes: Sequence[str] | None = None,
) -> dict[str, Any] | None:
    """The stored hit of ``id``, or ``None`` (the document or its index missing).

    A model that is not time-series: ``GET /<read alias>/_doc/<id>``. Time-series: for an
    ObjectId id, ``GET /<dated alias>/_doc/<id>`` (real-time), on a miss
    :func:`search_documents`; for another id, the real-time lookup on every partition
    (:func:`~esmapper.indexes._lookup.stored_copies`; the newest copy if there are
    several). With the id's :func:`read_params`; an id whose routing is unknown (a child
    of a join read by a plain id): :func:`search_documents` (near-real-time: a write not
    yet refreshed is not seen). A time-series stray (an ObjectId id missing from its
    period): :func:`search_documents`, its hits confirmed in real time; of copies in
    several partitions, the newest partition's. ``source_includes``:
    the ``_source`` fields wanted (``None``: all, empty: none). Raises the client's
    ``ApiError`` for other answers than 200 and 404.
    """
    params = {**read_params(spec, id), **_source_params(source_includes)}
    if is_unrouted(params):  # the shard is not known: every shard is searched
        found = search_documents(client, spec, [id], source_includes=source_includes)
        return found[0] if found else None
    if not spec.is_time_series:
        try:
            return dict(client.get(index=spec.read_target, id=id, **params).body)
        except NotFoundError:
            return None
    target = spec.read_index_for_id(id)
    if target != spec.read_target:
        response = client.options(ignore_status=404).get(index=target, id=id, **params)
        if response.meta.status == 200 and response.body.get("found"):
            return dict(response.body)
        found = search_documents(client, spec, [id], source_includes=source_includes)
        return found[0] if found else None
    copies = stored_copies(client, spec, [id], source=_source(source_includes)).get(id)
    return copies[0] if copies else None


def get_documents(
    client: Elasticsearch, spec: IndexSpec, ids: Sequence[str]
) -> list[dict[str, Any]]:
    """The stored hits among ``ids``, in no particular order (missing ids omitted; one copy
    per id, the newest).

    A model that is not time-series: ``POST /<read alias>/_mget`` (``ids``, or ``docs`` with
    each id's :func:`read_params`; the ids whose routing is unknown: :func:`search_documents`,
    as :func:`get_document`); raises the client's ``NotFoundError`` when the alias is
    missing (the caller decides what that means), and DocumentError for an entry answered
    with an error (it cannot tell whether that document is stored). Time-series, real-time:
    :func:`~esmapper.indexes._lookup.stored_copies` (ObjectId ids on their dated alias,
    other ids on every partition); ObjectId ids missing there are then searched on the
    umbrella alias (:func:`search_documents`, confirmed in real time: one more ``_mget``
    per search that found anything), as :func:`get_document` does.
    """
    if not spec.is_time_series:
        searched = unrouted(spec, ids)
        if searched:  # their shards are not known: every shard is searched for them
            skip = set(searched)
            hits = search_documents(client, spec, searched)
            ids = [id for id in ids if id not in skip]
            if not ids:
                return hits
        else:
            hits = []
        response = client.mget(index=spec.read_target, **mget_ids(spec, ids))
        docs = response.body["docs"]
        for doc in docs:  # an entry that failed says nothing about the document
            if doc.get("error") is not None:
                check_entry(spec, doc, doc["error"])
        return hits + [doc for doc in docs if doc.get("found")]
    copies = stored_copies(client, spec, ids, source=True)
    hits = [found[0] for found in copies.values()]
    strays = [id for id in dict.fromkeys(ids) if id not in copies and ObjectId.is_valid(id)]
    if strays:  # one copy per id: the newest partition's (the first)
        newest_last = reversed(search_documents(client, spec, strays))
        hits += {str(h["_id"]): h for h in newest_last}.values()
    return hits


def get_documents_raw(raw: Elasticsearch, spec: IndexSpec, ids: Sequence[str]) -> list[Any]:
    """Every doc of ``POST /<read alias>/_mget`` of ``ids`` (a model that is not
    time-series), found or not, in the answer's order (the request's), sent on the client
    copy ``raw`` (:attr:`esmapper._services.Services.raw_client`): as
    :class:`~esmapper._raw_answers.Hit` s, their ``_source`` left as bytes, or as dicts (the
    answer parsed as the user's client parses it) when the envelope refuses it. Raises as
    :func:`get_documents` does (the error answers as the user's client raises them)."""
    response = answer(lambda: raw.mget(index=spec.read_target, **mget_ids(spec, ids)))
    body = response.body
    docs: list[Any] | None = decode_docs(body) if type(body) is RawJson else None
    if docs is None:
        docs = (parse(body) if isinstance(body, bytes) else body)["docs"]
    return docs


def document_exists(client: Elasticsearch, spec: IndexSpec, id: str) -> bool:
    """Whether ``id`` is stored: ``HEAD /<read alias>/_doc/<id>`` with the id's
    :func:`read_params` (a time-series model, or an id whose routing is unknown:
    :func:`get_document`, without ``_source``)."""
    if spec.is_time_series or is_unrouted(read_params(spec, id)):
        return get_document(client, spec, id, source_includes=()) is not None
    return bool(client.exists(index=spec.read_target, id=id, **read_params(spec, id)))


def locate_documents(client: Elasticsearch, spec: IndexSpec, ids: Sequence[str]) -> dict[str, str]:
    """``id -> the index or alias a by-id write (update, delete) of it must name``.

    Not time-series: every id maps to the write alias, nothing sent. Time-series: an
    ObjectId id maps to its dated alias (nothing sent; the partition may not exist, then
    the write answers 404); the other ids are looked up in real time on every partition
    (:func:`~esmapper.indexes._lookup.stored_copies`) and map to the dated alias of the
    partition holding them (the newest copy; :meth:`IndexSpec.write_name`), unknown ones
    are left out.
    """
    if not spec.is_time_series:
        return dict.fromkeys(ids, spec.write_target)
    targets: dict[str, str] = {}
    others: list[str] = []
    for id in ids:
        if ObjectId.is_valid(id):
            targets[id] = spec.read_index_for_id(id)
        else:
            others.append(id)
    for id, copies in stored_copies(client, spec, others).items():
        targets[id] = spec.write_name(str(copies[0]["_index"]))
    return targets


def _source(includes: Sequence[str] | None) -> bool | Sequence[str]:
    """``stored_copies``' ``source`` for ``includes`` (``None``: all, empty: none)."""
    return True if includes is None else (list(includes) or False)


def _source_params(includes: Sequence[str] | None) -> dict[str, Any]:
    """The ``_source`` parameters of a GET or search for ``includes`` (``None``: the
    whole ``_source``; empty: none, ``_source=false``)."""
    if includes is None:
        return {}
    return {"source_includes": list(includes)} if includes else {"source": False}
