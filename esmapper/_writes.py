"""The write pipeline: the one place every document write goes through.

Every write path (``add``, ``save``, ``remove``, patches by id, by ids and by query,
``patch_all``, ``remove_all``, session flushes) compiles its work into
:class:`PendingWrite` s and hands them to this module. The rules, and the one function
that owns each:

========================================  ================================================
rule                                      owner
========================================  ================================================
what a document write sends               :func:`document_action` (full source plus the
(full replace, or a partial update for    ``_source`` fields the model does not declare;
a partially loaded document; the          partial documents: only the changed fields,
version condition)                        guarded by the version they were read at)
resending and unknown outcomes            :func:`send` (the bulk writer never resends a
                                          request without an answer; :func:`send` reads
                                          the documents back and decides: applied, safe
                                          to resend, or *unknown*, reported as a failure
                                          with ``error_type="outcome_unknown"``)
cache invalidation                        :func:`send`: every id a write touched is
                                          removed from the cache whatever its outcome
                                          (confirmed, failed, unknown), through any mapper
"-ed" signals and notifications           :func:`settle` and :func:`publish_changes`:
                                          receiver and subscriber failures are logged,
                                          never turned into a failed write
typed errors                              :func:`failure_error`
========================================  ================================================

One call of :func:`write_documents` (add/save/remove, repository or session) runs, in
this order (FEATURES EV-9, decision Q16):

1. ids and dates (``add``: id from ``id_fields`` or a new ObjectId, ``created_utc`` kept
   when valid; ``add``/``save``: ``updated_utc = now``; a partial document's
   ``created_utc`` is left alone unless it was loaded);
2. ``documents_adding`` / ``documents_saving`` / ``documents_removing`` (receivers may
   modify documents or raise to veto: then nothing at all is written);
3. normalization (:meth:`ModelInfo.normalize`: list items mutated in place are converted
   and checked like assignments), then validation (``Document.validate``, the 512-byte id
   check) unless ``validate=False``;
4. ``documents_changing``;
5. :func:`send`: one pass through the bulk writer (``create`` for add; ``index`` with
   ``if_seq_no``/``if_primary_term`` for saves of versioned documents; ``update`` with the
   changed fields for partial documents; ``delete``, conditional for a ``Versioned``
   document, unconditional for an id), unknown outcomes resolved, the cache invalidated;
6. :func:`settle` for confirmed items: version and stored state written back onto the
   documents, then ``documents_added``/``saved``/``removed``, ``documents_changed``,
   ``before_publish_entity_changed`` and ``entity_changed``;
7. failures raise after the successes were applied (FEATURES ER-2): a single kind of 409
   raises :class:`DuplicateDocumentError` / :class:`VersionConflictError`, a single write
   of unknown outcome :class:`OutcomeUnknownError`, anything else
   :class:`BulkWriteError`; every error carries ``failures`` (``document`` is the caller's
   object) and ``succeeded``.

Patches (:mod:`esmapper._patching`) build their own actions but send them through
:func:`send` and publish through :func:`publish_changes`.
"""

from __future__ import annotations

import datetime as _dt
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import attrs
from elastic_transport import TransportError
from elasticsearch import ApiError

from esmapper import _json, signals
from esmapper.bulk import BulkAction, BulkOutcome, BulkRequestError
from esmapper.errors import (
    BulkItemFailure,
    BulkWriteError,
    DocumentError,
    DocumentValidationError,
    DuplicateDocumentError,
    EsmapperError,
    OutcomeUnknownError,
    VersionConflictError,
)
from esmapper.ids import ObjectId, check_id, compose_id, id_term
from esmapper.indexes.timeseries import new_document_time
from esmapper.model.codec import parse_datetime
from esmapper.model.state import remember, state_of
from esmapper.options import Options, refresh_param
from esmapper.signals import ChangeType, ModifiedDocument

if TYPE_CHECKING:
    from esmapper.mapper import Mapper
    from esmapper.model.info import ModelInfo

