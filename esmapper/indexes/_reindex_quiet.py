"""Whether anything was written to a bump's old index since its copy began: the proof that
lets a version bump leave out the passes that only exist to find such writes.

A version bump (:mod:`esmapper.indexes.reindex`) copies ``<alias>-vK`` while it keeps
serving writes, so after the copy it runs a catch-up pass, under the write block a final
pass, the stale-copy comparison (:mod:`esmapper.indexes._reindex_stale`) and the id
reconciliation: each looks for documents written, removed or added again during the copy.
When nothing was written to the old index from the moment before the copy's refresh to the
moment after the write block, none of them can find anything.

The proof is read from ``GET /<index>/_stats/indexing?level=shards`` (:func:`write_marks`),
once before the refresh that precedes the copy and again later (:func:`unchanged`). A
write it counts is visible to the copy only when every copy of its shard has applied it:
the primary counts a write before it sends it to its replicas, and the copy may read a
replica. So a primary whose ``seq_no`` ``local_checkpoint`` or ``global_checkpoint`` (the
lowest checkpoint of the in-sync copies) is below its ``max_seq_no``, or with another copy
answered behind it, proves nothing (a write in flight). Per primary shard it takes:

- ``indexing.index_total`` and ``indexing.delete_total``: every index, update and delete
  applied on the primary raises one of them;
- ``seq_no.max_seq_no``: every operation (a failed document's no-op included) takes the
  next sequence number, and it is kept across restarts (it lives in the shard's history);
- where the copy lives: ``routing.node`` (the copy must be ``STARTED``, not relocating),
  the history (``commit.user_data.history_uuid`` where answered) and the index's ``uuid``
  (an index deleted and made again under the name).

The counters are the shard copy's own: a relocation, a failover to a replica, a node or
index restart starts them again from zero. So the proof holds only when both reads name
the same index (``uuid``), the same primaries (every shard answered, none failed, each on
the same node, started) with equal counters *and* an equal ``max_seq_no``: a reset shows as
a drop or another node, and writes that brought reset counters back to the old figures
would have raised ``max_seq_no``. Anything else (a missing figure, a failed shard, a
decrease, a stats request that fails) is "unknown", and the run does every pass as when
writes went on. The check sends one request and never decides anything else: with writes
going on, the bump sends what it sent without it.

Between the copy and the write block the bump only asks whether to run its catch-up pass
before the block (to keep the blocked window short): :func:`written_since` answers from the
index-level counters (one ``GET /<index>/_stats/indexing``, cheaper than the shard level),
and a wrong "nothing" costs only a longer final pass, since the proof is read again under
the block.
"""

from __future__ import annotations

import logging
from typing import Any

import attrs
from elasticsearch import Elasticsearch, TransportError

__all__ = ["WriteMarks", "unchanged", "write_marks", "written_since"]

log = logging.getLogger("esmapper.indexes")


@attrs.frozen(slots=True)
class WriteMarks:
    """What :func:`write_marks` read of an index: ``seq_nos`` (``{shard: max_seq_no}`` of
    the primaries; ``None`` unless every shard answered it) and ``shards`` (``{shard:
    (node, history_uuid, max_seq_no, index_total, delete_total)}``; ``None`` when the
    answer cannot prove anything: a figure missing, a shard failed or not started, no
    index ``uuid``)."""

    uuid: str | None
    seq_nos: dict[str, int] | None
    shards: dict[str, tuple[Any, ...]] | None

    @property
    def operations(self) -> int | None:
        """The primaries' ``index_total`` plus ``delete_total`` (``None``: not proved)."""
        if self.shards is None:
            return None
        return sum(int(mark[3]) + int(mark[4]) for mark in self.shards.values())


_UNKNOWN = WriteMarks(None, None, None)


def _primary(copies: list[dict[str, Any]]) -> dict[str, Any] | None:
    primaries = [c for c in copies if (c.get("routing") or {}).get("primary")]
    return primaries[0] if len(primaries) == 1 else None


def _replicated(copy: dict[str, Any], copies: list[dict[str, Any]]) -> bool:
    """Whether every operation the primary ``copy`` took is applied on every copy: its
    ``local_checkpoint`` and ``global_checkpoint`` (the lowest checkpoint of the in-sync
    copies) equal its ``max_seq_no``, and no other copy answered is behind. The primary
    counts a write before it sends it to the replicas, so until then a refresh does not
    show it to a copy that reads a replica, yet the counters already include it."""
    seq_no = copy.get("seq_no") or {}
    top = seq_no.get("max_seq_no")
    if type(top) is not int:
        return False
    if seq_no.get("local_checkpoint") != top or seq_no.get("global_checkpoint") != top:
        return False
    return all(
        (other.get("seq_no") or {}).get("local_checkpoint") == top
        for other in copies
        if other is not copy
    )


