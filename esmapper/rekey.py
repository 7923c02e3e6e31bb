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
  2. ``DELETE /<scanned index>.fence/_doc/<old id>?if_seq_no=..&if_primary_term=..`` with
     the values from the scan, through the fence alias of the physical index the scan read
     (:meth:`IndexSpec.conditioned_target`: a reindex swapped since makes it a 404, never
     a delete of another index's document at the same numbers). On 409 (or that 404) the
     old document is read back (``GET`` through the alias) before anything is undone:
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

import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from elasticsearch import ApiError, ConflictError, Elasticsearch, NotFoundError, TransportError

from esmapper._cache_hooks import invalidate_moved, sees_writes
from esmapper._context import context_of
from esmapper._transport import is_unknown_outcome, once
from esmapper.ids import check_id
from esmapper.indexes.reads import sent_params

if TYPE_CHECKING:
    from esmapper._context import Context, HasContext
    from esmapper.indexes.spec import IndexSpec
    from esmapper.model.info import ModelInfo

from esmapper._rekey_audit import (
    KEEP_ALIVE,
    MAX_BATCH_SIZE,
    RekeyPlan,
    RekeyReport,
    Status,
    audit,
    id_info,
    plan_for,
)

__all__ = [
    "KEEP_ALIVE",
    "MAX_BATCH_SIZE",
    "RekeyPlan",
    "RekeyReport",
    "Status",
    "audit",
    "plan_for",
    "rekey",
]


def rekey(
    mapper: Context | HasContext,
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
    mapper = context_of(mapper)  # a Mapper: its services
    plans = audit(mapper, model, batch_size=batch_size)
    report = RekeyReport(applied=apply)
    info = id_info(model)
    spec = mapper.spec(model)

    def say(line: str) -> None:
        report.lines.append(line)
        echo(line)

    while page := list(itertools.islice(plans, batch_size)):
        taken = {} if apply else _new_ids_taken(mapper.client, page, spec)
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
                    if sees_writes(mapper, info):  # keys of one's own: the hook
                        invalidate_moved(mapper, info, [_moved(info, plan)])
                if failure is None:
                    report.rewritten += 1
                    report.interrupted += resumed
                else:
                    report.failed += 1
                    say(f"FAILED {failure}")
    if apply:
        mapper.client.indices.refresh(index=spec.read_target)
    return report


_INTERRUPTED: Final = "interrupted"


def _routings(plan: RekeyPlan, spec: IndexSpec) -> tuple[dict[str, Any], dict[str, Any]]:
    """The request parameters of ``plan``'s old id (its stored routing, from the scan) and
    of its new id: what the model's features give a read of it (the ``read_params`` point,
    :func:`~esmapper.indexes.reads.read_params`: a routing by an id field, so later reads
    by the new id find it), else the stored routing."""
    old: dict[str, Any] = {"routing": plan.routing} if plan.routing is not None else {}
    return old, (sent_params(spec, plan.new_id) if plan.new_id else {}) or old


def _new_ids_taken(client: Elasticsearch, page: list[RekeyPlan], spec: IndexSpec) -> dict[str, str]:
    """For a dry run: which ``rewrite`` plans of ``page`` have a document on their new id
    already (one ``_mget``, real time): old id -> ``_INTERRUPTED`` when it holds the source
    the move would write (a move interrupted after its create), else a note."""
    moves = [p for p in page if p.status == "rewrite"]
    if not moves:
        return {}
    docs = [{"_index": p.index, "_id": p.new_id, **_routings(p, spec)[1]} for p in moves]
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


def _moved(info: ModelInfo, plan: RekeyPlan) -> tuple[Any, Any]:
    """The documents a move touches (for the cache hooks): the old one, the new one."""
    assert plan.source is not None and plan.new_id is not None
    old = info.from_source(dict(plan.source), plan.old_id, None)
    return old, info.from_source(_copy_source(plan), plan.new_id, None)


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
    routing, placed = _routings(plan, spec)  # the old id's, the new id's
    single = once(client)
    created: tuple[int, int] | None = None
    created_in: str | None = None  # the physical index the create's version is valid in
    alias_only: dict[str, Any] = {"require_alias": True} if spec.is_alias(index) else {}
    try:
        response = single.create(
            index=index, id=check_id(new, index=index), document=source, **placed, **alias_only
        )
        created = (response["_seq_no"], response["_primary_term"])
        created_in = response.get("_index")  # Elasticsearch always names it
    except ConflictError:
        found = _read(client, index, new, placed)
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
        found = _read(client, index, new, placed)  # the create may or may not have happened
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
        created_in = found.get("_index")

    if before_delete is not None:
        before_delete(plan)
    # the scanned version means something in the scanned index only: its fence alias
    fenced = spec.conditioned_target(index, plan.index)
    failed = _delete_old(client, plan, index, (routing, placed), source, fenced=fenced)
    if failed is None:
        return None, created is None
    message, compensate = failed
    if not compensate:
        return message, False
    if created is None:
        return f"{message} ({new} existed before this run and is left in place)", False
    # the create's version means something in the index it was created in only
    undo = spec.conditioned_target(index, created_in)
    return message + _compensate(client, undo, new, created, placed), False


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
    routings: tuple[dict[str, Any], dict[str, Any]],
    source: dict[str, Any],
    *,
    fenced: str,
) -> tuple[str, bool] | None:
    """Delete the old document, conditioned on the scanned version: ``None`` once it is
    gone and the new id holds ``source``, else ``(why not, whether to compensate)``. A 409
    or a lost answer is read back first; compensate only when the old document is known to
    be still there (changed): never when it is gone (another run finished this move, and
    the new document is the only copy left) or unknown. ``index``: the alias of the
    document's index (:func:`_move`), where it is read back; ``fenced``: where the delete
    goes (the fence alias of the scanned index, :meth:`IndexSpec.conditioned_target`: a
    reindex that swapped since the scan makes it a 404, read back as "changed");
    ``routings``: the request parameters of the old and the new id (:func:`_routings`)."""
    old, (routing, placed) = plan.old_id, routings
    for attempt in (1, 2):
        try:
            once(client).delete(
                index=fenced,
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
                return _old_gone(client, plan, placed, source, f"{exc.meta.status}", index=index)
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
                    client, plan, placed, source, f"unknown outcome ({exc})", index=index
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
    placed: dict[str, Any],
    source: dict[str, Any],
    what: str,
    *,
    index: str,
) -> tuple[str, bool] | None:
    """The old document is gone: the move is complete when the new id holds ``source``;
    otherwise a failure, never compensated (nothing is deleted). ``placed``: the new id's
    request parameters."""
    new = plan.new_id
    assert new is not None
    found = _read(client, index, new, placed)
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