__all__ = [
    "UNKNOWN",
    "PendingWrite",
    "document_action",
    "failure_error",
    "publish_changes",
    "send",
    "split_version",
    "with_extras",
    "write_documents",
]

log = logging.getLogger("esmapper.writes")

_BEFORE = {
    "add": signals.documents_adding,
    "save": signals.documents_saving,
    "remove": signals.documents_removing,
}
_AFTER = {
    "add": signals.documents_added,
    "save": signals.documents_saved,
    "remove": signals.documents_removed,
}
#: Fields the pipeline sets hold values it made itself (aware UTC datetimes, checked ids):
#: they skip the model's per-assignment conversion and change tracking.
_set = object.__setattr__

#: How far in the future a supplied created_utc may lie before it counts as invalid.
_CLOCK_SKEW = _dt.timedelta(minutes=1)

_CHANGE = {"add": ChangeType.ADDED, "save": ChangeType.SAVED, "remove": ChangeType.REMOVED}

#: ``error_type`` of a write whose outcome stayed unknown after reading it back.
UNKNOWN = "outcome_unknown"
#: Rounds of "read back, resend what was not applied" for writes without an answer.
_RESOLVE_ROUNDS = 3


@attrs.define(slots=True)
class PendingWrite:
    """One write: ``kind`` is ``add``, ``save``, ``remove`` or ``patch``.

    ``doc`` is the caller's document (``None`` for a patch by id that loaded nothing),
    ``id`` the document id for writes without a document. ``conditional`` is false for
    a removal by id (``remove("id")`` deletes whatever is stored).
    """

    kind: str
    doc: Any
    info: ModelInfo
    id: str | None = None
    conditional: bool = True
    #: condition the write on this version (``"<primary_term>:<seq_no>"``, e.g. what a
    #: by-query scan saw), whatever the model's ``Versioned`` support
    guard: str | None = None
    #: the stored ``_source`` before this write (captured when the pipeline starts)
    original_source: dict[str, Any] | None = None
    #: ``(id, created_utc, updated_utc)`` before the pipeline set them (restored on a veto)
    before: tuple[Any, Any, Any] | None = None
    #: what the store holds after a confirmed write (the source, merged for partial saves)
    written: dict[str, Any] | None = None

    @property
    def doc_id(self) -> str | None:
        return self.doc.id if self.doc is not None else self.id

    def undo_prepare(self) -> None:
        """Put back the id and dates the pipeline set: nothing was written."""
        if self.before is None:
            return
        doc_id, created, updated = self.before
        _set(self.doc, "id", doc_id)
        if self.info.has_dates:
            _set(self.doc, "created_utc", created)
            _set(self.doc, "updated_utc", updated)


def split_version(
    version: str | None, *, owner: str = "", id: str | None = None
) -> tuple[int | None, int | None]:
    """``(seq_no, primary_term)`` of a ``"<primary_term>:<seq_no>"`` version (``None``s for
    no version); a malformed one raises DocumentValidationError naming ``owner``."""
    if not version:
        return None, None
    try:
        term_text, seq_text = version.split(":", 1)
        return int(seq_text), int(term_text)
    except ValueError:
        raise DocumentValidationError(
            f"{owner} {id!r}: version {version!r} is not '<primary_term>:<seq_no>'",
            field="version",
            ids=[id],
        ) from None


def _needs_fixing(created: _dt.datetime | None, latest: _dt.datetime) -> bool:
    """A created date that is missing, before 1971 or later than ``latest`` is replaced."""
    return created is None or created.year < 1971 or created > latest


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


def _assign_id(pending: PendingWrite) -> None:
    doc, info = pending.doc, pending.info
    if doc.id is not None:
        return
    assert info.index is not None
    if info.index.id_fields:
        _set(doc, "id", composed_id(info, doc))
    else:
        _set(doc, "id", str(ObjectId.new(new_document_time(info, doc))))


