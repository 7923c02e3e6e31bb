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
``ids`` search on the umbrella alias, which sees a write after the next refresh: for
documents stored outside their id's period by other programs); any other id is looked up
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
    check_entry,
    is_unrouted,
    mget_ids,
    read_params,
    sent_params,
    stored_copies,
    unrouted,
)
from esmapper.indexes.spec import IndexSpec

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


def search_documents(
    client: Elasticsearch,
    spec: IndexSpec,
    ids: Sequence[str],
    *,
    source_includes: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """The stored hits among ``ids``, in no particular order (missing ids omitted).

    Sends ``POST /<umbrella alias>/_search`` with ``{"ids": {"values": [...]}}`` and
    ``seq_no_primary_term=true``, per 1000 ids. Raises the client's ``ApiError`` for an
    answer other than 200 or 404.
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
            size=len(chunk),
            seq_no_primary_term=True,
            **extra,
        )
        if response.meta.status == 200:
            hits += response.body.get("hits", {}).get("hits", [])
    return hits


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
    yet refreshed is not found). ``source_includes``: the ``_source``
    fields wanted (``None``: all, empty: none). Raises the client's ``ApiError`` for
    other answers than 200 and 404.
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
    umbrella alias (:func:`search_documents`), as :func:`get_document` does.
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
    if strays:
        hits += search_documents(client, spec, strays)
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
