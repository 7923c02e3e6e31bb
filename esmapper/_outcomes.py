"""Sending writes, and settling the ones whose answer was lost.

The one owner of "an unknown outcome is unknown" for document writes, and of cache
invalidation: :func:`send` hands actions to the bulk writer (which never resends a
request without an answer), reads back what got no answer and decides per item (applied /
safe to resend, and on which version condition / unknown; the table is in
docs/architecture.md), then removes every id it sent from the cache, whatever happened.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import attrs
from elastic_transport import TransportError
from elasticsearch import ApiError

from esmapper import _json
from esmapper._cache_hooks import invalidate_written
from esmapper._fenced import superseded
from esmapper._pending import PendingWrite, split_version
from esmapper.bulk import (
    NOT_SENT,
    BulkAction,
    BulkAnswer,
    BulkOutcome,
    BulkRequestError,
    outcomes_of,
)
from esmapper.errors import EsmapperError
from esmapper.indexes._fence import is_fence
from esmapper.model.state import state_of

if TYPE_CHECKING:
    from esmapper._context import Context
    from esmapper.model.info import ModelInfo

__all__ = ["UNKNOWN", "send", "send_answers"]

#: ``error_type`` of a write whose outcome stayed unknown after reading it back.
UNKNOWN = "outcome_unknown"
#: Rounds of "read back, resend what was not applied" for writes without an answer.
_RESOLVE_ROUNDS = 3


#: (C-level getters for the per-batch checks: no Python call per item)
_MODEL = operator.attrgetter("ref.info.cls")
_INFO = operator.attrgetter("ref.info")
_ID = operator.attrgetter("id")
_OK = operator.attrgetter("ok")


class _Absent:
    __slots__ = ()


_ABSENT = _Absent()


def send(
    ctx: Context,
    actions: Sequence[BulkAction],
    *,
    refresh: bool | Literal["wait_for"] | None,
) -> list[BulkOutcome]:
    """:func:`send_answers`, with a :class:`BulkOutcome` for every action."""
    return outcomes_of(actions, send_answers(ctx, actions, refresh=refresh))


def send_answers(
    ctx: Context,
    actions: Sequence[BulkAction],
    *,
    refresh: bool | Literal["wait_for"] | None,
) -> Sequence[BulkAnswer]:
    """Send ``actions`` (``ref``: their :class:`PendingWrite`) through the bulk writer.

    Returns one :data:`~esmapper.bulk.BulkAnswer` per action, in order: the server's item for
    a write answered as applied, a :class:`BulkOutcome` for the others (and for every
    action once something was not applied: see below). Actions that got no answer (a dropped
    connection, a timeout, an unreadable response) are read back (one ``_mget``): a write
    found applied is confirmed with the stored version; one found not applied is sent again
    (safe: a ``create`` or a conditional write cannot apply twice, an unconditional
    ``index``/``delete``/partial ``update`` leaves the same result); a script update
    without a version condition is never resent. A delete followed in the same call by a
    confirmed ``create`` of the same document (a removal, then an add of its id) is
    confirmed without looking at what is stored: that is the create's document, which a
    resend would delete. What stays undecided is a failure with
    status 0 and ``error_type="outcome_unknown"``. Every id in ``actions`` is removed
    from the cache afterwards, whatever its outcome (also when this raises).

    Actions that write through one of their model's aliases are sent with
    ``require_alias`` (set here, on the caller's actions): Elasticsearch then never creates
    an index named like the alias (with guessed mappings) when the alias is missing, it
    answers 404. A ``create``/``index`` answered so (the alias was deleted after this
    process ensured it, e.g. by another mapper's ``delete_indexes``) is sent once more
    after its target is made to exist again (a refused item was not applied; a time-series
    period is forgotten and its partition ensured again:
    :meth:`IndexSpec.ensure_again <esmapper.indexes.spec.IndexSpec.ensure_again>`); when
    that is impossible (a concrete index took the alias name) the failure's reason says
    why (:func:`esmapper.indexes.occupied.alias_taken_error`).

    A write sent to a fence alias (conditioned on a version read from that fence's index,
    :meth:`IndexSpec.conditioned_target
    <esmapper.indexes.spec.IndexSpec.conditioned_target>`) refused because the fence is
    gone (a reindex's swap removed it) is never made to exist again: it becomes a version
    conflict (:func:`esmapper._fenced.superseded`), unless the document is still stored with
    the content the write's version was read with: then it is sent again at the current
    version. Read back, it is read through the same fence; the fence gone, it stays
    unknown.
    """
    _require_aliases(ctx, actions)
    _shape(ctx, actions)
    try:
        try:
            answers = ctx.writer._write(actions, refresh=refresh)
        except BulkRequestError as exc:
            exc.outcomes = _resolve(ctx, exc.outcomes, refresh)
            raise
        if BulkOutcome not in map(type, answers):  # the common case: every item applied
            return answers
        outcomes = superseded(ctx, outcomes_of(actions, answers), _resend(ctx, refresh))
        outcomes = _recreate_vanished(ctx, outcomes, refresh)
        return _resolve(ctx, outcomes, refresh)
    finally:
        _invalidate(ctx, actions)


def _shape(ctx: Context, actions: Sequence[BulkAction]) -> None:
    """The ``shape`` point (:mod:`esmapper._features`): each model's features complete
    its actions in place (an ingest pipeline, a routing), before the first send; resends
    are these same actions (or copies of them). A model no feature shapes costs nothing
    but the set of the batch's models."""
    infos = set(map(_INFO, actions))
    for info in infos:
        if info.points.shape:
            mine = actions if len(infos) == 1 else [a for a in actions if a.ref.info is info]
            for hook in info.points.shape:
                hook(ctx, mine)


def _expected(ctx: Context, action: BulkAction) -> Mapping[str, Any] | None:
    """The ``expected_source`` point: what an applied ``action`` stored, as its model's
    features tell (its body when none changes it; ``None``: it cannot be told)."""
    source: Mapping[str, Any] | None = action.body
    for hook in action.ref.info.points.expected_source:
        source = hook(ctx, action, source)
        if source is None:
            break
    return source


def _require_aliases(ctx: Context, actions: Sequence[BulkAction]) -> None:
    """The guard of "every document write goes through the model's aliases"
    (:meth:`IndexSpec.write_name <esmapper.indexes.spec.IndexSpec.write_name>`), in the one
    place every document write passes, before anything is sent: an action naming one of
    its model's physical indexes raises ``ValueError`` (a programming error: the path
    that built it must map its target with ``write_name``; such a write would not follow
    a reindex's alias swap, and after the old index's delete Elasticsearch would create it
    again). Actions whose target is one of their model's aliases are then marked
    ``require_alias`` (set here, on the caller's actions). One spec lookup per model and
    target."""
    aliases: dict[tuple[type, str], bool] = {}
    last: tuple[type, str] | None = None
    flag = False
    for action in actions:
        cls = action.ref.info.cls
        if last is not None and last[0] is cls and last[1] == action.index:
            if action.op != "delete":  # the same model and target as the previous action
                action.require_alias = flag
            continue
        key = last = (cls, action.index)
        flag = aliases.get(key)  # type: ignore[assignment]
        if flag is None:
            spec = ctx.spec(cls)
            through = spec.write_name(action.index)  # ValueError: not the model's at all
            if through != action.index:
                raise ValueError(
                    f"{spec.info.name}: a {action.op} of {action.id!r} names the physical "
                    f"index {action.index!r}; document writes go through {through!r} "
                    "(IndexSpec.write_name), so that they follow a reindex's alias swap"
                )
            flag = aliases[key] = spec.is_alias(action.index)
        if action.op != "delete":  # a delete never creates an index
            action.require_alias = flag


def _vanished(outcome: BulkOutcome) -> bool:
    """A create/index refused because its alias does not exist (``require_alias``); never
    a write sent to a fence alias (:func:`esmapper._fenced.superseded`: a fence is not
    made again)."""
    return (
        outcome.status == 404
        and outcome.error_type == "index_not_found_exception"
        and outcome.action.require_alias
        and outcome.action.op in ("create", "index")
        and not is_fence(outcome.action.index)
    )


def _recreate_vanished(
    ctx: Context, outcomes: list[BulkOutcome], refresh: bool | Literal["wait_for"] | None
) -> list[BulkOutcome]:
    """Make the targets of writes whose alias vanished exist again
    (:meth:`IndexSpec.ensure_again <esmapper.indexes.spec.IndexSpec.ensure_again>`, once
    per model and target), and send those writes once more."""
    positions = [i for i, o in enumerate(outcomes) if _vanished(o)]
    if not positions:
        return outcomes
    result = list(outcomes)
    by_target: dict[tuple[type, str], list[int]] = {}
    for i in positions:
        action = result[i].action
        by_target.setdefault((action.ref.info.cls, action.index), []).append(i)
    resend: list[int] = []
    for (cls, target), group in by_target.items():
        try:
            ctx.spec(cls).ensure_again(ctx.client, target)
        except (EsmapperError, ApiError, TransportError) as exc:
            for i in group:
                result[i] = attrs.evolve(
                    result[i],
                    error_type=getattr(exc, "error_type", None) or result[i].error_type,
                    reason=f"{result[i].reason}; making the index again failed: {exc}",
                )
            continue
        resend += group
    if resend:
        resend.sort()
        again = _write_again(ctx, [result[i].action for i in resend], refresh)
        for i, outcome in zip(resend, again, strict=True):
            result[i] = outcome
    return result


def _invalidate(ctx: Context, actions: Sequence[BulkAction]) -> None:
    """Remove the cache entries of every id of ``actions``, per model (its own cache
    client or the mapper's), then call its repository's ``invalidate_cache_for`` hook
    with the documents (:func:`esmapper._cache_hooks.invalidate_written`)."""
    if not actions or (ctx.documents is None and not ctx.own_documents):
        return  # nothing written, or no cache client at all
    if len(set(map(_MODEL, actions))) == 1:  # the common case: one model
        info = actions[0].ref.info
        ctx.invalidate_ids(info, map(_ID, actions))
        if ctx.write_hooks and info.cls in ctx.write_hooks:
            invalidate_written(ctx, info, [a.ref for a in actions])
        return
    by_model: dict[ModelInfo, list[BulkAction]] = {}
    for action in actions:
        by_model.setdefault(action.ref.info, []).append(action)
    for info, mine in by_model.items():
        ctx.invalidate_ids(info, map(_ID, mine))
        if ctx.write_hooks and info.cls in ctx.write_hooks:
            invalidate_written(ctx, info, [a.ref for a in mine])


def _resolve(
    ctx: Context, outcomes: Sequence[BulkOutcome], refresh: bool | Literal["wait_for"] | None
) -> list[BulkOutcome]:
    result = list(outcomes)
    checked: set[int] = set()
    if all(map(_OK, result)):  # the common case: every item answered and applied
        return result
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
            stored = _read_back(ctx, [result[i].action for i in open_])
            made = {  # what a feature made of the body (else the body is compared)
                i: _expected(ctx, result[i].action)
                for i, current in zip(open_, stored, strict=True)
                if result[i].action.op in ("create", "index")
                and result[i].action.ref.info.points.expected_source
                and isinstance(current, dict)
            }
        except (ApiError, TransportError) as exc:
            for i in open_:
                # (an item never sent stays a failure: it was not applied)
                if result[i].status == 0 and result[i].error_type != NOT_SENT:
                    result[i] = _unknown(result[i], f"reading it back failed: {exc}")
            return result
        resend: list[BulkAction] = []
        positions: list[int] = []
        verdicts: list[Verdict] = [
            ("unknown", None)
            if current is _UNREADABLE
            else _verdict(result[i].action, current, made.get(i, result[i].action.body))  # type: ignore[arg-type]
            for i, current in zip(open_, stored, strict=True)
        ]
        written = _written_after(result, open_, verdicts)
        for k, i in enumerate(open_):
            action = result[i].action
            key = _doc_key(action)
            if action.op == "delete" and any(
                op == "create" and j > i for j, op in written.get(key, ())
            ):
                # a create of its document confirmed later in this call (a create applies
                # only where nothing is stored): what is stored is that create's, this
                # delete's document is gone (and resending it would delete the create's)
                verdicts[k] = ("gone", None)
            elif (
                verdicts[k][0] == "resend"
                and result[i].status == 0
                and action.op != "create"  # a create's resend overwrites nothing
                and key in written
            ):
                later = [op for j, op in written[key] if j > i]
                if later:  # a resend would land after a later write of this document
                    replaced = later[-1] in ("create", "index", "delete")
                    verdicts[k] = ("gone", None) if replaced else ("unknown", None)
        for i, current, verdict in zip(open_, stored, verdicts, strict=True):
            action = result[i].action
            if verdict[0] == "gone":
                result[i] = _applied(action, None)
            elif verdict[0] == "applied":
                result[i] = _applied(action, current)  # type: ignore[arg-type]
            elif result[i].status != 0:
                if current is _UNREADABLE:  # e.g. its fence gone: ours may have landed
                    result[i] = _unknown(result[i], "reading it back after a 409 failed")
                continue  # a 409 to our resend, and not ours after all: a real conflict
            elif verdict[0] == "resend":
                condition = verdict[1]
                if condition is not None and action.if_seq_no is None:
                    # never overwrite what was written since: conditioned on the version
                    # read back, so sent to the fence of the index it was read from
                    spec = ctx.spec(action.ref.info.cls)
                    action = attrs.evolve(
                        action,
                        index=spec.conditioned_target(action.index, _index_of(current)),
                        if_seq_no=condition[0],
                        if_primary_term=condition[1],
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
        for i, outcome in zip(positions, _write_again(ctx, resend, refresh), strict=True):
            result[i] = outcome
    for i, outcome in enumerate(result):
        if outcome.status == 0 and outcome.error_type != UNKNOWN:
            result[i] = _unknown(outcome, "no answer after resending")
    return result


def _doc_key(action: BulkAction) -> tuple[type, str | None, str | None]:
    """One document of a write: its model, id and routing (not its target: a delete at a
    version goes to its index's fence alias, an add of the same id to the model's alias;
    an id is unique per model)."""
    return action.ref.info.cls, action.id, action.routing


def _written_after(
    result: Sequence[BulkOutcome], open_: Sequence[int], verdicts: Sequence[Verdict]
) -> dict[tuple[type, str | None, str | None], list[tuple[int, str]]]:
    """``document -> [(position, op)]`` of the writes of this call confirmed applied (answered
    ok, or just found applied), in order. Writes to one document are applied in the order
    given (the bulk writer), so a write without an answer followed by a confirmed one of
    its document must not be sent again (a ``create`` excepted: it cannot overwrite): the
    resend would land after it. When the last
    such write replaces the whole document (``create``/``index``/``delete``), the store is
    what it would be had ours applied (it is settled as applied, like a delete followed by
    a create); after a partial ``update`` only, ours stays unknown."""
    found: dict[tuple[type, str | None, str | None], list[tuple[int, str]]] = {}
    applied = {i for i, v in zip(open_, verdicts, strict=True) if v[0] == "applied"}
    for j, outcome in enumerate(result):
        if outcome.ok or j in applied:
            found.setdefault(_doc_key(outcome.action), []).append((j, outcome.action.op))
    return found


def _resend(
    ctx: Context, refresh: bool | Literal["wait_for"] | None
) -> Callable[[list[BulkAction]], list[BulkOutcome]]:
    """:func:`_write_again` for :func:`esmapper._fenced.superseded`'s re-checked writes."""
    return lambda actions: _write_again(ctx, actions, refresh, recheck=False)


def _write_again(
    ctx: Context,
    actions: list[BulkAction],
    refresh: bool | Literal["wait_for"] | None,
    *,
    recheck: bool = True,
) -> list[BulkOutcome]:
    """Resend ``actions``; a rejected request makes them failures (the other outcomes of
    the write are still settled). A resend refused by a gone fence is a conflict
    (:func:`esmapper._fenced.superseded`; re-checked against the content unless
    ``recheck`` is false: the resends of that re-check)."""
    try:
        outcomes = ctx.writer.write(actions, refresh=refresh)
        return superseded(ctx, outcomes, _resend(ctx, refresh) if recheck else None)
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
#: to condition the resend on, or ``None``), ``unknown``, or ``gone`` (a delete followed in
#: the same write by a confirmed create of its document)
Verdict = tuple[str, tuple[int, int] | None]


def _read_back(ctx: Context, actions: Sequence[BulkAction]) -> list[Any]:
    """The stored documents of ``actions`` (real-time ``_mget``): the hit, ``None`` when
    missing, ``_UNREADABLE`` when the server answered that entry with an error."""
    docs = []
    for action in actions:
        spec: dict[str, Any] = {"_index": action.index, "_id": action.id}
        if action.routing is not None:
            spec["routing"] = action.routing
        docs.append(spec)
    response = ctx.client.mget(docs=docs)
    return [
        _UNREADABLE if "error" in d else (d if d.get("found") else None)
        for d in response.body["docs"]
    ]


def _seen(action: BulkAction) -> tuple[tuple[int, int], str | None] | None:
    """The version the written document was read at and the physical index it was read
    from (``None``: not known), if known (unconditional writes of loaded documents): a
    resend is safe only while that index still holds that version."""
    ref = action.ref
    if not isinstance(ref, PendingWrite):
        return None
    version = ref.guard
    state = state_of(ref.doc) if ref.doc is not None else None
    if version is None and ref.doc is not None and ref.kind != "patch":
        version = state.version if state is not None else None
    seq_no, primary_term = split_version(version)
    if seq_no is None or primary_term is None:
        return None
    return (seq_no, primary_term), (state.index if state is not None else None)


def _index_of(current: Any) -> str | None:
    """The physical index a read-back hit came from."""
    return current.get("_index") if isinstance(current, dict) else None


def _verdict(
    action: BulkAction, current: dict[str, Any] | None, sent: Mapping[str, Any] | None
) -> Verdict:
    """Whether a write without an answer was applied, is safe to send again (and on what
    condition), or is unknown; see docs/architecture.md for the table. ``sent``: what the
    write stores when applied (its body, or what a feature makes of it: an ingest pipeline;
    ``None``: not known)."""
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
        (op in ("create", "index") and _same(sent, current.get("_source")))
        or (
            op == "update"
            and "doc" in body
            and _contains(current.get("_source") or {}, _normal(body["doc"]))
        )
    ):
        return ("applied", None)
    if op == "create":
        if current is not None and sent is not action.body:
            return ("unknown", None)  # maybe ours, made by the server (a pipeline) otherwise
        return ("resend", None)  # absent (or another's: the resend answers 409)
    if condition is not None:  # a conditional write: applied iff the version moved
        return ("resend", None) if version == condition else ("unknown", None)
    if op == "update" and "doc" not in body:
        return ("unknown", None)  # an unconditional script: it may have run
    if op == "update":
        return ("resend", None)  # merging the same fields again is harmless
    seen = _seen(action)
    if seen is not None:
        at, read_from = seen
        # numbers read from another index (before a reindex's swap) say nothing here
        if version == at and read_from in (None, _index_of(current)):
            return ("resend", at)
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