def _mark(copy: dict[str, Any], copies: list[dict[str, Any]]) -> tuple[Any, ...] | None:
    """The primary's figures, ``None`` when one is missing or the copy is not settled (also
    when a write it counts may not be on every copy yet: :func:`_replicated`)."""
    routing = copy.get("routing") or {}
    indexing = copy.get("indexing") or {}
    seq_no = (copy.get("seq_no") or {}).get("max_seq_no")
    history = ((copy.get("commit") or {}).get("user_data") or {}).get("history_uuid")
    figures = (seq_no, indexing.get("index_total"), indexing.get("delete_total"))
    node = routing.get("node")
    if routing.get("state") != "STARTED" or routing.get("relocating_node") is not None:
        return None
    if not isinstance(node, str) or not all(type(f) is int for f in figures):
        return None
    if not _replicated(copy, copies):
        return None
    return (node, history, *figures)


def write_marks(client: Elasticsearch, index: str) -> WriteMarks:
    """Read ``index``'s primaries (``GET /<index>/_stats/indexing?level=shards``); a failed
    request is logged and read as unknown (no proof, no ``seq_nos``)."""
    try:
        stats = client.indices.stats(index=index, level="shards", metric="indexing").body
    except TransportError as exc:
        log.warning("reading the shard stats of %s failed: %s", index, exc)
        return _UNKNOWN
    entry = stats.get("indices", {}).get(index) or {}
    shards = entry.get("shards") or {}
    copies_of = {str(shard): list(copies or []) for shard, copies in shards.items()}
    primaries = {shard: _primary(copies) for shard, copies in copies_of.items()}
    seq_nos: dict[str, int] | None = {}
    marks: dict[str, tuple[Any, ...]] | None = {}
    for shard, copy in primaries.items():
        seq_no = ((copy or {}).get("seq_no") or {}).get("max_seq_no")
        if seq_nos is not None and type(seq_no) is int:
            seq_nos[shard] = seq_no
        else:
            seq_nos = None
        mark = _mark(copy, copies_of[shard]) if copy is not None else None
        if marks is not None and mark is not None:
            marks[shard] = mark
        else:
            marks = None
    failed = (stats.get("_shards") or {}).get("failed")
    uuid = entry.get("uuid")
    if failed != 0 or not isinstance(uuid, str) or not primaries:
        marks = None
    return WriteMarks(uuid if isinstance(uuid, str) else None, seq_nos or None, marks)


def unchanged(before: WriteMarks | None, after: WriteMarks) -> bool:
    """Whether ``after`` proves that nothing was written to the index since ``before`` was
    read: both complete, the same index ``uuid`` and the same primaries with the same
    figures (see the module docstring). False whenever either cannot tell."""
    return (
        before is not None
        and before.shards is not None
        and after.shards is not None
        and before.uuid == after.uuid
        and before.shards == after.shards
    )


def written_since(client: Elasticsearch, index: str, before: WriteMarks | None) -> bool:
    """A hint, not a proof: whether ``index``'s primaries took a write since ``before`` was
    read, from one ``GET /<index>/_stats/indexing`` (index level: the primaries'
    ``index_total`` and ``delete_total``, which a server answers without walking every
    shard copy). True whenever it cannot tell (``before`` proves nothing, a figure is
    missing, the request fails). A reset counter can make it say False after a write:
    a caller may only use it to leave out work that a later :func:`unchanged` check
    under the write block would order again (the bump's catch-up pass before its
    block)."""
    if before is None or before.operations is None:
        return True
    try:
        stats = client.indices.stats(index=index, metric="indexing").body
    except TransportError as exc:
        log.warning("reading the indexing stats of %s failed: %s", index, exc)
        return True
    entry = stats.get("indices", {}).get(index) or {}
    indexing = (entry.get("primaries") or {}).get("indexing") or {}
    indexed, deleted = indexing.get("index_total"), indexing.get("delete_total")
    if (stats.get("_shards") or {}).get("failed") != 0 or entry.get("uuid") != before.uuid:
        return True
    if type(indexed) is not int or type(deleted) is not int:
        return True
    return indexed + deleted != before.operations
