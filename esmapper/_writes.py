"""The write pipeline: the one place every document write goes through.

Every write path (``add``, ``save``, ``remove``, patches by id, by ids and by query,
``patch_all``, ``remove_all``, session flushes) compiles its work into
:class:`PendingWrite` s and hands them to :func:`write_documents`, which runs, in this
order (events before validation, so receivers may set what validation needs), one loop
per model and kind of the batch, each step skipped for a group it does not apply to. The
features of the batch's models are called at their points (:mod:`esmapper._features`;
docs/architecture.md has the table): a model whose features implement none costs one
empty-tuple check per group and point, nothing per document.

1. ids and dates (``add``: id from ``id_fields``, else the ``assign_ids`` point, else a
   new ObjectId; the date rule of :mod:`esmapper._dates` on the model's created/updated
   attributes, ``created_utc``/``updated_utc`` or ``Index.dates``: the created date kept
   when valid, the updated one set to now; a partial document's created date is left
   alone unless it was loaded);
2. ``documents_adding`` / ``saving`` / ``removing`` (a raising receiver vetoes: then
   nothing at all is written, and step 1 is undone);
3. normalization (:meth:`ModelInfo.normalize`), the ``prepare`` point, validation
   (``Document.validate``, the 512-byte id check) unless ``validate=False``, a call
   keyword no feature of the model takes refused
   (:func:`esmapper._features.check_call_options`), the ``check`` point;
4. ``documents_changing`` (with receivers, the ``check`` point judges again);
5. :func:`send` (:mod:`esmapper._outcomes`): the bulk actions
   (:func:`esmapper._bodies.document_action`; a write conditioned on a version goes to
   the fence alias of the index it was read from, :func:`_actions`), unknown outcomes
   resolved, the cache invalidated;
6-7. :func:`esmapper._settle.settle`: versions and stored states written back, the
   ``settle`` point, the "-ed" signals and ``entity_changed``; the failures' typed error
   raised after the successes were applied (:func:`failure_error`);
8. whatever the outcome, the ``finish`` point with what ``prepare`` returned.

Patches (:mod:`esmapper._patching`, kind ``patch``) take :func:`_write_patches`: the
points, the actions, send and settle, without steps 1-4 or "-ed" signals (their paths
announce the changes, :func:`publish_changes`).
"""

from __future__ import annotations

import datetime as _dt
import logging
from collections.abc import Callable, Sequence
from itertools import repeat
from typing import TYPE_CHECKING, Any, overload

from esmapper import _gcpause as _gc
from esmapper import signals
from esmapper._bodies import document_action, sends_bytes
from esmapper._dates import CLOCK_SKEW, needs_fixing
from esmapper._features import Feature, WriteCall, check_call_options
from esmapper._originals import read_originals
from esmapper._outcomes import send, send_answers
from esmapper._partial_views import as_stored
from esmapper._pending import KINDS, PendingWrite
from esmapper._settle import (
    Groups,
    by_model,
    failure_error,
    fire_before,
    grouped,
    publish_changes,
    settle,
)
from esmapper._text import article
from esmapper.bulk import BulkAction, BulkOutcome, BulkRequestError
from esmapper.errors import (
    DocumentError,
    DocumentValidationError,
)
from esmapper.ids import MAX_ID_BYTES, ObjectId, check_id, compose_id, id_term
from esmapper.model._wire_encode import encode_many, source_encoder
from esmapper.model.codec import parse_datetime
from esmapper.model.document import Document
from esmapper.model.info import IndexOptions
from esmapper.model.state import state_of
from esmapper.options import Options, refresh_param

if TYPE_CHECKING:
    from esmapper._context import Context
    from esmapper.model.info import ModelInfo

__all__ = [
    "PendingWrite",
    "composed_id",
    "publish_changes",
    "write_documents",
]

log = logging.getLogger("esmapper.writes")

#: Fields the pipeline sets hold values it made itself (aware UTC datetimes, checked ids):
#: they skip the model's per-assignment conversion and change tracking.
_set = object.__setattr__


_datetime = _dt.datetime

#: ``BulkAction``'s body, if_seq_no, if_primary_term, routing and retry_on_conflict of an
#: add (its arguments given by position: cheaper than by keyword)
_NO_OPTIONS = (None, None, None, None, None)