def _prepare(pending: PendingWrite, now: _dt.datetime) -> None:
    doc, info = pending.doc, pending.info
    state = state_of(doc)
    pending.original_source = state.original if state is not None else None
    if pending.kind == "remove":
        if doc.id is None:
            raise DocumentError(f"cannot remove a {info.name} that has no id")
        return
    if pending.kind == "save" and doc.id is None:
        raise DocumentError(f"cannot save a {info.name} without an id; add() it first")
    pending.before = (
        doc.id,
        doc.created_utc if info.has_dates else None,
        doc.updated_utc if info.has_dates else None,
    )
    if info.has_dates:
        loaded = state is None or not state.partial or "created_utc" in (state.original or {})
        if loaded and _needs_fixing(doc.created_utc, now + _CLOCK_SKEW):
            _set(doc, "created_utc", now)
        _set(doc, "updated_utc", now)
        if state is not None and state.partial:
            state.assigned = (state.assigned or set()) | {"updated_utc"}
    if pending.kind == "add":
        _assign_id(pending)


def _hydrate_original(pending: PendingWrite) -> Any:
    source = pending.original_source
    if source is None:
        return None
    return pending.info.from_source(source, pending.doc_id, None)


def _modified(pendings: Sequence[PendingWrite]) -> list[ModifiedDocument]:
    return [ModifiedDocument(p.doc, _hydrate_original(p)) for p in pendings]


def _fire(signal: Any, sender: type, pendings: Sequence[PendingWrite], **kwargs: Any) -> None:
    """An "-ing" signal: a raising receiver vetoes the write."""
    if pendings and signals.has_receivers(signal, sender):
        signal.send(sender, documents=_modified(pendings), **kwargs)


def _fire_after(signal: Any, sender: type, pendings: Sequence[PendingWrite], **kwargs: Any) -> None:
    """An "-ed" signal: the write is stored, so a raising receiver is logged, not raised."""
    if pendings and signals.has_receivers(signal, sender):
        signals.send_safely(signal, sender, documents=_modified(pendings), **kwargs)


# -- what a document write sends ---------------------------------------------------------


def _covers(loaded: Any, full: Any) -> bool:
    """Whether ``loaded`` (a partially loaded value) holds every key of ``full`` (the
    model's form of it), recursively: then it was loaded whole."""
    if isinstance(full, dict):
        return isinstance(loaded, dict) and all(
            k in loaded and _covers(loaded[k], v) for k, v in full.items()
        )
    if isinstance(full, list):
        return (
            isinstance(loaded, list)
            and len(loaded) == len(full)
            and all(_covers(a, b) for a, b in zip(loaded, full, strict=True))
        )
    return True


def _lost_keys(before: Any, after: Any) -> bool:
    """Whether ``after`` lacks a key ``before`` has, at any depth (a partial update merges
    objects, so it cannot remove keys)."""
    if isinstance(before, dict) and isinstance(after, dict):
        return any(k not in after or _lost_keys(v, after[k]) for k, v in before.items())
    return False


def _partial_changes(  # noqa: PLR0917 - one recursive step, all positional
    info: ModelInfo,
    doc: Any,
    loaded: Mapping[str, Any],
    baseline: Mapping[str, Any],
    current: Mapping[str, Any],
    assigned: set[str],
    path: str = "",
) -> dict[str, Any]:
    """What a partially loaded document's save sends (``doc`` of an Update API call).

    A field loaded whole (or assigned) is sent whole when it changed (or was assigned,
    even to the value that stands in for an unloaded one); an object loaded in part is
    diffed key by key. A change that would overwrite what was not loaded (an unloaded
    field mutated in place, a list loaded in part) or remove keys (the update merges
    objects) raises :class:`DocumentError` before anything is sent.
    """
    changes: dict[str, Any] = {}
    for key, value in current.items():
        name = f"{path}{key}"
        base = baseline.get(key, _ABSENT)
        whole = key in assigned or (key in loaded and _covers(loaded[key], base))
        if whole:
            if key in assigned or value != base:
                if key in loaded and _lost_keys(loaded[key], value):
                    raise _partial_error(info, doc, name, "it would remove keys of an object")
                changes[key] = value
            continue
        if value == base:
            continue
        if key in loaded and isinstance(value, dict) and isinstance(base, dict):
            inner = _partial_changes(info, doc, loaded[key], base, value, set(), f"{name}.")
            if inner:
                changes[key] = inner
            continue
        raise _partial_error(info, doc, name, "it changed but was not (fully) loaded")
    return changes


