"""Where time-series ids are stored, in real time (no search): the partitions' ``_mget``.

An id is unique per model, but a time-series model spreads its documents over partitions
picked by date, and Elasticsearch keeps ids unique per index only. Where an id's partition
is not certain, esmapper asks every partition that could hold it, with the real-time
multi-GET (a search would miss what was written in the last refresh interval):

- an ObjectId id carries its date, and esmapper always stores such a document in that
  date's partition (:func:`~esmapper.indexes.timeseries.document_date`): one entry on the
  period's dated alias;
- any other id: one entry per partition behind the umbrella alias (``GET /_alias/<umbrella>``
  lists them; a partition taken out of the umbrella, expired, is not searched: its
  documents are gone for reads too).

Every entry carries the id's request parameters (:func:`read_params`: the model's
features' ``read_params`` point, a routing), as every by-id read of
:mod:`esmapper.indexes.reads` does.

The by-id requests of documents a listing found (a version bump's deletes and ``_mget``
entries in its new index) route with what the listing's hits said instead: each hit's
``_routing`` travels with its id (:func:`listed_id`, an :class:`~esmapper.ids.Id`) to
:func:`stored_params`. A child of a parent/child join (whose routing its id does not
tell) is then deleted and read on its own shard, whichever model's spec runs the bump.

Cost: ``GET /_alias/<umbrella>`` (when a non-ObjectId id is asked for) plus one
``POST /_mget`` per :data:`MGET_ENTRIES` entries, ``ids x partitions`` entries for the
non-ObjectId ids (without ``_source`` when only the place is wanted).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from elasticsearch import Elasticsearch, NotFoundError

from esmapper.errors import DocumentError
from esmapper.ids import Id, ObjectId, routing_of
from esmapper.indexes.timeseries import parse_partition

if TYPE_CHECKING:
    from esmapper.indexes.spec import IndexSpec

__all__ = [
    "MGET_ENTRIES",
    "check_entry",
    "is_unrouted",
    "listed_id",
    "live_partitions",
    "mget_ids",
    "mget_stored",
    "read_params",
    "sent_params",
    "stored_copies",
    "stored_params",
    "unrouted",
]

MGET_ENTRIES: Final = 10_000
"""Entries per ``_mget`` request."""

#: Entry errors that mean "not there": the partition or dated alias does not exist.
_MISSING: Final = frozenset({"index_not_found_exception"})


def read_params(spec: IndexSpec, id: str) -> dict[str, Any]:
    """The request parameters of a by-id read of ``id`` (a GET, a HEAD, an ``_mget``
    entry): what the ``read_params`` point of the model's features gives (a routing); empty
    for a model none of them shapes. ``{"routing": None}`` (:func:`is_unrouted`): the
    document has a routing the id does not give (a child of a join read by a plain id);
    the read searches for it by id instead (:mod:`esmapper.indexes.reads`)."""
    hooks = spec.info.points.read_params
    if not hooks:
        return {}
    params: dict[str, Any] = {}
    for hook in hooks:
        params.update(hook(id))
    return params


def sent_params(spec: IndexSpec, id: str) -> dict[str, Any]:
    """:func:`read_params` as a request sends them: an unknown routing left out (a
    request that cannot search instead, such as an ``_mget`` entry or a bulk delete, goes
    without one)."""
    params = read_params(spec, id)
    return {k: v for k, v in params.items() if v is not None} if params else params


def is_unrouted(params: dict[str, Any]) -> bool:
    """Whether :func:`read_params` says the routing is unknown (``{"routing": None}``)."""
    return "routing" in params and params["routing"] is None


def unrouted(spec: IndexSpec, ids: Sequence[str]) -> list[str]:
    """The ``ids`` whose routing is unknown (:func:`is_unrouted`); none without a feature
    giving :func:`read_params`."""
    if not spec.info.points.read_params:
        return []
    return [id for id in ids if is_unrouted(read_params(spec, id))]


def listed_id(hit: dict[str, Any]) -> str:
    """The id of a search or scroll hit, carrying the hit's ``_routing`` (an
    :class:`~esmapper.ids.Id`; a plain ``str`` for a document stored without one) for
    :func:`stored_params`."""
    routing = hit.get("_routing")
    id = str(hit["_id"])
    return Id(id, routing=routing) if isinstance(routing, str) and routing else id


def stored_params(spec: IndexSpec | None, id: str) -> dict[str, Any]:
    """The request parameters of a by-id request (a bulk delete, an ``_mget`` entry) of a
    document a listing found: the routing its hit carried (:func:`listed_id`), else the
    model's (:func:`sent_params`; none without ``spec``). Unlike a user's read, the
    stored routing wins whatever the model: it is where the document is."""
    routing = routing_of(id)
    if routing is not None:
        return {"routing": routing}
    return sent_params(spec, id) if spec is not None else {}


def mget_stored(spec: IndexSpec, ids: Sequence[str]) -> dict[str, Any]:
    """The body of an ``_mget`` of the documents ``ids`` a listing found, on one index:
    ``{"docs": [{"_id": ..., **stored_params}]}``, or plain ``{"ids": [...]}`` when no
    entry has parameters."""
    docs = [{"_id": str.__str__(id), **stored_params(spec, id)} for id in ids]
    if all(len(doc) == 1 for doc in docs):
        return {"ids": [doc["_id"] for doc in docs]}
    return {"docs": docs}


def mget_ids(spec: IndexSpec, ids: Sequence[str]) -> dict[str, Any]:
    """The body of an ``_mget`` of ``ids`` of ``spec``'s model on one index: ``{"docs":
    [{"_id": ..., **read_params}]}``, or plain ``{"ids": [...]}`` for a model whose
    features give no :func:`read_params` (the model's alias, a physical index of it)."""
    if not spec.info.points.read_params:
        return {"ids": list(ids)}
    return {"docs": [{"_id": id, **sent_params(spec, id)} for id in ids]}


def live_partitions(client: Elasticsearch, spec: IndexSpec) -> list[str]:
    """The partitions behind ``spec``'s umbrella alias, newest period (then version) first.

    Sends ``GET /_alias/<umbrella alias>``; a missing alias is no partition.
    """
    try:
        body = client.indices.get_alias(name=spec.alias).body
    except NotFoundError:
        return []
    partitions = [p for p in (parse_partition(spec, name) for name in body) if p is not None]
    partitions.sort(key=lambda p: (p.start, p.version), reverse=True)
    return [p.index for p in partitions]


def stored_copies(
    client: Elasticsearch,
    spec: IndexSpec,
    ids: Sequence[str],
    *,
    source: bool | Sequence[str] = False,
) -> dict[str, list[dict[str, Any]]]:
    """``id -> every stored copy`` (raw GET answers: ``_index`` is the partition, with
    ``_seq_no``/``_primary_term``, and ``_source`` as ``source`` asks: ``False``, ``True``
    or the fields to include), for the ids found; newest partition first.

    Sends what the module docstring lists (nothing for no ids). Raises
    :class:`~esmapper.errors.DocumentError` when the server answers an entry with an error
    other than a missing index (an unavailable shard, say): the id's place is then unknown,
    and a write must not take it for absent.
    """
    unique = list(dict.fromkeys(ids))
    if not unique:
        return {}
    entries: list[dict[str, Any]] = []
    others: list[str] = []
    for id in unique:
        if ObjectId.is_valid(id):
            target = spec.read_index_for_id(id)
            entries.append({"_index": target, "_id": id, **sent_params(spec, id)})
        else:
            others.append(id)
    if others:
        partitions = live_partitions(client, spec)
        entries += [
            {"_index": p, "_id": id, **sent_params(spec, id)} for id in others for p in partitions
        ]
    params: dict[str, Any] = {}
    if isinstance(source, bool):
        params["source"] = source
    else:
        params["source_includes"] = list(source)
    found: dict[str, list[dict[str, Any]]] = {}
    for start in range(0, len(entries), MGET_ENTRIES):
        response = client.mget(docs=entries[start : start + MGET_ENTRIES], **params)
        for doc in response.body["docs"]:
            error = doc.get("error")
            if error is not None:
                check_entry(spec, doc, error)
            elif doc.get("found"):
                found.setdefault(str(doc["_id"]), []).append(dict(doc))
    return found


def check_entry(spec: IndexSpec, doc: dict[str, Any], error: Any) -> None:
    """Raise DocumentError for an ``_mget`` entry answered with ``error`` (it cannot tell
    whether the document is stored), unless the error says the index is missing."""
    kind = error.get("type") if isinstance(error, dict) else None
    if kind in _MISSING:
        return
    reason = error.get("reason") if isinstance(error, dict) else str(error)
    raise DocumentError(
        f"{spec.info.name}: cannot tell whether {doc.get('_id')!r} is stored in "
        f"{doc.get('_index')!r}: {kind}: {reason}",
        index=doc.get("_index"),
        ids=[doc.get("_id")],
        error_type=kind,
        reason=reason,
    )