def composed_id(info: ModelInfo, doc: Any) -> str:
    """The id ``add`` composes for ``doc`` from its ``Index.id_fields``.

    Raises DocumentValidationError for an empty field, IdTooLongError/InvalidIdTermError
    for an id that cannot be stored, ValueError when the model has no ``id_fields``.
    """
    assert info.index is not None
    names = info.index.id_fields
    if not names:
        raise ValueError(f"{info.name} has no Index.id_fields to compose an id from")
    terms = []
    for name in names:
        value = getattr(doc, name)
        if value is None or value == "":
            raise DocumentValidationError(
                f"{info.name}.{name} is empty, but the id is composed from {', '.join(names)}",
                field=name,
            )
        terms.append(id_term(value))
    return compose_id(*terms, names=names)


def _prepare(groups: Groups, call: WriteCall, before: list[Any]) -> None:
    """Step 1 for every write, one loop per model and kind. What it changes on a document
    is recorded first in ``before`` (document, id, created_utc, updated_utc: four flat
    entries, no object per document) for :func:`_undo_prepare`."""
    now = call.now
    latest = now + CLOCK_SKEW
    record = before.extend
    for (_cls, kind), group in groups.items():
        info = group[0].info
        if kind == "remove":
            for pending in group:
                doc = pending.doc
                state = getattr(doc, "_esm_state", None)
                pending._original = None if state is None else state.original_or_bytes
                if doc.id is None:
                    raise DocumentError(f"cannot remove {article(info.name)} that has no id")
            continue
        dated, adding = info.has_dates, kind == "add"
        created_name, updated_name = info.created_field, info.updated_field
        # HasDates' names: two attribute loads per document, not two getattr calls
        usual = created_name == "created_utc" and updated_name == "updated_utc"
        composed = adding and info.index is not None and bool(info.index.id_fields)
        placed = info.points.assign_ids if adding else ()
        unplaced: list[PendingWrite] = []  # new documents the assign_ids point may place
        for pending in group:
            doc = pending.doc
            state = getattr(doc, "_esm_state", None)  # (state_of, inline)
            if state is not None:  # (a new PendingWrite's original is None)
                # the stored source as held (bytes stay bytes): PendingWrite.original_source
                pending._original = state.original_or_bytes
            if not adding and doc.id is None:
                raise DocumentError(
                    f"cannot save {article(info.name)} without an id; add() it first"
                )
            if dated:
                if usual:
                    created, updated = doc.created_utc, doc.updated_utc
                else:
                    created = getattr(doc, created_name) if created_name else None
                    updated = getattr(doc, updated_name) if updated_name else None
                record((doc, doc.id, created, updated))
                if created_name is None:
                    pass
                elif state is None or not state.partial:
                    fix = not isinstance(created, _datetime) or created.year < 1971
                    if fix or created > latest:  # (needs_fixing, inline)
                        _set(doc, created_name, now)
                # loaded in part: its created date is fixed only if it was loaded
                elif created_name in (state.original or {}) and needs_fixing(created, latest):
                    _set(doc, created_name, now)
                if updated_name is not None:
                    if state is not None and state.partial:
                        state.assigned = (state.assigned or set()) | {updated_name}
                    _set(doc, updated_name, now)
            else:
                record((doc, doc.id, _UNDATED, _UNDATED))
            if adding and doc.id is None:
                if composed:
                    _set(doc, "id", composed_id(info, doc))
                elif placed:
                    unplaced.append(pending)
                else:
                    _set(doc, "id", str(ObjectId.new()))
        if unplaced:
            for hook in placed:
                hook(call, unplaced)
            for pending in unplaced:
                if pending.doc.id is None:  # no feature placed it
                    _set(pending.doc, "id", str(ObjectId.new()))


#: ``before`` holds this for the dates of a model without them
_UNDATED = object()


def _undo_prepare(before: list[Any]) -> None:
    """Put back the ids and dates :func:`_prepare` set: nothing was written."""
    for k in range(0, len(before), 4):
        doc, doc_id, created, updated = before[k : k + 4]
        _set(doc, "id", doc_id)
        if created is not _UNDATED:
            info = type(doc).__esmapper__
            if info.created_field is not None:
                _set(doc, info.created_field, created)
            if info.updated_field is not None:
                _set(doc, info.updated_field, updated)


#: what the ``prepare`` point returned: (the feature, its state, the model's info)
_States = list[tuple[Feature, Any, "ModelInfo"]]


