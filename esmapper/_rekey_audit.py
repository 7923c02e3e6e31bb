"""What :func:`esmapper.rekey.rekey` would change: each document classified from its own
fields (:func:`plan_for`) and the read-only scan of a model's index (:func:`audit`: a
refresh, then a point in time paged in ``_shard_doc`` order). The statuses, what the scan
sends and why are described in :mod:`esmapper.rekey`, which re-exports these names.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final, Literal

import attrs
from elasticsearch import ApiError, Elasticsearch, NotFoundError, TransportError

from esmapper._context import context_of
from esmapper._pit import context_reason, is_context_missing, lost_shards
from esmapper._shards import refusal, require_complete
from esmapper._text import article
from esmapper.errors import IdTooLongError, InvalidIdTermError, MigrationError
from esmapper.ids import compose_id, id_term
from esmapper.indexes._pit_target import pit_target
from esmapper.model.info import ModelInfo

if TYPE_CHECKING:
    from esmapper._context import Context, HasContext

__all__ = [
    "KEEP_ALIVE",
    "MAX_BATCH_SIZE",
    "RekeyPlan",
    "RekeyReport",
    "Status",
    "TypeAudit",
    "audit",
    "audit_types",
    "id_info",
    "plan_for",
]

Status = Literal["ok", "rewrite", "blocked"]

KEEP_ALIVE: Final = "5m"
"""How long the point in time stays open between two pages of the scan."""
MAX_BATCH_SIZE: Final = 10_000


@attrs.frozen(slots=True)
class RekeyPlan:
    """What re-keying does with one stored document.

    ``status`` is ``ok`` (``old_id`` already is the composed id), ``rewrite`` (to be moved
    to ``new_id``) or ``blocked`` (cannot be moved, see ``reason``; ``new_id`` is the
    composed id when there is one, e.g. one over 512 bytes, else ``None``). ``index`` is the
    physical index, ``seq_no``/``primary_term`` the version seen by the scan, ``routing``
    the document's custom routing and ``source`` its raw ``_source``.
    """

    old_id: str
    new_id: str | None
    status: Status
    index: str
    seq_no: int
    primary_term: int
    reason: str | None = None
    routing: str | None = None
    source: Mapping[str, Any] | None = attrs.field(default=None, repr=False, eq=False)


@attrs.define(slots=True)
class RekeyReport:
    """The outcome of :func:`rekey`.

    ``to_rewrite`` counts the ``rewrite`` plans found (in both modes); ``rewritten`` the
    documents actually moved (always 0 in a dry run); ``failed`` the moves that failed and
    were undone or left alone; ``ok`` and ``blocked`` the other statuses. ``interrupted``
    counts moves an earlier run left between their create and their delete (the new id
    already holds the document): found, in a dry run; completed, with ``apply``. ``lines``
    holds every line passed to ``echo``.
    """

    applied: bool
    ok: int = 0
    to_rewrite: int = 0
    rewritten: int = 0
    blocked: int = 0
    failed: int = 0
    interrupted: int = 0
    lines: list[str] = attrs.field(factory=list)

    @property
    def summary(self) -> str:
        """One line for the end of a run (not echoed by :func:`rekey` itself)."""
        if not self.applied:
            note = f" ({self.interrupted} interrupted)" if self.interrupted else ""
            return (
                f"dry run: {self.to_rewrite} to rewrite{note}, {self.blocked} blocked, "
                f"{self.ok} ok; nothing was changed"
            )
        note = f" ({self.interrupted} completing an interrupted move)" if self.interrupted else ""
        return (
            f"{self.rewritten} rewritten{note}, {self.failed} failed, {self.blocked} blocked, "
            f"{self.ok} ok"
        )


def id_info(model: type) -> ModelInfo:
    info: ModelInfo | None = getattr(model, "__esmapper__", None)
    if info is None or not info.is_document or info.index is None:
        raise TypeError(f"{model!r} is not an esmapper Document")
    if not info.index.id_fields:
        raise MigrationError(
            f"{info.name} has no Index.id_fields: its ids are not composed from fields, "
            "so there is nothing to re-key"
        )
    return info


@attrs.frozen(slots=True)
class TypeAudit:
    """The re-keying decision for one model.

    ``parts`` counts the id terms once the routing term is set aside
    (``Index.id_fields`` minus ``routing_field``; 0: generated ids); ``affected`` is true
    when there are several (joining them is what an old composition may have done
    differently), ``reason`` says why it is or is not. ``ok``/``rewrite``/``blocked`` count
    the stored documents by :func:`audit` status (``None``: not scanned, the model composes
    no ids).
    """

    model: str
    index: str
    parts: int
    affected: bool
    reason: str
    ok: int | None = None
    rewrite: int | None = None
    blocked: int | None = None

    @property
    def line(self) -> str:
        """``Message  index=inbox  id parts=3 -> AFFECTED (2 to rewrite, 0 blocked, 5 ok)``."""
        verdict = "AFFECTED" if self.affected else "not affected"
        counts = (
            f"{self.rewrite} to rewrite, {self.blocked} blocked, {self.ok} ok"
            if self.ok is not None
            else self.reason
        )
        return f"{self.model}  index={self.index}  id parts={self.parts} -> {verdict} ({counts})"


def audit_types(
    mapper: Context | HasContext, models: list[type], *, batch_size: int = 500
) -> Iterator[TypeAudit]:
    """The :class:`TypeAudit` of each of ``models`` (documents only), in order: models that
    compose their ids (``Index.id_fields``) are scanned with :func:`audit` (read only; a
    model whose index does not exist yet counts 0 of each); the others are reported
    without a request."""
    ctx = context_of(mapper)
    for model in models:
        info: ModelInfo | None = getattr(model, "__esmapper__", None)
        if info is None or not info.is_document or info.index is None:
            continue
        fields = info.index.id_fields
        routing = info.index.extras.get("routing_field")
        parts = len([f for f in fields if f != routing])
        index = ctx.spec(model).alias
        if not fields:
            yield TypeAudit(model.__name__, index, 0, False, "generated ids: nothing to re-key")
            continue
        counts = {"ok": 0, "rewrite": 0, "blocked": 0}
        try:
            plans: Iterator[RekeyPlan] = audit(ctx, model, batch_size=batch_size)
        except MigrationError:  # its index does not exist yet: nothing stored
            plans = iter(())
        for plan in plans:  # a scan lost midway raises (counts would be short)
            counts[plan.status] += 1
        reason = (
            f"{parts} terms joined into one id"
            if parts > 1
            else "one term: escaping alone can change it"
        )
        yield TypeAudit(model.__name__, index, parts, parts > 1, reason, **counts)


def _terms(info: ModelInfo, source: Mapping[str, Any]) -> list[str] | str:
    """The id terms of a document read from its own fields, or why there are none."""
    assert info.index is not None
    names = info.index.id_fields
    for name in names:
        if name not in source:
            return f"field {name!r} is missing"
        value = source[name]
        if value is None or value == "":
            return f"field {name!r} is empty"
        if isinstance(value, list | dict):
            return f"field {name!r} holds {article(type(value).__name__)}, not a single value"
    try:
        # Load only the id fields, the way the model loads them (dates, enums...); strictly:
        # a value the model does not know cannot give the id add would compose.
        strict = info.lenient.strict
        assert strict is not None
        doc = strict({name: source[name] for name in names}, None, None)
        values = [getattr(doc, name) for name in names]
    except Exception as exc:  # the model cannot read a value; nothing is written
        return f"fields {', '.join(names)} cannot be read: {exc}"
    # The same conversion as Repository.add, so the id is the one add composes.
    return [id_term(value) for value in values]


def plan_for(model: type, hit: Mapping[str, Any]) -> RekeyPlan:
    """Classify one raw search hit (``_id``, ``_index``, ``_source``, ``_seq_no``,
    ``_primary_term``, optional ``_routing``) of ``model``. Sends nothing."""
    info = id_info(model)
    assert info.index is not None
    names = info.index.id_fields
    source = hit.get("_source")
    plan = RekeyPlan(
        old_id=hit["_id"],
        new_id=None,
        status="blocked",
        index=hit["_index"],
        seq_no=hit["_seq_no"],
        primary_term=hit["_primary_term"],
        routing=hit.get("_routing"),
        source=source,
    )
    if not isinstance(source, Mapping):
        return attrs.evolve(plan, reason="the document has no _source to copy")
    terms = _terms(info, source)
    if isinstance(terms, str):
        return attrs.evolve(plan, reason=terms)
    try:
        new_id = compose_id(*terms, names=names)
    except IdTooLongError as exc:
        longest = names[exc.longest_term] if exc.longest_term is not None else "a term"
        return attrs.evolve(
            plan,
            new_id=exc.id,
            reason=f"new id is {exc.actual} bytes, over the {exc.limit}-byte limit; "
            f"shorten {longest}",
        )
    except InvalidIdTermError as exc:
        name = names[exc.term_index] if exc.term_index is not None else "an id field"
        return attrs.evolve(plan, reason=f"{name} holds an unpaired surrogate")
    status: Status = "ok" if new_id == plan.old_id else "rewrite"
    return attrs.evolve(plan, new_id=new_id, status=status)


def audit(
    mapper: Context | HasContext, model: type, *, batch_size: int = 500
) -> Iterator[RekeyPlan]:
    """Scan every document of ``model`` and yield its :class:`RekeyPlan`. Changes nothing.

    Sends a refresh (so the scan sees every acknowledged write, e.g. those of a killed
    re-key run), a point-in-time open, ``search`` pages of ``batch_size`` raw hits (full
    ``_source``, ``seq_no_primary_term``, ``search_after`` on ``_shard_doc``) and the
    point-in-time close (also when the iterator is closed early). Raises
    :class:`~esmapper.errors.MigrationError` at once when the model has no
    ``Index.id_fields`` or its index does not exist, and
    :class:`~esmapper.errors.PartialResultsError` for a page some shards did not answer
    (every page asks for a complete answer: ``allow_partial_search_results=false``).
    """
    info = id_info(model)
    if not 0 < batch_size <= MAX_BATCH_SIZE:
        raise ValueError(f"batch_size must be between 1 and {MAX_BATCH_SIZE}, not {batch_size}")
    ctx = context_of(mapper)  # a Mapper: its services
    spec = ctx.spec(model)
    target = spec.read_target
    missing = MigrationError(
        f"cannot re-key {info.name}: index {target!r} does not exist",
        index=target,
        error_type="index_not_found_exception",
    )
    try:
        ctx.client.indices.refresh(index=target)
        # a time-series model's partitions named one by one, as every scan's point in time
        where = pit_target(ctx.client, spec, None)
        if where is None:
            raise missing
        listed: dict[str, Any] = {"ignore_unavailable": True} if where.listed else {}
        pit = ctx.client.open_point_in_time(index=where.index, keep_alive=KEEP_ALIVE, **listed)
    except NotFoundError as exc:
        missing.error_type = str(exc.message)
        raise missing from None
    return _scan(ctx.client, model, str(pit["id"]), batch_size, target)


def _scan(
    client: Elasticsearch, model: type, pit_id: str, batch_size: int, target: str
) -> Iterator[RekeyPlan]:
    scanned = 0
    what = f"the re-key audit's scan of {target}"
    try:
        search_after: list[Any] | None = None
        while True:
            try:
                response = client.search(
                    pit={"id": pit_id, "keep_alive": KEEP_ALIVE},
                    query={"match_all": {}},
                    sort=[{"_shard_doc": "asc"}],
                    size=batch_size,
                    seq_no_primary_term=True,
                    track_total_hits=False,
                    search_after=search_after,
                    allow_partial_search_results=False,
                )
            except ApiError as exc:
                if not is_context_missing(exc):
                    partial = refusal(exc, what=what, index=target)
                    if partial is None:
                        raise
                    raise partial from exc
                raise _scan_lost(model, scanned, context_reason(exc)) from None
            lost = lost_shards({"_shards": response.get("_shards")})
            if lost is not None:
                raise _scan_lost(model, scanned, lost)
            # a document on a shard that did not answer would be left under its old id
            require_complete(response, what=what, index=target)
            pit_id = str(response.get("pit_id") or pit_id)
            hits = response["hits"]["hits"]
            scanned += len(hits)
            for hit in hits:
                yield plan_for(model, hit)
            if len(hits) < batch_size:
                return
            search_after = hits[-1]["sort"]
    finally:
        with contextlib.suppress(ApiError, TransportError):
            client.close_point_in_time(id=pit_id)


def _scan_lost(model: type, scanned: int, reason: str) -> MigrationError:
    """The scan's point in time is gone (a page took longer than its keep-alive): what was
    done is done (each move is complete or resumable), so the way on is to run again."""
    return MigrationError(
        f"re-keying {model.__name__}: the scan's point in time was lost after {scanned} "
        f"document(s) ({reason}); nothing is half-moved, run it again to finish",
        error_type="search_context_missing_exception",
        reason=reason,
    )
