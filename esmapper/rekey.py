"""Re-key documents whose stored ``_id`` is not the id their ``Index.id_fields`` compose to.

When the id composition changes (a legacy ``"_".join(terms)`` such as
``acme_corp_42_Handler``, unescaped ``a/b:c``), stored documents keep their old ids: a
document loaded by a query still saves under its stored id, but a point read with the newly
composed id misses it, and "find, else add" silently creates a duplicate. There is no
read-side fallback to the old shapes; re-keying is a one-time migration::

    for plan in audit(mapper, Message):        # read only
        print(plan.status, plan.old_id, plan.new_id)
    rekey(mapper, Message)                     # dry run: prints what would change
    rekey(mapper, Message, apply=True)         # rewrites

**Before** ``apply=True``: quiesce every writer of the index (nothing may write while the
documents move), and take a snapshot (``PUT _snapshot/<repo>/<name>`` covering the index).
Re-keying is not reversible by redeploying the old code: the old code does not find the
new ids. Restore the snapshot to roll back. Run the dry run first.

Each document is classified from its own fields, never by parsing its id: the values of
``id_fields`` are read from ``_source`` (converted as the model loads them, then ``str()``
like ``add`` does) and composed with :func:`esmapper.ids.compose_id`, the library's only
composer. Statuses (:class:`RekeyPlan.status`):

* ``ok``: the stored id already is the composed id. Left alone, not printed.
* ``rewrite``: the composed id differs; the document is moved to it.
* ``blocked``: no storable new id: an id field is missing or empty, holds several values
  or a value the model cannot read, holds an unpaired surrogate, the composed id exceeds
  512 bytes, or the document has no ``_source`` to copy. ``reason`` says which. Never
  touched; fix the data or the model, then rerun.

What is sent to Elasticsearch:

* ``audit``: ``POST /<alias>/_refresh`` (the scan must see every acknowledged write: a
  run that was killed never reached its own final refresh, and a scan of the state before
  it would take its moves for work still to do), ``POST /<alias>/_pit?keep_alive=5m``, then
  ``POST /_search`` with the point in time, ``sort: [{"_shard_doc": "asc"}]``,
  ``search_after``, ``seq_no_primary_term: true`` and ``size: batch_size`` until a short
  page; finally ``DELETE /_pit``. The point in time is a snapshot: documents created while
  scanning are not seen again. The refresh changes no document.
* ``rekey`` (dry run): per page of the scan, ``POST /_mget`` of the new ids to ``rewrite``,
  so an interrupted move shows: ``DRY RUN <old> -> <new> (interrupted: <new> already holds
  this document)`` when the new id holds the source the move writes (``--apply`` completes
  it), ``(<new> already holds a different document; ...)`` when it holds another one.
* ``rekey(apply=True)``, per ``rewrite`` (there is no multi-document transaction):
  1. ``PUT /<index>/_create/<new id>`` with the raw ``_source`` (not through the model, so
     unmapped fields survive) into the index the old document lives in, with its
     routing. ``<index>`` here and below is the model's alias of that index (the
     versioned alias, the partition's dated alias, a plain index itself; the create is
     sent with ``require_alias``), never the physical name: a reindex run meanwhile must
     not get its deleted old index created again. A stored ``"id"`` key equal to the old
     id is set to the new id. On 409
     ``GET /<index>/_doc/<new id>``: the same source means an earlier run got this far
     (continue); a different source is ``FAILED 409`` and both documents are left alone.
  2. ``DELETE /<index>/_doc/<old id>?if_seq_no=..&if_primary_term=..`` with the values from
     the scan. On 409 the old document is read back (``GET``) before anything is undone:
     gone, with the new id holding our source -> another run completed this move (two runs
     at once, or a rerun while the first was still alive): done, nothing is undone (undoing
     it deleted the only copy left); still there, changed -> the new document created in
     step 1 is deleted again (conditioned on its own seq_no) and the line ``FAILED 409:
     <old> changed concurrently; rerun`` is printed; gone, and the new id not holding our
     source -> ``FAILED``, nothing deleted. Any other error of the delete is compensated.
  Finally ``POST /<alias>/_refresh``. Nothing else is ever deleted.

  Each write is sent once, without the transport's retries (:mod:`esmapper._transport`).
  When its answer is lost (a dropped connection, a timeout, an unreadable response) the
  document is read back (``GET``) instead of resending blindly:

  - the create: the new id holds our source -> it was created (its ``_seq_no`` /
    ``_primary_term`` come from the GET) and the move goes on; missing -> ``FAILED``, the
    old document is left in place (rerun); another source -> the 409 case above;
  - the delete of the old id: gone -> the move succeeded (no compensation); still at the
    scanned version -> not applied, the conditional delete is sent once more; changed ->
    the 409 case (compensated); unreadable -> ``FAILED`` without compensating (both ids
    may exist; a rerun completes the move);
  - the compensating delete: gone -> done; still at its created version -> sent once
    more; else a note to check it by hand.

A rerun converges: moved documents are ``ok`` and a half-done move completes. A run killed
at any point (``kill -9``) leaves every document under its old id, its new id, or both with
the same source (at most one move, interrupted between its create and its delete); nothing
else is left behind but the scan's point in time, which expires after ``KEEP_ALIVE``. There
is no lock to break: run it again. The rerun counts an interrupted move it completes in
``interrupted`` (``N rewritten (K completing an interrupted move)``); the new id of such a
move is also counted ``ok`` by the scan. Afterwards the audit reports only ``ok`` and
``blocked`` documents.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final, Literal

import attrs
from elasticsearch import ApiError, ConflictError, Elasticsearch, NotFoundError, TransportError

from esmapper._pit import context_reason, is_context_missing, lost_shards
from esmapper._transport import is_unknown_outcome, once
from esmapper.errors import IdTooLongError, InvalidIdTermError, MigrationError
from esmapper.ids import check_id, compose_id, id_term
from esmapper.model.info import ModelInfo

if TYPE_CHECKING:
    from esmapper.indexes.spec import IndexSpec
    from esmapper.mapper import Mapper

__all__ = ["RekeyPlan", "RekeyReport", "audit", "plan_for", "rekey"]

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


def _id_info(model: type) -> ModelInfo:
    info: ModelInfo | None = getattr(model, "__esmapper__", None)
    if info is None or not info.is_document or info.index is None:
        raise TypeError(f"{model!r} is not an esmapper Document")
    if not info.index.id_fields:
        raise MigrationError(
            f"{info.name} has no Index.id_fields: its ids are not composed from fields, "
            "so there is nothing to re-key"
        )
    return info


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
            return f"field {name!r} holds a {type(value).__name__}, not a single value"
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
    info = _id_info(model)
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


def audit(mapper: Mapper, model: type, *, batch_size: int = 500) -> Iterator[RekeyPlan]:
    """Scan every document of ``model`` and yield its :class:`RekeyPlan`. Changes nothing.

    Sends a refresh (so the scan sees every acknowledged write, e.g. those of a killed
    re-key run), a point-in-time open, ``search`` pages of ``batch_size`` raw hits (full
    ``_source``, ``seq_no_primary_term``, ``search_after`` on ``_shard_doc``) and the
    point-in-time close (also when the iterator is closed early). Raises
    :class:`~esmapper.errors.MigrationError` at once when the model has no
    ``Index.id_fields`` or its index does not exist.
    """
    info = _id_info(model)
    if not 0 < batch_size <= MAX_BATCH_SIZE:
        raise ValueError(f"batch_size must be between 1 and {MAX_BATCH_SIZE}, not {batch_size}")
    target = mapper.spec(model).read_target
    try:
        mapper.client.indices.refresh(index=target)
        pit = mapper.client.open_point_in_time(index=target, keep_alive=KEEP_ALIVE)
    except NotFoundError as exc:
        raise MigrationError(
            f"cannot re-key {info.name}: index {target!r} does not exist",
            index=target,
            error_type=str(exc.message),
        ) from None
    return _scan(mapper.client, model, str(pit["id"]), batch_size)


def _scan(client: Elasticsearch, model: type, pit_id: str, batch_size: int) -> Iterator[RekeyPlan]:
    scanned = 0
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
                )
            except ApiError as exc:
                if not is_context_missing(exc):
                    raise
                raise _scan_lost(model, scanned, context_reason(exc)) from None
            lost = lost_shards({"_shards": response.get("_shards")})
            if lost is not None:
                raise _scan_lost(model, scanned, lost)
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


def rekey(
    mapper: Mapper,
    model: type,
    *,
    apply: bool = False,
    echo: Callable[[str], object] = print,
    batch_size: int = 500,
    _before_delete: Callable[[RekeyPlan], object] | None = None,
) -> RekeyReport:
    """Re-key every ``rewrite`` document of ``model`` (see the module docstring).

    Dry run by default: prints ``DRY RUN <old> -> <new>`` per document to move (with a
    note when the new id already holds a document, see the module docstring) and sends only
    reads: those of :func:`audit` and one ``_mget`` of the new ids per page.
    ``apply=True`` prints ``REWRITE <old> -> <new>`` and moves it (create new, conditional
    delete of old, compensation on failure), then ``FAILED <status>: ...`` if that failed;
    refreshes the index at the end. Both modes print ``BLOCKED <old> -> <new or -> (<reason>)``.
    Quiesce writers and take a snapshot before ``apply=True``. ``_before_delete`` is a test
    hook called between the create and the delete.
    """
    plans = audit(mapper, model, batch_size=batch_size)
    report = RekeyReport(applied=apply)
    info = _id_info(model)
    spec = mapper.spec(model)

    def say(line: str) -> None:
        report.lines.append(line)
        echo(line)

    while page := list(itertools.islice(plans, batch_size)):
        taken = {} if apply else _new_ids_taken(mapper.client, page)
        for plan in page:
            if plan.status == "ok":
                report.ok += 1
            elif plan.status == "blocked":
                report.blocked += 1
                say(f"BLOCKED {plan.old_id} -> {plan.new_id or '-'} ({plan.reason})")
            elif not apply:
                report.to_rewrite += 1
                note = taken.get(plan.old_id)
                if note == _INTERRUPTED:
                    report.interrupted += 1
                    note = f"interrupted: {plan.new_id} already holds this document"
                suffix = f" ({note})" if note else ""
                say(f"DRY RUN {plan.old_id} -> {plan.new_id}{suffix}")
            else:
                report.to_rewrite += 1
                say(f"REWRITE {plan.old_id} -> {plan.new_id}")
                try:
                    failure, resumed = _move(mapper.client, plan, _before_delete, spec=spec)
                finally:  # both ids were written (or may have been): drop any cached copy
                    mapper.invalidate_ids(info, [plan.old_id, plan.new_id])
                if failure is None:
                    report.rewritten += 1
                    report.interrupted += resumed
                else:
                    report.failed += 1
                    say(f"FAILED {failure}")
    if apply:
        mapper.client.indices.refresh(index=mapper.spec(model).read_target)
    return report


_INTERRUPTED: Final = "interrupted"


def _new_ids_taken(client: Elasticsearch, page: list[RekeyPlan]) -> dict[str, str]:
    """For a dry run: which ``rewrite`` plans of ``page`` have a document on their new id
    already (one ``_mget``, real time): old id -> ``_INTERRUPTED`` when it holds the source
    the move would write (a move interrupted after its create), else a note."""
    moves = [p for p in page if p.status == "rewrite"]
    if not moves:
        return {}
    docs = []
    for plan in moves:
        doc: dict[str, Any] = {"_index": plan.index, "_id": plan.new_id}
        if plan.routing is not None:
            doc["routing"] = plan.routing
        docs.append(doc)
    found = client.mget(docs=docs)["docs"]
    taken: dict[str, str] = {}
    for plan, hit in zip(moves, found, strict=True):
        if "error" in hit:
            taken[plan.old_id] = f"reading {plan.new_id} failed: {hit['error']}"
        elif hit.get("found"):
            taken[plan.old_id] = (
                _INTERRUPTED
                if hit.get("_source") == _copy_source(plan)
                else f"{plan.new_id} already holds a different document; --apply leaves both "
                "and reports FAILED"
            )
    return taken


def _copy_source(plan: RekeyPlan) -> dict[str, Any]:
    """The source the move writes to the new id: the raw source, with a stored ``"id"``
    equal to the old id (the mapper's own copy of the id) set to the new id."""
    assert plan.source is not None
    source = dict(plan.source)
    if source.get("id") == plan.old_id:
        source["id"] = plan.new_id
    return source


def _describe(exc: ApiError) -> tuple[int, str]:
    """The status and ``type: reason`` of an Elasticsearch error."""
    error = exc.body.get("error") if isinstance(exc.body, dict) else None
    if isinstance(error, dict):
        return exc.meta.status, f"{error.get('type')}: {error.get('reason')}"
    return exc.meta.status, str(exc.message)


def _move(
    client: Elasticsearch,
    plan: RekeyPlan,
    before_delete: Callable[[RekeyPlan], object] | None,
    *,
    spec: IndexSpec,
) -> tuple[str | None, bool]:
    """Create ``plan.new_id``, then delete ``plan.old_id``: the failure text or None, and
    whether the new document was there already (an earlier, interrupted run created it).

    Every request names the model's alias for ``plan.index``
    (:meth:`IndexSpec.write_name`: the versioned alias, a partition's dated alias), never
    the physical index: a reindex that swapped and deleted it meanwhile must not get it
    created again; the create carries ``require_alias`` when the name is an alias, and
    the scanned version condition makes the delete of a copy the reindex moved a 409.
    Both writes are sent once (:func:`esmapper._transport.once`); an unknown outcome is
    settled by reading the document back, never by a blind resend."""
    old, new, index = plan.old_id, plan.new_id, spec.write_name(plan.index)
    assert new is not None
    source = _copy_source(plan)
    routing: dict[str, Any] = {"routing": plan.routing} if plan.routing is not None else {}
    single = once(client)
    created: tuple[int, int] | None = None
    alias_only: dict[str, Any] = {"require_alias": True} if spec.is_alias(index) else {}
    try:
        response = single.create(
            index=index, id=check_id(new, index=index), document=source, **routing, **alias_only
        )
        created = (response["_seq_no"], response["_primary_term"])
    except ConflictError:
        found = _read(client, index, new, routing)
        if found is None:
            return f"409: {new} existed, then was deleted while re-keying {old}; rerun", False
        if isinstance(found, Exception):
            return (
                f"409: {new} exists and could not be read ({found}); {old} left in place; rerun",
                False,
            )
        if found.get("_source") != source:
            return _different(plan.index, old, new), False
        # An earlier run created it and stopped before the delete: finish that move.
    except ApiError as exc:
        status, text = _describe(exc)
        return f"{status}: creating {new} failed ({text}); {old} left in place", False
    except TransportError as exc:
        if not is_unknown_outcome(exc):
            raise
        found = _read(client, index, new, routing)  # the create may or may not have happened
        if found is None:
            return (
                f"creating {new} had an unknown outcome ({exc}): it is not there; "
                f"{old} left in place; rerun"
            ), False
        if isinstance(found, Exception):
            return (
                f"creating {new} had an unknown outcome ({exc}) and reading it back failed "
                f"({found}); {old} left in place; rerun"
            ), False
        if found.get("_source") != source:
            return _different(plan.index, old, new), False
        created = (found["_seq_no"], found["_primary_term"])  # ours: it was created

    if before_delete is not None:
        before_delete(plan)
    failed = _delete_old(client, plan, index, routing, source)
    if failed is None:
        return None, created is None
    message, compensate = failed
    if not compensate:
        return message, False
    if created is None:
        return f"{message} ({new} existed before this run and is left in place)", False
    return message + _compensate(client, index, new, created, routing), False


def _different(index: str, old: str, new: str) -> str:
    return (
        f"409: {new} already exists in {index} with a different source; "
        f"{old} left in place, compare the two documents"
    )


def _read(
    client: Elasticsearch, index: str, id: str, routing: dict[str, Any]
) -> dict[str, Any] | Exception | None:
    """``GET /<index>/_doc/<id>``: the hit, ``None`` when there is none, or the error."""
    try:
        return dict(client.get(index=index, id=id, **routing).body)
    except NotFoundError:
        return None
    except (ApiError, TransportError) as exc:
        return exc


def _delete_old(
    client: Elasticsearch,
    plan: RekeyPlan,
    index: str,
    routing: dict[str, Any],
    source: dict[str, Any],
) -> tuple[str, bool] | None:
    """Delete the old document, conditioned on the scanned version: ``None`` once it is
    gone and the new id holds ``source``, else ``(why not, whether to compensate)``. A 409
    or a lost answer is read back first; compensate only when the old document is known to
    be still there (changed): never when it is gone (another run finished this move, and
    the new document is the only copy left) or unknown. ``index``: the alias of the
    document's index (:func:`_move`)."""
    old = plan.old_id
    for attempt in (1, 2):
        try:
            once(client).delete(
                index=index,
                id=old,
                if_seq_no=plan.seq_no,
                if_primary_term=plan.primary_term,
                **routing,
            )
            return None
        except ApiError as exc:
            if not isinstance(exc, ConflictError | NotFoundError):
                status, text = _describe(exc)
                return f"{status}: deleting {old} failed ({text}); rerun", True
            found = _read(client, index, old, routing)
            if found is None:  # deleted by another run that completed this move?
                return _old_gone(client, plan, routing, source, f"{exc.meta.status}", index=index)
            if isinstance(found, Exception):
                return (
                    f"{exc.meta.status}: deleting {old} was refused and reading it back failed "
                    f"({found}): both {old} and {plan.new_id} may exist; rerun to complete",
                    False,
                )
            return f"409: {old} changed concurrently; rerun", True
        except TransportError as exc:
            if not is_unknown_outcome(exc):
                raise
            found = _read(client, index, old, routing)
            if found is None:  # the delete was applied: the move succeeded
                return _old_gone(
                    client, plan, routing, source, f"unknown outcome ({exc})", index=index
                )
            if isinstance(found, Exception):
                return (
                    f"deleting {old} had an unknown outcome ({exc}) and reading it back failed "
                    f"({found}): both {old} and {plan.new_id} may exist; rerun to complete",
                    False,
                )
            if (found["_seq_no"], found["_primary_term"]) != (plan.seq_no, plan.primary_term):
                return f"409: {old} changed concurrently; rerun", True
            if attempt == 2:
                return f"deleting {old} had an unknown outcome twice ({exc}); rerun", True
            # Not applied (still the scanned version): send the conditional delete once more.
    raise AssertionError("unreachable")  # pragma: no cover


def _old_gone(
    client: Elasticsearch,
    plan: RekeyPlan,
    routing: dict[str, Any],
    source: dict[str, Any],
    what: str,
    *,
    index: str,
) -> tuple[str, bool] | None:
    """The old document is gone: the move is complete when the new id holds ``source``;
    otherwise a failure, never compensated (nothing is deleted)."""
    new = plan.new_id
    assert new is not None
    found = _read(client, index, new, routing)
    if isinstance(found, dict) and found.get("_source") == source:
        return None
    state = (
        f"reading it failed ({found})"
        if isinstance(found, Exception)
        else "it is not there"
        if found is None
        else "it holds another source"
    )
    message = f"{what}: {plan.old_id} is gone and {new} does not hold its copy ({state})"
    return f"{message}; check both by hand", False


def _compensate(
    client: Elasticsearch, index: str, new: str, created: tuple[int, int], routing: dict[str, Any]
) -> str:
    """Delete the document this run created, if still unchanged; a note if that failed. An
    unknown outcome is read back: gone is done, unchanged is sent once more."""
    seq_no, primary_term = created
    for attempt in (1, 2):
        try:
            once(client).delete(
                index=index, id=new, if_seq_no=seq_no, if_primary_term=primary_term, **routing
            )
            return ""
        except ApiError as exc:
            status, text = _describe(exc)
            return f" (and removing the new {new} failed: {status} {text}; remove it by hand)"
        except TransportError as exc:
            if not is_unknown_outcome(exc):
                raise
            found = _read(client, index, new, routing)
            if found is None:
                return ""  # the compensation was applied
            if isinstance(found, Exception) or attempt == 2:
                return (
                    f" (and removing the new {new} had an unknown outcome: {exc}; check it by hand)"
                )
            if (found["_seq_no"], found["_primary_term"]) != created:
                return (
                    f" (and the new {new} changed meanwhile; it is left in place, check it by hand)"
                )
    raise AssertionError("unreachable")  # pragma: no cover
