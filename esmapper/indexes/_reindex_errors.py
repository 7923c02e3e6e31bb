"""The error index of a reindex: the documents a pass could not copy, with the reason.

When a ``_reindex`` pass answers per-document ``failures`` (Elasticsearch's
``BulkIndexByScrollFailure``: ``index``, ``id``, ``status``, ``cause``; e.g. a value the new
mapping cannot parse, ``document_parsing_exception``, status 400), every failed document is
recorded in the run's error index before the run fails and rolls back:

- a ``versioned`` model: ``<alias>-vN-error`` (the new index's name plus ``-error``, as the
  reference names it: ``employees-v2-error``);
- a time-series model: ``<alias>-vN.error``, one for all its partitions (``<partition>-error``
  or ``<alias>-vN-error`` would match the model's index template ``<alias>-vN-*`` and join
  the umbrella alias: reads through the model would return error entries; and
  ``<alias>-error-vN`` is the physical index of a model named ``<alias>-error``, which
  the recording would write into and ``delete_indexes`` delete). No other naming rule
  makes a name with ``.error`` after the version (physical names end in ``-v<N>`` or a
  period), as fences end in ``.fence``.

An entry (``_id``: the source index and the document id, ``<old>/<id>``; over the 512 bytes
Elasticsearch allows an ``_id``, ``<old>/sha256:<hex digest of the id>``) holds ``index``
(the index the document was read from), ``target`` (the index it failed to go to), ``id``,
``version``, ``routing``, ``found`` and ``source`` (a real-time ``GET /<old>/_doc/<id>``
with the id's request parameters, :func:`~esmapper.indexes._lookup.read_params`, or a search
by id when they do not tell its routing; a document deleted since is ``found: false``),
``status``, ``type`` and ``reason`` (the cause's type and the reasons down its ``caused_by``
chain joined) and ``cause`` (Elasticsearch's whole
cause object), ``phase`` (the pass) and ``failed_at``. ``source`` and ``cause`` are stored,
not indexed (``"enabled": false``): the document's own fields may be what the mapping
refused.

Requests: ``PUT /<error index>`` when missing (sent once; ``resource_already_exists``: another
run made it; an unknown outcome is read back with ``HEAD``), the ``GET`` per failed document,
and ``POST /_bulk?refresh=true`` of ``index`` actions (idempotent: an entry's ``_id`` is fixed,
a rerun that fails on the same document overwrites it, so the transport may resend). Search
failures of the source (no ``id``) and the error of a whole request (a failing script) are
not documents: they are only in the run's ``failures``. Recording is best effort: a failure
to write it is logged (ERROR) and the run fails with its own error.

Elasticsearch stops a ``_reindex`` at the first batch with failures (only that batch's are
listed; later documents were not tried): once those are fixed, a rerun may find others.

:func:`error_counts` (``esmapper status``, ``mapper.health()``) counts every error index of a
model: ``GET /<alias>-v*-error,<alias>-v*.error``, then ``GET /<index>/_count`` per index
found.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import logging
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Final

from elasticsearch import ApiError, BadRequestError, Elasticsearch, NotFoundError, TransportError

from esmapper._shards import count_all
from esmapper._transport import once, send_or_read_back
from esmapper.indexes._lookup import is_unrouted, read_params
from esmapper.model.codec import format_datetime

if TYPE_CHECKING:
    from esmapper.indexes.spec import IndexSpec

__all__ = [
    "ERROR_MAPPING",
    "error_counts",
    "error_index",
    "is_error_index",
    "record_failures",
]

log = logging.getLogger("esmapper.indexes")

_CHUNK: Final = 500  # entries per ``_bulk``
_MAX_ID_BYTES: Final = 512  # Elasticsearch's limit on an ``_id``

#: The error index's mapping: the fields to search on indexed, the document and the cause
#: kept as they came.
ERROR_MAPPING: Final[dict[str, Any]] = {
    "dynamic": False,
    "properties": {
        "index": {"type": "keyword"},
        "target": {"type": "keyword"},
        "id": {"type": "keyword"},
        "version": {"type": "long"},
        "routing": {"type": "keyword"},
        "found": {"type": "boolean"},
        "status": {"type": "integer"},
        "type": {"type": "keyword"},
        "reason": {"type": "text"},
        "phase": {"type": "keyword"},
        "failed_at": {"type": "date"},
        "cause": {"type": "object", "enabled": False},
        "source": {"type": "object", "enabled": False},
    },
}


def error_index(spec: IndexSpec, new: str) -> str:
    """Where the failures of a reindex into ``new`` go (see the module docstring)."""
    if spec.is_time_series:
        return f"{spec.alias}-v{spec.version}.error"
    return f"{new}-error"


def is_error_index(spec: IndexSpec, name: str) -> bool:
    """Whether ``name`` is one of ``spec``'s error indexes (any version)."""
    alias = re.escape(spec.alias)
    return re.fullmatch(rf"{alias}-v\d+(?:-|\.)error", name) is not None


def _patterns(spec: IndexSpec) -> str:
    return f"{spec.alias}-v*-error,{spec.alias}-v*.error"


