"""Settling document writes: the "-ed" side of :func:`esmapper._writes.write_documents`.

:func:`settle` writes versions and stored states back onto the confirmed documents, runs
the features' ``settle`` point, fires the "-ed" signals (a raising receiver is logged,
never turned into a failed write) and publishes ``entity_changed``
(:func:`publish_changes`); failed items become one typed error (:func:`failure_error`).
Also here: the "-ing" signals (:func:`fire_before`) and the batch's groups.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from esmapper import signals
from esmapper._bulk_answers import BulkItem
from esmapper._outcomes import UNKNOWN
from esmapper._pending import KINDS, PendingWrite, WriteKind, routed_id
from esmapper._pending import change_type as _judged_change
from esmapper.bulk import BulkAction, BulkAnswer, BulkOutcome
from esmapper.errors import (
    BulkItemFailure,
    BulkWriteError,
    DocumentError,
    DuplicateDocumentError,
    EsmapperError,
    OutcomeUnknownError,
    ScriptError,
    VersionConflictError,
)
from esmapper.model.state import DocState, state_of, version_of
from esmapper.options import Options
from esmapper.signals import ChangeType, ModifiedDocument

if TYPE_CHECKING:
    from esmapper._context import Context
    from esmapper._features import WriteCall
    from esmapper.model.info import ModelInfo

__all__ = [
    "Groups",
    "by_model",
    "failure_error",
    "fire_before",
    "grouped",
    "publish_changes",
    "settle",
]

log = logging.getLogger("esmapper.writes")

#: Fields the pipeline sets hold values it made itself: they skip the model's
#: per-assignment conversion and change tracking.
_set = object.__setattr__

#: ``(model, kind)`` -> the writes of that model and kind, in the batch's order
Groups = dict[tuple[type, WriteKind], list[PendingWrite]]


def _hydrate_original(pending: PendingWrite) -> Any:
    source = pending.seen_original
    if source is None:
        return None
    return pending.info.from_source(source, pending.doc_id, None)


def _modified(pendings: Sequence[PendingWrite]) -> list[ModifiedDocument]:
    return [ModifiedDocument(p.doc, _hydrate_original(p)) for p in pendings]


def fire_before(signal: Any, sender: type, pendings: Sequence[PendingWrite], **kwargs: Any) -> None:
    """An "-ing" signal: a raising receiver vetoes the write."""
    if pendings and signals.has_receivers(signal, sender):
        signal.send(sender, documents=_modified(pendings), **kwargs)


def _fire_after(signal: Any, sender: type, pendings: Sequence[PendingWrite], **kwargs: Any) -> None:
    """An "-ed" signal: the write is stored, so a raising receiver is logged, not raised."""
    if pendings and signals.has_receivers(signal, sender):
        signals.send_safely(signal, sender, documents=_modified(pendings), **kwargs)


def grouped(pendings: Sequence[PendingWrite]) -> Groups:
    """``pendings`` by model and kind, in the batch's order (one dict lookup per run of
    writes of one model and kind, not per write)."""
    groups: Groups = {}
    group: list[PendingWrite] = []
    last_info: ModelInfo | None = None
    last_kind = ""
    for pending in pendings:
        info, kind = pending.info, pending.kind
        if info is not last_info or kind != last_kind:  # a new group (rare)
            group = groups.setdefault((info.cls, kind), [])
            last_info, last_kind = info, kind
        group.append(pending)
    return groups


def by_model(groups: Groups, point: str) -> list[tuple[ModelInfo, list[PendingWrite]]]:
    """``(model info, its writes)`` of the models in ``groups`` whose features implement
    ``point`` (:class:`esmapper._features.Points`): nothing, and no per-write work, for
    the models without."""
    found: dict[type, tuple[ModelInfo, list[PendingWrite]]] = {}
    for (cls, _kind), group in groups.items():
        info = group[0].info
        if getattr(info.points, point):
            mine = found.get(cls)
            if mine is None:
                found[cls] = (info, list(group))
            else:
                mine[1].extend(group)
    return list(found.values())


def _change_type(pending: PendingWrite) -> ChangeType:
    """What a confirmed add/save/remove publishes (:func:`~esmapper._pending.change_type`,
    which asks the model's features: a save that soft-deletes is a removal); ``written``
    is the source stored, which :func:`settle` made the document's original."""
    if not pending.info.points.change_type:
        return KINDS[pending.kind].change_type
    state = state_of(pending.doc)
    written = state.original if state is not None else None
    return _judged_change(pending, pending.seen_original, written)


def publish_changes(
    ctx: Context,
    info: ModelInfo,
    changes: Sequence[tuple[str | None, ChangeType]],
    options: Options,
) -> None:
    """Publish ``entity_changed`` for each ``(id, change_type)``, honouring cancellation;
    with ``Index.batch_notifications``, one message per change type instead, ``id=None``
    and ``ids`` the documents (in order; a change by query, ``id=None``, stays its own
    message). The bus delivers it after ``Index.notification_delay`` when the model has one
    (:meth:`esmapper._services.Services.publish`).

    Runs after the write was confirmed: a failing ``before_publish_entity_changed``
    receiver or bus is logged (with the model and id) and the next message still goes out.
    """
    if not changes or not options.notifications or not ctx.has_subscribers(info.cls):
        return
    before = signals.before_publish_entity_changed
    for message in _messages(info, changes):
        try:
            if signals.has_receivers(before, info.cls):
                before.send(info.cls, message=message, options=options)
                if message.cancel:
                    continue
            ctx.publish(info.cls, message, options)
        except Exception:
            log.exception(
                "publishing %s %s of %s %r failed; the write itself is stored",
                message.change_type.name,
                "change",
                info.name,
                message.id if message.id is not None or not message.ids else list(message.ids),
            )


def _messages(
    info: ModelInfo, changes: Sequence[tuple[str | None, ChangeType]]
) -> list[signals.EntityChanged]:
    """The messages of ``changes``: one per change, or per change type when the model
    batches its notifications."""
    if info.index is None or not info.index.batch_notifications:
        return [signals.EntityChanged(type=info.name, id=i, change_type=c) for i, c in changes]
    batches: dict[ChangeType, list[str]] = {}
    out: list[signals.EntityChanged] = []
    for doc_id, change in changes:
        if doc_id is None:
            out.append(signals.EntityChanged(type=info.name, id=None, change_type=change))
        else:
            batches.setdefault(change, []).append(doc_id)
    batched = [
        signals.EntityChanged(type=info.name, id=None, change_type=c, ids=tuple(ids))
        for c, ids in batches.items()
    ]
    return batched + out


def failure_error(
    failed: Sequence[BulkOutcome],
    succeeded: list[Any],
    total: int,
    *,
    failures: Sequence[BulkItemFailure] | None = None,
) -> EsmapperError:
    """The typed error for the failed items: one kind of 409 gets its own type, a single
    failed write a DocumentError (OutcomeUnknownError when its outcome is unknown),
    anything else a BulkWriteError."""
    if failures is None:
        failures = [_failure(o) for o in failed]
    kinds = {(o.action.op, o.status) for o in failed}
    if total != 1 and len(kinds) != 1:
        return BulkWriteError(failures, succeeded)
    first = failed[0]
    ids = [o.id for o in failed]
    listed = ", ".join(map(repr, ids))
    where = f"index={first.index!r} {first.error_type}: {first.reason}"
    error_type: type[DocumentError]
    if kinds == {("create", 409)}:
        error_type, message = DuplicateDocumentError, f"document(s) {listed} already exist"
    elif kinds <= {("index", 409), ("delete", 409), ("update", 409)}:
        error_type = VersionConflictError
        message = f"version conflict on {listed}: the stored document changed since it was read"
    elif all(o.error_type == UNKNOWN for o in failed):
        error_type = OutcomeUnknownError
        message = (
            f"the outcome of the {first.action.op} of {listed} is unknown: the request was "
            "sent but no answer came back, and reading it back could not decide; read the "
            "document before retrying"
        )
    elif (refused := _script_refusal(failed, total, listed, failures, succeeded)) is not None:
        return refused
    elif total == 1:
        error_type = DocumentError
        message = f"{first.action.op} of {first.id!r} failed with status {first.status}"
    else:
        return BulkWriteError(failures, succeeded)
    return error_type(
        f"{message} ({where})",
        index=first.index,
        ids=ids,
        error_type=first.error_type,
        reason=first.reason,
        failures=failures,
        succeeded=succeeded,
    )


def _script_refusal(
    failed: Sequence[BulkOutcome],
    total: int,
    listed: str,
    failures: Sequence[BulkItemFailure],
    succeeded: list[Any],
) -> ScriptError | None:
    """The :class:`ScriptError` of a script patch's script refused for one document, or
    for every document because it does not compile (the items' answers hold the server's
    ``script_exception``: line and position); ``None`` otherwise (a script that failed
    on some of several documents is a :class:`BulkWriteError`)."""
    first = failed[0]
    refused = ScriptError.of_answer(
        first.error,
        call=f"{first.action.op} of {listed}",
        index=first.index,
        ids=[o.id for o in failed],
        failures=failures,
        succeeded=succeeded,
    )
    if refused is None or (total != 1 and refused.reason != "compile error"):
        return None
    return refused


def _failure(outcome: BulkOutcome) -> BulkItemFailure:
    """The failure of an outcome, naming the caller's document (not the PendingWrite)."""
    ref = outcome.action.ref
    document = ref.doc if isinstance(ref, PendingWrite) else ref
    return attrs.evolve(outcome.to_failure(), document=document)


def _already_gone(outcome: BulkOutcome) -> bool:
    """A delete that found nothing to delete: 404, or (conditional delete) the 409 whose
    reason says no document was found."""
    return outcome.status == 404 or (
        outcome.status == 409 and "no document was found" in (outcome.reason or "")
    )


def settle(
    call: WriteCall,
    actions: Sequence[BulkAction],
    answers: Sequence[BulkAnswer],
    on_success: Callable[[PendingWrite], None] | None,
    *,
    raise_failures: bool = False,
) -> list[PendingWrite]:
    """Steps 6-7 (``answers[i]`` is ``actions[i]``'s): one pass writes versions and
    stored states back, straight from the server's items; then, per model and kind and
    not at all for a group nobody listens to, the features' ``settle`` point, the "-ed"
    signals and notifications; with ``raise_failures``, the failures' error."""
    confirmed: list[PendingWrite] = []
    failed: list[BulkOutcome] = []
    for action, answer in zip(actions, answers, strict=True):
        pending: PendingWrite = action.ref
        if isinstance(answer, BulkItem):  # the server's item of an applied write
            seq_no, term, written_to = answer._seq_no, answer._primary_term, answer._index
            if written_to is None:  # (the server did not say)
                written_to = action.index
        elif answer.ok:
            seq_no, term, written_to = answer.seq_no, answer.primary_term, answer.index
        else:
            if pending.kind == "remove" and _already_gone(answer):
                # already gone: a no-op, but the removal is complete for a session too
                if on_success is not None:
                    on_success(pending)
                _set(pending.doc, "_esm_state", None)
            else:
                failed.append(answer)
            continue
        doc = pending.doc
        confirmed.append(pending)
        if pending.kind == "remove":
            _set(doc, "_esm_state", None)
            continue
        if doc is None:  # a partial or script patch: nothing loaded to bring up to date
            continue
        if type(seq_no) is int and type(term) is int:  # version_of, inline
            version: str | None = f"{term}:{seq_no}"
            condition: tuple[str, int, int] | None = (version, seq_no, term)  # type: ignore[assignment]
        else:
            version, condition = version_of(seq_no, term)
        if pending.info.versioned:
            _set(doc, "version", version)
        source = pending.written
        partial = source is not None  # a partial update: ``written`` is the merge
        if source is None:  # the body written becomes the original (no copy; its bytes
            source = action._body  # type: ignore[assignment]  # (BulkAction.body_as_held,
            if source is None:
                source = action.source  # type: ignore[assignment]  # inline)
        state = getattr(doc, "_esm_state", None)
        if state is None:  # remember(), inline: a new document's first state
            _set(doc, "_esm_state", DocState(source, written_to, None, False, version, condition))
            continue
        state.original = source
        state.version = version
        state.condition = condition
        if written_to is not None:
            state.index = written_to
        if not partial:
            state.partial = False
        state.assigned = None
    _after_write(call, confirmed, grouped(confirmed), on_success)
    if failed and raise_failures:
        raise failure_error(failed, [p.doc for p in confirmed], len(answers))
    return confirmed


def _after_write(
    call: WriteCall,
    confirmed: list[PendingWrite],
    groups: Groups,
    on_success: Callable[[PendingWrite], None] | None,
) -> None:
    """The features' ``settle`` point (per model), the session's bookkeeping (in the
    write order), the "-ed" signals and the notifications of the confirmed writes, per
    model and kind (patches: the settle point only; their paths announce them)."""
    for info, mine in by_model(groups, "settle"):
        for hook in info.points.settle:
            hook(call, mine)
    ctx, options = call.ctx, call.options
    if on_success is not None:
        for pending in confirmed:
            on_success(pending)
    for (cls, kind), group in groups.items():
        if kind == "patch":  # no "-ed" signals; its path announces it (esmapper._patching)
            continue
        change = KINDS[kind].change_type
        _fire_after(KINDS[kind].after, cls, group, change_type=change, options=options)
        _fire_after(signals.documents_changed, cls, group, change_type=change, options=options)
        if options.notifications and ctx.has_subscribers(cls):
            publish_changes(
                ctx, group[0].info, [(routed_id(p), _change_type(p)) for p in group], options
            )
