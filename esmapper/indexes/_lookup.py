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

Cost: ``GET /_alias/<umbrella>`` (when a non-ObjectId id is asked for) plus one
``POST /_mget`` per :data:`MGET_ENTRIES` entries, ``ids x partitions`` entries for the
non-ObjectId ids (without ``_source`` when only the place is wanted).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from elasticsearch import Elasticsearch, NotFoundError

from esmapper.errors import DocumentError
from esmapper.ids import ObjectId
from esmapper.indexes.timeseries import parse_partition

if TYPE_CHECKING:
    from esmapper.indexes.spec import IndexSpec

__all__ = [
    "MGET_ENTRIES",
    "check_entry",
    "live_partitions",
    "mget_ids",
    "read_params",
    "stored_copies",
]

MGET_ENTRIES: Final = 10_000
"""Entries per ``_mget`` request."""

#: Entry errors that mean "not there": the partition or dated alias does not exist.
_MISSING: Final = frozenset({"index_not_found_exception"})


def read_params(spec: IndexSpec, id: str) -> dict[str, Any]:
    """The request parameters of a by-id read of ``id`` (a GET, a HEAD, an ``_mget``
    entry): what the ``read_params`` point of the model's features gives (a routing); empty
    for a model none of them shapes."""
    hooks = spec.info.points.read_params
    if not hooks:
        return {}
    params: dict[str, Any] = {}
    for hook in hooks:
        params.update(hook(id))
    return params


def mget_ids(spec: IndexSpec, ids: Sequence[str]) -> dict[str, Any]:
    """The body of an ``_mget`` of ``ids`` of ``spec``'s model on one index: ``{"docs":
    [{"_id": ..., **read_params}]}``, or plain ``{"ids": [...]}`` for a model whose
    features give no :func:`read_params` (the model's alias, a physical index of it)."""
    if not spec.info.points.read_params:
        return {"ids": list(ids)}
    return {"docs": [{"_id": id, **read_params(spec, id)} for id in ids]}


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
            entries.append({"_index": target, "_id": id, **read_params(spec, id)})
        else:
            others.append(id)
    if others:
        partitions = live_partitions(client, spec)
        entries += [
            {"_index": p, "_id": id, **read_params(spec, id)} for id in others for p in partitions
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