def write_documents(
    ctx: Context,
    pendings: Sequence[PendingWrite],
    options: Options,
    *,
    on_success: Callable[[PendingWrite], None] | None = None,
    inherited_tenant: bool = False,
    outcomes: list[BulkOutcome] | None = None,
) -> list[PendingWrite]:
    """Run the pipeline of the module docstring; returns the confirmed writes.

    Raises (after applying every success) the typed error of the failed items; ``on_success``
    is called for each confirmed write before the "-ed" signals (sessions use it to update
    their bookkeeping). ``inherited_tenant``: ``options.tenant`` is a session's, which
    scopes only the models whose features take ``tenant=`` (the others are written
    unscoped); given on the call, it is refused for those models. A batch of patches (kind
    ``patch``, never mixed with other kinds) takes :func:`_write_patches`; ``outcomes``
    collects every patch's outcome instead of raising the failures (the patch paths
    re-read 404/409s and raise their own errors).
    """
    if not pendings:
        return []
    with _gc.paused():  # per-document objects that all live to the end: no GC passes
        call = WriteCall(ctx, options, parse_datetime(ctx.clock()), inherited_tenant)
        groups = grouped(pendings)
        if pendings[0].kind == "patch":
            if any(p.kind != "patch" for p in pendings):
                raise ValueError("a batch of patches cannot hold other writes")
            return _write_patches(call, pendings, groups, outcomes)
        return _write_documents(call, pendings, groups, on_success)


def _write_patches(
    call: WriteCall,
    pendings: Sequence[PendingWrite],
    groups: Groups,
    outcomes: list[BulkOutcome] | None,
) -> list[PendingWrite]:
    """The pipeline for patches (compiled by :mod:`esmapper._patching`): the ``prepare``
    and ``check`` points per model, the actions (through the alias of the index each
    source was read from, to its fence when conditioned), :func:`send`, :func:`settle`
    (no "-ed" signals), then the ``finish`` points."""
    ctx, options = call.ctx, call.options
    states = _prepare_points(call, groups)
    _check(call, by_model(groups, "check"))
    targets: list[str] = []
    names: dict[tuple[type, str | None], str] = {}
    for pending in pendings:
        assert pending.form is not None, "a patch write carries its form"
        key = (pending.info.cls, pending.form.read_from)
        target = names.get(key)
        if target is None:  # through the alias of the index read: it follows a reindex
            target = names[key] = ctx.spec(key[0]).write_name(key[1])
        targets.append(target)
    actions = _actions(ctx, pendings, targets, options)
    confirmed: list[PendingWrite] = []
    ok = False
    try:
        try:
            got = send(ctx, actions, refresh=refresh_param(options.consistency))
        except BulkRequestError as exc:
            confirmed = settle(call, [o.action for o in exc.outcomes], exc.outcomes, None)
            raise
        for outcome in got:
            if outcome.result == "noop":
                outcome.action.ref.form.noop = True
        if outcomes is not None:
            outcomes.extend(got)
        confirmed = settle(call, actions, got, None)
        failed = [o for o in got if not o.ok]
        if failed and outcomes is None:
            raise failure_error(failed, [p.doc_id for p in confirmed], len(got))
        ok = True
        return confirmed
    finally:
        _finish(call, states, confirmed, failing=not ok)


def _write_documents(
    call: WriteCall,
    pendings: Sequence[PendingWrite],
    groups: Groups,
    on_success: Callable[[PendingWrite], None] | None,
) -> list[PendingWrite]:
    before: list[Any] = []
    states: _States = []
    try:
        _prepare(groups, call, before)
        read_originals(call.ctx, call.options, groups)  # saves of documents not loaded
        actions = _before_write(call, pendings, groups, states)
    except BaseException:
        _undo_prepare(before)  # vetoed or invalid: nothing was sent, leave no trace
        raise
    confirmed: list[PendingWrite] = []  # for finish: only the documents written

    def succeeded(pending: PendingWrite) -> None:
        confirmed.append(pending)
        if on_success is not None:
            on_success(pending)

    ok = False
    try:
        result = _send(call, actions, succeeded if states else on_success)
        ok = True
        return result
    finally:
        _finish(call, states, confirmed, failing=not ok)


def _send(
    call: WriteCall, actions: list[BulkAction], on_success: Callable[[PendingWrite], None] | None
) -> list[PendingWrite]:
    """Steps 5-7: send, settle, raise the failures' error."""
    refresh = refresh_param(call.options.consistency)
    try:
        answers = send_answers(call.ctx, actions, refresh=refresh)
    except BulkRequestError as exc:
        settle(call, [o.action for o in exc.outcomes], exc.outcomes, on_success)
        raise
    return settle(call, actions, answers, on_success, raise_failures=True)


def _prepare_points(call: WriteCall, groups: Groups) -> _States:
    """The ``prepare`` point of the models that have it; what it returns, for
    :func:`_finish`."""
    states: _States = []
    for info, mine in by_model(groups, "prepare"):
        for hook in info.points.prepare:
            state = hook(call, mine)
            if state is not None:
                states.append((hook.__self__, state, info))  # type: ignore[attr-defined]
    return states