def _cause(cause: Any) -> tuple[str | None, str | None]:
    """``(type, reason)`` of a failure's cause: its type, the reasons down the
    ``caused_by`` chain joined."""
    reasons: list[str] = []
    kind = str(cause["type"]) if isinstance(cause, dict) and cause.get("type") else None
    seen = 0
    while isinstance(cause, dict) and seen < 10:
        seen += 1
        if cause.get("reason"):
            reasons.append(str(cause["reason"]))
        cause = cause.get("caused_by")
    return kind, ": ".join(reasons) or None


def _entry_id(old: str, doc_id: str) -> str:
    """An entry's ``_id``: ``<old>/<id>``, or ``<old>/sha256:<digest>`` when that is over
    the 512 bytes Elasticsearch allows (stable: a rerun overwrites the same entry)."""
    plain = f"{old}/{doc_id}"
    if len(plain.encode()) <= _MAX_ID_BYTES:
        return plain
    return f"{old}/sha256:{hashlib.sha256(doc_id.encode()).hexdigest()}"


def _read(client: Elasticsearch, spec: IndexSpec, old: str, doc_id: str) -> dict[str, Any]:
    """The stored document (real-time ``GET``): its version, routing, source, found. A
    document whose routing its id does not tell (a child of a join): a search by id on
    every shard of ``old`` instead (``version=true``; the pass read it through a scroll,
    so it is searchable), as :mod:`esmapper.indexes.reads` finds it."""
    params = read_params(spec, doc_id)
    try:
        if is_unrouted(params):
            hits = client.search(
                index=old, query={"ids": {"values": [doc_id]}}, version=True, size=1
            ).body["hits"]["hits"]
            got = hits[0] if hits else {"found": False}
        else:
            got = client.get(index=old, id=doc_id, **params).body
    except NotFoundError:
        return {"found": False, "version": None, "routing": None, "source": None}
    return {
        "found": bool(got.get("found", True)),
        "version": got.get("_version"),
        "routing": got.get("_routing"),
        "source": got.get("_source"),
    }


def _create(client: Elasticsearch, name: str) -> None:
    def send() -> None:
        try:
            once(client).indices.create(
                index=name, mappings=ERROR_MAPPING, settings={"number_of_shards": 1}
            )
        except BadRequestError as exc:
            if exc.error != "resource_already_exists_exception":
                raise

    if not client.indices.exists(index=name):
        send_or_read_back(send, lambda: bool(client.indices.exists(index=name)), what=f"PUT {name}")


def record_failures(
    client: Elasticsearch,
    spec: IndexSpec,
    old: str,
    new: str,
    failures: Iterable[dict[str, Any]],
    *,
    phase: str,
    now: Callable[[], _dt.datetime],
) -> tuple[str | None, int]:
    """Write the per-document ``failures`` of a pass ``old -> new`` to the error index
    (module docstring); returns ``(its name, entries written)``, ``(None, 0)`` when no
    failure names a document or nothing could be written (logged)."""
    documents = [f for f in failures if isinstance(f, dict) and f.get("id") is not None]
    if not documents:
        return None, 0
    name = error_index(spec, new)
    try:
        _create(client, name)
        written = 0
        stamp = format_datetime(now())
        for start in range(0, len(documents), _CHUNK):
            operations: list[dict[str, Any]] = []
            for failure in documents[start : start + _CHUNK]:
                doc_id = str(failure["id"])
                kind, reason = _cause(failure.get("cause"))
                entry = {
                    "index": old,
                    "target": new,
                    "id": doc_id,
                    **_read(client, spec, old, doc_id),
                    "status": failure.get("status"),
                    "type": kind or failure.get("type"),
                    "reason": reason,
                    "cause": failure.get("cause"),
                    "phase": phase,
                    "failed_at": stamp,
                }
                operations += [{"index": {"_index": name, "_id": _entry_id(old, doc_id)}}, entry]
                log.error(
                    "reindexing %s/%s into %s failed: [%s] %s",
                    old, doc_id, new, failure.get("status"), reason,
                )  # fmt: skip
            answer = client.bulk(operations=operations, refresh=True).body
            for item in answer.get("items") or ():
                result: dict[str, Any] = next(iter(item.values()), {})
                if result.get("error") is None:
                    written += 1
                else:
                    log.error("recording a failure in %s failed: %s", name, result.get("error"))
    except (ApiError, TransportError) as exc:
        log.error("recording %d reindex failure(s) in %s failed: %s", len(documents), name, exc)
        return None, 0
    if not written:
        return None, 0
    log.warning("%d document(s) that failed to reindex were recorded in %s", written, name)
    return name, written


def error_counts(client: Elasticsearch, spec: IndexSpec) -> dict[str, int]:
    """Every error index of ``spec``'s model and its number of entries, by name
    (``GET /<patterns>`` with ``allow_no_indices``, then ``GET /<index>/_count`` each);
    empty when there is none."""
    found = client.indices.get(
        index=_patterns(spec), allow_no_indices=True, expand_wildcards="open"
    ).body
    return {
        name: count_all(client, what=f"the count of {name}", index=name)
        for name in sorted(found)
        if is_error_index(spec, name)
    }
