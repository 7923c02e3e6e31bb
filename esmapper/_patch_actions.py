"""The pieces patch writes share, by id and by query (:mod:`esmapper._patching`): the
Update API body of a Partial/Script patch, the conditional ``index`` action of a
Json/Action patch, and what follows a write's outcomes (the error a failed one raises,
the soft-delete bookkeeping, the ``documents_changed`` signal and change notifications).
Nothing here sends a write (the by-query requests are sent by
:func:`esmapper._server_tasks.run_task`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import jsonpatch

from esmapper import signals
from esmapper._pending import change_type
from esmapper._writes import (
    PendingWrite,
    failure_error,
    publish_changes,
    split_version,
    with_extras,
)
from esmapper.bulk import BulkAction, BulkOutcome
from esmapper.custom_fields import indexing as custom_fields
from esmapper.custom_fields._tenancy import check_patched
from esmapper.errors import DocumentError, DocumentNotFoundError, VersionConflictError
from esmapper.model.codec import format_datetime
from esmapper.options import Options
from esmapper.patches import ActionPatch, JsonPatch, PartialPatch, ScriptPatch
from esmapper.signals import ChangeType

if TYPE_CHECKING:
    from esmapper.repository import Repository

__all__ = [
    "announce",
    "changed_ids",
    "client_side_action",
    "now_text",
    "raise_for",
    "removed_ids",
    "track_soft_deletes",
    "update_body",
]


def now_text(repo: Repository[Any]) -> str:
    return format_datetime(repo.mapper.clock())


def update_body(repo: Repository[Any], patch: PartialPatch | ScriptPatch) -> dict[str, Any]:
    """The Update API body of a Partial/Script patch, with ``updated_utc`` tracking."""
    dated = repo.info.has_dates
    if isinstance(patch, PartialPatch):
        doc = dict(patch.doc)
        if dated and "updated_utc" not in doc:
            doc["updated_utc"] = now_text(repo)
        return {"doc": doc, "detect_noop": True}
    params = dict(patch.params or {})
    source = patch.source
    if dated and "updated_utc" not in params:
        params["__esm_now"] = now_text(repo)
        source = f"{source.rstrip().rstrip(';')};\nctx._source.updated_utc = params.__esm_now;"
    return {"script": {"source": source, "lang": "painless", "params": params}}


def raise_for(outcome: BulkOutcome, repo: Repository[Any]) -> None:
    kwargs: dict[str, Any] = {
        "index": outcome.index,
        "error_type": outcome.error_type,
        "reason": outcome.reason,
    }
    if outcome.status == 404:
        raise DocumentNotFoundError(str(outcome.id), **kwargs)
    if outcome.status == 409:
        raise VersionConflictError(
            f"version conflict patching {repo.info.name} {outcome.id!r}: {outcome.reason}",
            ids=[outcome.id],
            **kwargs,
        )
    raise failure_error([outcome], [], 1)


def announce(
    repo: Repository[Any],
    ids: list[str | None],
    options: Options,
    documents: list[Any] | None = None,
    removed: set[str] | frozenset[str] = frozenset(),
) -> None:
    """``documents_changed`` and one notification per id, after confirmed changes: SAVED,
    or REMOVED for the ids in ``removed`` (a patch that soft-deleted them: see
    :func:`removed_ids`; the recently-deleted list is :func:`track_soft_deletes`')."""
    if not ids:
        return
    if signals.has_receivers(signals.documents_changed, repo.model):
        signals.send_safely(
            signals.documents_changed,
            repo.model,
            documents=documents or [],
            change_type=ChangeType.SAVED,
            options=options,
        )
    changes = [(i, ChangeType.REMOVED if i in removed else ChangeType.SAVED) for i in ids]
    publish_changes(repo.mapper, repo.info, changes, options)


def removed_ids(repo: Repository[Any], outcomes: Iterable[BulkOutcome]) -> set[str]:
    """The ids a patch soft-deleted: confirmed writes that turned ``is_deleted`` from false
    to true, judged like a save's (:func:`esmapper._pending.change_type`) from the stored
    source the write was conditioned on (``PendingWrite.original_source``, set where the
    patch read it: scans, client-side patches) and what the write stored. A write whose
    original or result is not known (a script) is not a removal."""
    info = repo.info
    if not info.soft_deletes:
        return set()
    out: set[str] = set()
    for outcome in outcomes:
        if not outcome.ok or outcome.result == "noop" or outcome.id is None:
            continue
        ref = outcome.action.ref
        pending = ref if isinstance(ref, PendingWrite) else PendingWrite("patch", None, info)
        flag = _soft_delete_flag(outcome.action)
        written = None if flag is None else {"is_deleted": flag}
        if change_type(pending, pending.original_source, written) is ChangeType.REMOVED:
            out.add(str(outcome.id))
    return out


def changed_ids(outcomes: Iterable[BulkOutcome]) -> list[str | None]:
    return [o.id for o in outcomes if o.ok and o.result != "noop"]


def _soft_delete_flag(action: BulkAction) -> bool | None:
    """The ``is_deleted`` a patch action stores (``None``: it does not say, e.g. a script)."""
    body = action.body or {}
    if action.op == "index":
        return bool(body.get("is_deleted"))
    doc = body.get("doc")
    if isinstance(doc, dict) and "is_deleted" in doc:
        return bool(doc["is_deleted"])
    return None


def track_soft_deletes(repo: Repository[Any], outcomes: Iterable[BulkOutcome]) -> None:
    """A patch that sets ``is_deleted`` is a soft delete or a restore, like a save that does:
    confirmed ones update the shared recently-deleted list, or a restored
    document stays hidden from searches (by-query writes included) for ``deleted_ttl``."""
    documents = repo.mapper.documents
    if documents is None or not repo.info.soft_deletes:
        return
    gone: list[str] = []
    back: list[str] = []
    for outcome in outcomes:
        flag = _soft_delete_flag(outcome.action) if outcome.ok and outcome.id else None
        if flag is not None:
            (gone if flag else back).append(str(outcome.id))
    if gone:
        documents.remember_deleted(repo.spec.alias, gone)
    if back:
        documents.forget_deleted(repo.spec.alias, back)


def client_side_action(
    repo: Repository[Any],
    patch: JsonPatch | ActionPatch,
    options: Options,
    *,
    id: str,
    index: str | None,
    source: dict[str, Any],
    version: str | None,
) -> BulkAction | None:
    """The conditional ``index`` action of a Json/Action patch applied to ``source``,
    through the alias of ``index`` (the index ``source`` was read from), or
    ``None`` for a no-op (an empty JsonPatch, an ActionPatch whose callables all returned
    False)."""
    info = repo.info
    if isinstance(patch, JsonPatch):
        if not patch.operations:
            return None
        try:
            new_source = jsonpatch.JsonPatch(list(patch.operations)).apply(source)
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
            raise DocumentError(
                f"JsonPatch of {info.name} {id!r} failed: {exc}",
                ids=[id],
                index=index,
                error_type="json_patch_failed",
                reason=str(exc),
            ) from exc
        if info.has_dates:
            new_source["updated_utc"] = now_text(repo)
        document = info.from_source(new_source, id, version)
        check_patched(info, document, options.tenant)  # the tenant rule: never moved
        if info.custom_fields:
            custom_fields.patched_source(repo.mapper, info, document, new_source)
    else:
        document = info.from_source(source, id, version)
        if not patch.apply(document):
            return None
        check_patched(info, document, options.tenant)  # the tenant rule: never moved
        if info.has_dates:
            document.updated_utc = repo.mapper.clock()
        if info.custom_fields:
            custom_fields.refresh_idx(repo.mapper, [document])
        new_source = with_extras(info.to_source(document), source, info)
    seq_no = primary_term = None
    target = repo.spec.write_name(index)  # through the alias: it follows a reindex
    if options.version_check:
        seq_no, primary_term = split_version(version, owner=info.name, id=id)
        if seq_no is not None:  # a version read from ``index`` is sent to its fence
            target = repo.spec.conditioned_target(target, index)
    return BulkAction(
        op="index",
        index=target,
        id=id,
        body=new_source,
        if_seq_no=seq_no,
        if_primary_term=primary_term,
        ref=PendingWrite("patch", document, info, id=id, original_source=source),
    )