def _partial_error(info: ModelInfo, doc: Any, name: str, why: str) -> DocumentError:
    return DocumentError(
        f"cannot save {info.name} {doc.id!r}, loaded with includes/excludes: field "
        f"{name!r}: {why}, so writing it would overwrite stored data that was not read. "
        "Load the document without includes/excludes to change it, or assign the field.",
        ids=[doc.id],
        error_type="partial_document",
    )


def _merged(base: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``changes`` deep-merged in (what a partial update leaves stored)."""
    out = dict(base)
    for key, value in changes.items():
        current = out.get(key)
        if isinstance(value, dict) and isinstance(current, dict):
            out[key] = _merged(current, value)
        else:
            out[key] = value
    return out


class _Absent:
    __slots__ = ()


_ABSENT = _Absent()


def with_extras(
    body: dict[str, Any], original: Mapping[str, Any] | None, info: ModelInfo | None = None
) -> dict[str, Any]:
    """``body`` plus the ``_source`` fields of ``original`` the model does not declare
    (written by a newer deploy, or by another application): a save keeps them, also inside
    embedded objects (``info`` given: its non-list InnerDoc fields are followed)."""
    if original is None:
        return body
    extra = original.keys() - body.keys()
    out = body if not extra else {**{k: original[k] for k in extra}, **body}
    if info is None or not info.inner_fields:
        return out
    for name, inner in info.inner_fields:
        value, before = out.get(name), original.get(name)
        if isinstance(value, dict) and isinstance(before, dict):
            merged = with_extras(value, before, inner)
            if merged is not value:
                out = out if out is not body else dict(body)
                out[name] = merged
    return out


def document_action(pending: PendingWrite, index: str, options: Options) -> BulkAction:
    """The bulk action of an add/save/remove (see the module docstring)."""
    doc, info = pending.doc, pending.info
    if pending.kind == "remove":
        seq_no = primary_term = None
        if pending.guard is not None:
            seq_no, primary_term = split_version(pending.guard, owner=info.name, id=doc.id)
        elif pending.conditional and info.versioned and options.version_check:
            seq_no, primary_term = split_version(doc.version, owner=info.name, id=doc.id)
        return BulkAction(
            op="delete",
            index=index,
            id=doc.id,
            if_seq_no=seq_no,
            if_primary_term=primary_term,
            ref=pending,
        )
    body = info.to_source(doc)
    if pending.kind == "add":
        return BulkAction(op="create", index=index, id=doc.id, body=body, ref=pending)
    state = state_of(doc)
    original = pending.original_source
    seq_no = primary_term = None
    if info.versioned and options.version_check:
        seq_no, primary_term = split_version(doc.version, owner=info.name, id=doc.id)
    if state is not None and state.partial and original is not None:
        baseline = info.to_source(info.from_source(original, doc.id, None))
        changes = _partial_changes(info, doc, original, baseline, body, state.assigned or set())
        if seq_no is None and options.version_check:  # never merge into an unseen version
            seq_no, primary_term = split_version(state.version, owner=info.name, id=doc.id)
        pending.written = _merged(original, changes)
        return BulkAction(
            op="update",
            index=index,
            id=doc.id,
            body={"doc": changes},
            if_seq_no=seq_no,
            if_primary_term=primary_term,
            ref=pending,
        )
    body = with_extras(body, original, info)
    return BulkAction(
        op="index",
        index=index,
        id=doc.id,
        body=body,
        if_seq_no=seq_no,
        if_primary_term=primary_term,
        ref=pending,
    )


# -- sending, unknown outcomes, invalidation ---------------------------------------------


def send(
    mapper: Mapper,
    actions: Sequence[BulkAction],
    *,
    refresh: bool | Literal["wait_for"] | None,
) -> list[BulkOutcome]:
    """Send ``actions`` (``ref``: their :class:`PendingWrite`) through the bulk writer.

    Returns one outcome per action, in order. Actions that got no answer (a dropped
    connection, a timeout, an unreadable response) are read back (one ``_mget``): a write
    found applied is confirmed with the stored version; one found not applied is sent again
    (safe: a ``create`` or a conditional write cannot apply twice, an unconditional
    ``index``/``delete``/partial ``update`` leaves the same result); a script update
    without a version condition is never resent. What stays undecided is a failure with
    status 0 and ``error_type="outcome_unknown"``. Every id in ``actions`` is removed
    from the cache afterwards, whatever its outcome (also when this raises).
    """
    try:
        try:
            outcomes = mapper.writer.write(actions, refresh=refresh)
        except BulkRequestError as exc:
            exc.outcomes = _resolve(mapper, exc.outcomes, refresh)
            raise
        return _resolve(mapper, outcomes, refresh)
    finally:
        _invalidate(mapper, actions)


def _invalidate(mapper: Mapper, actions: Sequence[BulkAction]) -> None:
    by_model: dict[type, tuple[ModelInfo, list[str]]] = {}
    for action in actions:
        pending: PendingWrite = action.ref
        if action.id is not None:
            by_model.setdefault(pending.info.cls, (pending.info, []))[1].append(action.id)
    for info, ids in by_model.values():
        mapper.invalidate_ids(info, ids)


def _resolve(
    mapper: Mapper, outcomes: Sequence[BulkOutcome], refresh: bool | Literal["wait_for"] | None
) -> list[BulkOutcome]:
    result = list(outcomes)
    checked: set[int] = set()
    for _round in range(_RESOLVE_ROUNDS):
        open_ = [
            i
            for i, o in enumerate(result)
            if (o.status == 0 and o.error_type != UNKNOWN)
            or (i in checked and o.status == 409 and _rechecks(o.action))
        ]
        if not open_:
            break
        try:
            stored = _read_back(mapper, [result[i].action for i in open_])
        except (ApiError, TransportError) as exc:
            for i in open_:
                if result[i].status == 0:
                    result[i] = _unknown(result[i], f"reading it back failed: {exc}")
            return result
        resend: list[BulkAction] = []
        positions: list[int] = []
        for i, current in zip(open_, stored, strict=True):
            action = result[i].action
            if current is _UNREADABLE:
                verdict: Verdict = ("unknown", None)
            else:
                verdict = _verdict(action, current)  # type: ignore[arg-type]
            if verdict[0] == "applied":
                result[i] = _applied(action, current)  # type: ignore[arg-type]
            elif result[i].status != 0:
                continue  # a 409 to our resend, and not ours after all: a real conflict
            elif verdict[0] == "resend":
                condition = verdict[1]
                if condition is not None:  # never overwrite what was written since
                    action = attrs.evolve(
                        action, if_seq_no=condition[0], if_primary_term=condition[1]
                    )
                resend.append(action)
                positions.append(i)
            else:
                result[i] = _unknown(
                    result[i], "the stored document changed since, or a script may have run"
                )
        if not resend:
            continue
        checked.update(positions)
        for i, outcome in zip(positions, _write_again(mapper, resend, refresh), strict=True):
            result[i] = outcome
    for i, outcome in enumerate(result):
        if outcome.status == 0 and outcome.error_type != UNKNOWN:
            result[i] = _unknown(outcome, "no answer after resending")
    return result


def _write_again(
    mapper: Mapper, actions: list[BulkAction], refresh: bool | Literal["wait_for"] | None
) -> list[BulkOutcome]:
    """Resend ``actions``; a rejected request makes them failures (the other outcomes of
    the write are still settled)."""
    try:
        return mapper.writer.write(actions, refresh=refresh)
    except BulkRequestError as exc:
        known = {id(o.action): o for o in exc.outcomes}
        return [
            known.get(id(a))
            or BulkOutcome(
                action=a,
                ok=False,
                status=exc.status,
                id=a.id,
                index=a.index,
                error_type=exc.error_type,
                reason=f"resending it was rejected: {exc.reason}",
            )
            for a in actions
        ]


def _rechecks(action: BulkAction) -> bool:
    """Whether a 409 answer to a resend may hide our own first attempt (applied while the
    read-back ran): such actions are read back once more."""
    return action.op in ("create", "index") or (
        action.op == "update" and action.body is not None and "doc" in action.body
    )


class _Unreadable:
    __slots__ = ()


#: a read-back entry the server answered with an error (not "missing": unknown)
_UNREADABLE = _Unreadable()

#: ``(verdict, condition)``: ``applied``, ``resend`` (with the ``(seq_no, primary_term)``
#: to condition the resend on, or ``None``) or ``unknown``
Verdict = tuple[str, tuple[int, int] | None]


def _read_back(mapper: Mapper, actions: Sequence[BulkAction]) -> list[Any]:
    """The stored documents of ``actions`` (real-time ``_mget``): the hit, ``None`` when
    missing, ``_UNREADABLE`` when the server answered that entry with an error."""
    docs = []
    for action in actions:
        spec: dict[str, Any] = {"_index": action.index, "_id": action.id}
        if action.routing is not None:
            spec["routing"] = action.routing
        docs.append(spec)
    response = mapper.client.mget(docs=docs)
    return [
        _UNREADABLE if "error" in d else (d if d.get("found") else None)
        for d in response.body["docs"]
    ]


def _seen(action: BulkAction) -> tuple[int, int] | None:
    """The version the written document was read at, if known (unconditional writes of
    loaded documents): a resend is safe only while the store still holds it."""
    ref = action.ref
    if not isinstance(ref, PendingWrite):
        return None
    version = ref.guard
    if version is None and ref.doc is not None and ref.kind != "patch":
        state = state_of(ref.doc)
        version = state.version if state is not None else None
    seq_no, primary_term = split_version(version)
    return None if seq_no is None or primary_term is None else (seq_no, primary_term)


def _verdict(action: BulkAction, current: dict[str, Any] | None) -> Verdict:
    """Whether a write without an answer was applied, is safe to send again (and on what
    condition), or is unknown; see docs/architecture.md for the table."""
    op = action.op
    version = None if current is None else (current.get("_seq_no"), current.get("_primary_term"))
    condition = (
        None
        if action.if_seq_no is None or action.if_primary_term is None
        else (action.if_seq_no, action.if_primary_term)
    )
    body = action.body or {}
    if op == "delete" and current is None:
        return ("applied", None)
    if current is not None and (
        (op in ("create", "index") and _same(action.body, current.get("_source")))
        or (
            op == "update"
            and "doc" in body
            and _contains(current.get("_source") or {}, _normal(body["doc"]))
        )
    ):
        return ("applied", None)
    if op == "create":
        return ("resend", None)  # absent (or another's: the resend answers 409)
    if condition is not None:  # a conditional write: applied iff the version moved
        return ("resend", None) if version == condition else ("unknown", None)
    if op == "update" and "doc" not in body:
        return ("unknown", None)  # an unconditional script: it may have run
    if op == "update":
        return ("resend", None)  # merging the same fields again is harmless
    seen = _seen(action)
    if seen is not None:
        if version == seen:
            return ("resend", seen)
        return ("unknown", None)
    if current is None:  # an unconditional index of a document not stored
        return ("resend", None)
    return ("resend", version)  # type: ignore[return-value]  # what is stored now, only


def _normal(value: Any) -> Any:
    """``value`` as it reads back from JSON (dates as strings, tuples as lists...)."""
    return _json.loads(_json.dumps(value))


def _same(body: Mapping[str, Any] | None, source: Any) -> bool:
    return body is not None and isinstance(source, dict) and _normal(body) == source


def _contains(source: Mapping[str, Any], doc: Mapping[str, Any]) -> bool:
    """Whether ``source`` holds every value of the partial ``doc`` (deep)."""
    for key, value in doc.items():
        current = source.get(key, _ABSENT)
        if isinstance(value, dict) and isinstance(current, dict):
            if not _contains(current, value):
                return False
        elif current != value:
            return False
    return True


def _applied(action: BulkAction, current: dict[str, Any] | None) -> BulkOutcome:
    status, result = {"create": (201, "created"), "delete": (200, "deleted")}.get(
        action.op, (200, "updated")
    )
    return BulkOutcome(
        action=action,
        ok=True,
        status=status,
        id=action.id,
        index=(current or {}).get("_index", action.index),
        result=result,
        seq_no=None if current is None else current.get("_seq_no"),
        primary_term=None if current is None else current.get("_primary_term"),
    )


def _unknown(outcome: BulkOutcome, why: str) -> BulkOutcome:
    return attrs.evolve(
        outcome,
        ok=False,
        status=0,
        error_type=UNKNOWN,
        reason=f"the {outcome.action.op} was sent but its outcome is unknown ({why}; "
        f"first failure: {outcome.error_type}: {outcome.reason})",
    )


# -- settling: documents, signals, notifications, errors ---------------------------------


def _change_type(pending: PendingWrite) -> ChangeType:
    if pending.kind == "save" and pending.info.soft_deletes and pending.doc.is_deleted:
        original = pending.original_source
        if original is not None and not original.get("is_deleted"):
            return ChangeType.REMOVED
    return _CHANGE[pending.kind]


def publish_changes(
    mapper: Mapper,
    info: ModelInfo,
    changes: Sequence[tuple[str | None, ChangeType]],
    options: Options,
) -> None:
    """Publish ``entity_changed`` for each ``(id, change_type)``, honouring cancellation.

    Runs after the write was confirmed: a failing ``before_publish_entity_changed``
    receiver or bus is logged (with the model and id) and the next message still goes out.
    """
    if not changes or not options.notifications or not mapper.has_subscribers(info.cls):
        return
    before = signals.before_publish_entity_changed
    for doc_id, change_type in changes:
        message = signals.EntityChanged(type=info.name, id=doc_id, change_type=change_type)
        try:
            if signals.has_receivers(before, info.cls):
                before.send(info.cls, message=message, options=options)
                if message.cancel:
                    continue
            mapper.publish(info.cls, message, options)
        except Exception:
            log.exception(
                "publishing %s %s of %s %r failed; the write itself is stored",
                change_type.name,
                "change",
                info.name,
                doc_id,
            )


def _apply_success(pending: PendingWrite, outcome: BulkOutcome, action: BulkAction) -> None:
    doc = pending.doc
    if pending.kind == "remove":
        object.__setattr__(doc, "_esm_state", None)
        return
    if pending.info.versioned:
        _set(doc, "version", outcome.version)
    if pending.written is not None:
        written = pending.written
    else:
        assert isinstance(action.body, dict)
        written = action.body
    state = remember(doc, written, outcome.index, outcome.version)
    state.assigned = None
    if pending.written is None:
        state.partial = False


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


def _failure(outcome: BulkOutcome) -> BulkItemFailure:
    """The failure of an outcome, naming the caller's document (not the PendingWrite)."""
    ref = outcome.action.ref
    document = ref.doc if isinstance(ref, PendingWrite) else ref
    return attrs.evolve(outcome.to_failure(), document=document)


def write_documents(
    mapper: Mapper,
    pendings: Sequence[PendingWrite],
    options: Options,
    *,
    on_success: Callable[[PendingWrite], None] | None = None,
) -> list[PendingWrite]:
    """Run the pipeline of the module docstring; returns the confirmed writes.

    Raises (after applying every success) the typed error of the failed items; ``on_success``
    is called for each confirmed write before the "-ed" signals (sessions use it to update
    their bookkeeping).
    """
    if not pendings:
        return []
    now = parse_datetime(mapper.clock())  # an injected clock may be naive or not UTC
    try:
        for pending in pendings:
            _prepare(pending, now)
        actions = _before_write(mapper, pendings, options)
    except BaseException:
        for pending in pendings:  # vetoed or invalid: nothing was sent, leave no trace
            pending.undo_prepare()
        raise
    try:
        outcomes = send(mapper, actions, refresh=refresh_param(options.consistency))
    except BulkRequestError as exc:
        settle(mapper, exc.outcomes, options, on_success)
        raise
    return settle(mapper, outcomes, options, on_success, raise_failures=True)


def _before_write(
    mapper: Mapper, pendings: Sequence[PendingWrite], options: Options
) -> list[BulkAction]:
    """Steps 2-4: "-ing" signals, validation and id checks, changing; the bulk actions."""
    groups: dict[tuple[type, str], list[PendingWrite]] = {}
    for pending in pendings:
        groups.setdefault((pending.info.cls, pending.kind), []).append(pending)
    for (cls, kind), group in groups.items():
        _fire(_BEFORE[kind], cls, group, change_type=_CHANGE[kind], options=options)
    for pending in pendings:  # items mutated in place are checked like assignments
        if pending.kind != "remove":
            pending.info.normalize(pending.doc)
    if options.validate:
        for pending in pendings:
            if pending.kind != "remove":
                pending.doc.validate()
    targets = [
        mapper.spec(p.info.cls).write_index_for(p.doc, removing=p.kind == "remove")
        for p in pendings
    ]
    for pending, target in zip(pendings, targets, strict=True):
        check_id(pending.doc.id, index=target)
    for (cls, kind), group in groups.items():
        _fire(signals.documents_changing, cls, group, change_type=_CHANGE[kind], options=options)

    return [document_action(p, t, options) for p, t in zip(pendings, targets, strict=True)]


def settle(
    mapper: Mapper,
    outcomes: Sequence[BulkOutcome],
    options: Options,
    on_success: Callable[[PendingWrite], None] | None,
    *,
    raise_failures: bool = False,
) -> list[PendingWrite]:
    """Step 6-7 for add/save/remove outcomes: apply confirmed writes, fire the "-ed"
    signals and notifications (failures there are logged), raise the failures' error."""
    confirmed: list[PendingWrite] = []
    changes: dict[int, ChangeType] = {}
    failed: list[BulkOutcome] = []
    for outcome in outcomes:
        pending: PendingWrite = outcome.action.ref
        if outcome.ok:
            changes[id(pending)] = _change_type(pending)  # before the originals move on
            _apply_success(pending, outcome, outcome.action)
            confirmed.append(pending)
        elif pending.kind == "remove" and outcome.status == 404:
            object.__setattr__(pending.doc, "_esm_state", None)  # already gone: a no-op (Q4)
        else:
            failed.append(outcome)
    mapper.track_soft_deletes(confirmed)
    groups: dict[tuple[type, str], list[PendingWrite]] = {}
    for pending in confirmed:
        if on_success is not None:
            on_success(pending)
        groups.setdefault((pending.info.cls, pending.kind), []).append(pending)
    for (cls, kind), group in groups.items():
        _fire_after(_AFTER[kind], cls, group, change_type=_CHANGE[kind], options=options)
        _fire_after(
            signals.documents_changed, cls, group, change_type=_CHANGE[kind], options=options
        )
        publish_changes(mapper, group[0].info, [(p.doc.id, changes[id(p)]) for p in group], options)
    if failed and raise_failures:
        raise failure_error(failed, [p.doc for p in confirmed], len(outcomes))
    return confirmed
