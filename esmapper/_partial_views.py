"""What a partly loaded document's save will leave stored, for ``Index.validator``.

A document read with ``includes=``/``excludes=`` holds its model's defaults for the fields
the read did not load, and its save writes only what changed (a partial update,
:func:`esmapper._bodies.partial_changes`). A validator given that document would judge the
defaults, not the stored values: refuse a valid save (``name`` required, not loaded) or
accept an invalid one (a rule between a loaded and an unloaded field). So the validator is
given the document as the save will leave it: the stored ``_source`` (one real-time
``_mget`` per model and batch, :func:`esmapper.indexes.reads.get_documents`, routed as
the originals' read is; nothing sent when no document of the batch was loaded in part)
with the changes merged in. A versioned save stays guarded by the version its document
was read at, so a document changed in between is refused by the write rather than stored
with a verdict on another copy.
A document no longer stored (or a missing index) has no view (``None``): its save is a
partial update, which stores nothing when there is nothing to update (the server answers
``document_missing_exception``), so there is nothing to judge; given the defaults of what
the read did not load, the validator would refuse the save with errors about fields the
caller never touched instead of the save failing as the document's deletion makes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from elasticsearch import NotFoundError

from esmapper._bodies import merged, partial_changes
from esmapper._pending import routed_id
from esmapper._search import is_index_missing
from esmapper.indexes.reads import get_documents
from esmapper.model.state import state_of

if TYPE_CHECKING:
    from esmapper._context import Context
    from esmapper._pending import PendingWrite

__all__ = ["as_stored"]


def as_stored(ctx: Context, pendings: Sequence[PendingWrite]) -> dict[int, Any | None]:
    """For the saves among ``pendings`` (one model) of partly loaded documents: the
    document as the save leaves it stored, by position in ``pendings`` (``None``: no
    longer stored, the save stores nothing). Others are left out (their document is
    whole). Raises the client's error of a failed read and
    :class:`~esmapper.errors.DocumentError` of a change that cannot be written partially
    (as the save would, before anything is sent)."""
    partial: list[tuple[int, PendingWrite, dict[str, Any]]] = []
    for position, pending in enumerate(pendings):
        state = state_of(pending.doc)
        original = pending.original_source
        if pending.kind != "save" or state is None or not state.partial or original is None:
            continue
        info = pending.info
        doc = pending.doc
        baseline = info.to_source(info.from_source(original, doc.id, None))
        body = info.to_source(doc)
        changes = partial_changes(info, doc, original, baseline, body, state.assigned or set())
        partial.append((position, pending, changes))
    if not partial:
        return {}
    info = partial[0][1].info
    spec = ctx.spec(info.cls)
    ids = list(dict.fromkeys(routed_id(p) for _, p, _ in partial))
    try:
        hits = get_documents(ctx.client, spec, ids)
    except NotFoundError as exc:
        if not is_index_missing(exc):
            raise
        hits = []
    stored = {str(h["_id"]): h.get("_source") for h in hits}
    views: dict[int, Any | None] = {}
    for position, pending, changes in partial:
        doc = pending.doc
        source = stored.get(str(doc.id))
        views[position] = (
            info.from_source(merged(source, changes), doc.id, doc.version)
            if isinstance(source, dict)
            else None
        )
    return views
