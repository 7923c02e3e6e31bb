"""Originals of documents saved without being loaded (``originals=``, ``class Index:
originals``): the reference's ``OriginalsEnabled``.

A document loaded through a repository or session carries the stored source it was read from
(``DocState.original``): its save's receivers get ``ModifiedDocument.original`` and a soft
delete (``is_deleted`` false -> true) is published as ``REMOVED``. A document built in
memory and saved (``repo.save(Employee(id="e1", ...))``) carries none: without originals its
``original`` is ``None`` and its soft delete publishes ``SAVED``. With originals on,
:func:`read_originals` reads the stored documents of those saves (one real-time ``_mget``
per model and batch, through :func:`esmapper.indexes.reads.get_documents`: routing and
time-series partitions included; a child of a join is read with its parent's routing, the
features' ``read_id`` point, and looked for elsewhere when not found there, the
``stray_copies`` point: a copy stored under another parent is its original, which the join
moves) before the
"-ing" signals, into ``PendingWrite.read_original``. What it read is compared with, never
written: the save's body stays the document's (stored keys the model does not declare are
not kept, as without originals), and it is not a version condition (a ``Versioned``
document's own version is). A document not stored yet has no original (``None``); neither
has one the call may not see (the features' ``visible`` point, as for a ``get``, whatever
its soft delete: another tenant's document under ``tenant=`` is not there, so no receiver is
shown it before the tenant rule refuses the save). A read that fails raises before anything
is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from elasticsearch import NotFoundError

from esmapper._pending import PendingWrite, routed_id
from esmapper._search import is_index_missing
from esmapper._settle import Groups
from esmapper.ids import routing_of
from esmapper.indexes.reads import get_documents
from esmapper.model.state import DocState

if TYPE_CHECKING:
    from esmapper._context import Context
    from esmapper.model.info import ModelInfo
    from esmapper.options import Options

__all__ = ["read_originals", "wants_originals"]


def wants_originals(info: ModelInfo, options: Options) -> bool:
    """Whether saves of ``info``'s model under ``options`` read the originals they lack:
    the call's ``originals=``, else the model's ``Index.originals``."""
    if options.originals is not None:
        return options.originals
    return info.index is not None and info.index.originals


def read_originals(ctx: Context, options: Options, groups: Groups) -> None:
    """Read the stored source of every save in ``groups`` that has no original, for the
    models that want them (:func:`wants_originals`); sends one ``_mget`` per such model
    (nothing when every save's document was loaded). Raises the client's error of a
    failed read (nothing is written then); a missing index means nothing is stored."""
    for (cls, kind), group in groups.items():
        if kind != "save" or not wants_originals(group[0].info, options):
            continue
        lacking = [p for p in group if p.original_as_held is None and p.doc.id is not None]
        if lacking:
            _read(ctx, cls, lacking, options)


def _read(ctx: Context, model: type, pendings: Sequence[PendingWrite], options: Options) -> None:
    ids = list(dict.fromkeys(routed_id(p) for p in pendings))
    spec = ctx.spec(model)
    try:
        hits = get_documents(ctx.client, spec, ids)
        # a routed id not found where its document's routing points may be stored under
        # another routing (a child saved under a new parent): the features' stray_copies
        # point looks for it elsewhere (the join: where this process last wrote it, in
        # real time, else by id on every shard, never after a refresh of its own), so the
        # features see that copy (the join moves it: its old copy is deleted)
        found = {str(h["_id"]) for h in hits}
        moved = [id for id in ids if routing_of(id) is not None and str(id) not in found]
        if moved:
            for hook in pendings[0].info.points.stray_copies:
                hits += hook(ctx, moved)
    except NotFoundError as exc:
        if is_index_missing(exc):
            return
        raise
    stored: dict[str, Any] = {str(h["_id"]): h.get("_source") for h in hits}
    read_at = {str(h["_id"]): _condition(h) for h in hits}
    info = pendings[0].info
    # what a get would show (a soft-deleted one too: its restore is judged by it)
    seen = options.merge(soft_deletes="all")
    rules = [r for r in (hook(seen) for hook in info.points.visible) if r is not None]
    for pending in pendings:
        source = stored.get(str(pending.doc.id))
        if isinstance(source, dict) and all(
            rule.test(info.from_source(source, pending.doc_id, None, DocState(source)))
            for rule in rules
        ):
            pending.read_original = source
            pending.read_condition = read_at.get(str(pending.doc.id))


def _condition(hit: Any) -> tuple[int, int, str | None] | None:
    """``(seq_no, primary_term, index)`` of a GET/search hit (``None``: no numbers)."""
    seq_no, term = hit.get("_seq_no"), hit.get("_primary_term")
    if isinstance(seq_no, int) and isinstance(term, int):
        return seq_no, term, hit.get("_index")
    return None