def _finish(
    call: WriteCall, states: _States, confirmed: list[PendingWrite], *, failing: bool
) -> None:
    """The ``finish`` point, after the write whatever its outcome. When the write itself
    is raising (``failing``), a feature's error here is logged and the write's error goes
    on: it must not replace what the caller needs to know (what was and was not
    written)."""
    for feature, state, info in states:
        mine = [p for p in confirmed if p.info is info]
        if not failing:
            feature.finish(call, state, mine)
            continue
        try:
            feature.finish(call, state, mine)
        except Exception:
            log.exception(
                "%s: finishing a failed write of %s failed too; the write's error is raised",
                feature.name,
                info.name,
            )


def _check(call: WriteCall, checked: list[tuple[ModelInfo, list[PendingWrite]]]) -> None:
    """The ``check`` point of the models that have it, each with its writes."""
    for info, mine in checked:
        for hook in info.points.check:
            hook(call, mine)


def _before_write(
    call: WriteCall, pendings: Sequence[PendingWrite], groups: Groups, states: _States
) -> list[BulkAction]:
    """Steps 2-4 (what the ``prepare`` point returns is added to ``states``); the bulk
    actions. Which steps apply is decided once per model and kind."""
    ctx, options = call.ctx, call.options
    for (cls, kind), group in groups.items():
        fire_before(
            KINDS[kind].before, cls, group, change_type=KINDS[kind].change_type, options=options
        )
    for (_cls, kind), group in groups.items():
        info = group[0].info
        if kind != "remove" and info.normalizer is not None:  # items mutated in place
            normalize = info.normalize  # are checked like assignments
            for pending in group:
                normalize(pending.doc)
    states.extend(_prepare_points(call, groups))  # values features derive (idx)
    if options.validate:
        for (_cls, kind), group in groups.items():
            if kind == "remove":
                continue
            validate = getattr(group[0].info.cls, "validate", None)
            if validate is not Document.validate:  # (it checks nothing)
                for pending in group:
                    pending.doc.validate()
            index = group[0].info.index
            if index is not None and index.validator is not None:
                # a partly loaded document: as its save leaves it stored (_partial_views);
                # one no longer stored is not judged (its partial update stores nothing)
                stored = as_stored(ctx, group)
                for position, pending in enumerate(group):
                    view = stored.get(position, pending.doc)
                    if view is not None:
                        _check_validator(index, view, pending.doc.id)
    if not call.inherited_tenant:  # tenant= given for a model that has no tenants...
        for info in {group[0].info.cls: group[0].info for group in groups.values()}.values():
            check_call_options(info, options)
    checked = by_model(groups, "check")  # on what the "-ing" receivers left
    _check(call, checked)
    targets = _targets(ctx, pendings, len({cls for cls, _kind in groups}) == 1)
    for pending, target in zip(pendings, targets, strict=True):
        doc_id = pending.doc.id  # check_id's common case inline: an ASCII id of 1-512 bytes
        if type(doc_id) is not str or not doc_id.isascii() or not 0 < len(doc_id) <= MAX_ID_BYTES:
            check_id(doc_id, index=target)
    changing = False
    for (cls, kind), group in groups.items():
        change = KINDS[kind].change_type
        changing = changing or signals.has_receivers(signals.documents_changing, cls)
        fire_before(signals.documents_changing, cls, group, change_type=change, options=options)
    if changing and checked:  # its receivers may modify documents too: judged again
        _check(call, checked)
    return _actions(ctx, pendings, targets, options, one_group=len(groups) == 1)


def _actions(
    ctx: Context,
    pendings: Sequence[PendingWrite],
    targets: Sequence[str],
    options: Options,
    *,
    one_group: bool = False,
) -> list[BulkAction]:
    """The bulk actions, in the batch's order: an add is a ``create`` of the document's
    source, built inline (its JSON bytes from the model's compiled encoder,
    :func:`~esmapper.model._wire_encode.source_encoder`, else its ``to_source`` dict);
    saves and removes go through :func:`document_action`. A save or remove conditioned
    on a version (``if_seq_no``) goes to the fence alias of the physical index that
    version was read from (:meth:`IndexSpec.conditioned_target
    <esmapper.indexes.spec.IndexSpec.conditioned_target>`, the document's
    ``DocState.index``), not to ``target``: after a reindex's swap it is refused, a
    version conflict, instead of applied to another index's document at the same numbers.
    ``one_group``: the writes are all of one model and kind (adds: their sources are
    encoded in one call, :func:`~esmapper.model._wire_encode.encode_many`)."""
    actions: list[BulkAction] = []
    append = actions.append
    fenced: dict[tuple[type, str, str | None], str] = {}
    last_info: Any = None
    encode: Any = None
    first = pendings[0] if pendings else None
    encoded: Any = None  # the adds' sources, encoded together, when the batch is only adds
    saved: Any = repeat(None)  # the saves' sources, encoded together (None: not made)
    if first is not None and first.kind in ("add", "save") and one_group:
        encode = source_encoder(first.info)
        if encode is not None and first.kind == "add":
            last_info, encoded = first.info, iter(encode_many(encode, [p.doc for p in pendings]))
        elif encode is not None:  # the saves that send bytes (document_action's rule)
            sent = [sends_bytes(p) for p in pendings]
            chosen = [p.doc for p, s in zip(pendings, sent, strict=True) if s]
            made = iter(encode_many(encode, chosen))
            saved = iter([(next(made) or False) if s else False for s in sent])
    for pending, target in zip(pendings, targets, strict=True):
        if pending.kind == "add":
            doc, info = pending.doc, pending.info
            if encoded is not None:
                source = next(encoded)
            else:
                if info is not last_info:  # a batch is usually of one model: one look-up
                    last_info, encode = info, source_encoder(info)
                source = None if encode is None else encode(doc)
            if source is not None:  # the _source's bytes: no dict (positional: cheaper)
                append(
                    BulkAction("create", target, doc.id, *_NO_OPTIONS, pending, False, None, source)
                )
            else:  # a value only the dict path expresses (see model._wire_encode)
                body = info.to_source(doc)
                append(BulkAction("create", target, doc.id, body, None, None, None, None, pending))
            continue
        action = document_action(pending, target, options, next(saved))
        if action.if_seq_no is not None:
            if pending.form is not None:  # a patch: where its source was read
                read_from = pending.form.read_from
            else:
                state = state_of(pending.doc)
                read_from = None if state is None else state.index
            key = (pending.info.cls, target, read_from)
            through = fenced.get(key)
            if through is None:
                spec = ctx.spec(pending.info.cls)
                through = fenced[key] = spec.conditioned_target(target, read_from)
            action.index = through
        append(action)
    return actions


class _Writes(Sequence[tuple[Any, bool]]):
    """The ``(document, removing)`` of each write, made when read: a spec that writes
    every document to one target reads only the length (no pair per document)."""

    __slots__ = ("_pendings",)

    def __init__(self, pendings: Sequence[PendingWrite]) -> None:
        self._pendings = pendings

    def __len__(self) -> int:
        return len(self._pendings)

    @overload
    def __getitem__(self, index: int) -> tuple[Any, bool]: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[tuple[Any, bool]]: ...
    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return _Writes(self._pendings[index])
        pending = self._pendings[index]
        return pending.doc, pending.kind == "remove"


def _targets(ctx: Context, pendings: Sequence[PendingWrite], one_model: bool) -> list[str]:
    """Where each write goes, in order: one :meth:`IndexSpec.write_targets` call per model
    (the index ensured on the model's first write; time-series partitions, with the ids
    whose partition is not certain looked up together), through ``ctx.client``: the
    call's ``timeout=`` bounds those requests too. ``one_model``: every write is of the
    first write's model."""
    if one_model:  # the common case: the spec decides, per kind of index, what it needs
        spec = ctx.spec(pendings[0].info.cls)
        return spec.write_targets(_Writes(pendings), client=ctx.client)
    by_model: dict[type, list[int]] = {}
    for i, pending in enumerate(pendings):
        by_model.setdefault(pending.info.cls, []).append(i)
    targets: list[str] = [""] * len(pendings)
    client = ctx.client
    for cls, positions in by_model.items():
        writes = [(pendings[i].doc, pendings[i].kind == "remove") for i in positions]
        chosen = ctx.spec(cls).write_targets(writes, client=client)
        for i, target in zip(positions, chosen, strict=True):
            targets[i] = target
    return targets


def _check_validator(index: IndexOptions, doc: Any, id: str) -> None:
    """Raise :class:`DocumentValidationError` when ``Index.validator`` finds errors in
    ``doc`` (the document ``id`` saved, or what it leaves stored): their messages joined
    with ``"; "``, listed in ``errors``."""
    messages = index.validation_errors(doc)
    if messages:
        raise DocumentValidationError(
            "; ".join(messages), errors=messages, index=index.name, ids=[id]
        )
