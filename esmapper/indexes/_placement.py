"""Which partition a time-series document write goes to; one id per model, whatever its date.

The one owner of "an id is unique per model" for time-series models: every add, save and
remove (repository, session flush, scan-driven removes) picks its partition here, through
:meth:`~esmapper.indexes.spec.IndexSpec.write_targets` (called by
:func:`esmapper._writes.write_documents`). Elasticsearch keeps ids unique per index only, so
two documents with one id in two partitions are only prevented by writing each id where it
already lives:

1. A document loaded from a partition, or with an ObjectId id, has a **certain** place: the
   period of the partition it was loaded from, else the date its ObjectId carries.
   esmapper always stores an ObjectId-id document in that date's partition, so a ``create``
   there is Elasticsearch's own create-only check: an existing id answers 409
   (:class:`~esmapper.errors.DuplicateDocumentError`) and nothing is looked up. Ids
   ``add`` generates are ObjectIds carrying the document date: no lookup, ever.
   A document is placed by its date, so an add/save of a document not loaded whose
   ObjectId id encodes **another period than its** ``date_field`` is refused before
   anything is sent (:class:`~esmapper.errors.DocumentValidationError` naming the id, the
   id's time and the date): stored in the id's period it would sit outside its date's
   partition (a date-pruned search misses it, retention deletes it by the id's age, an old
   id makes a current document "expired"); stored by its date, reads by id, which look in
   the id's period with one real-time GET, would miss it. An ObjectId id of the date's own
   period (any time in it) is accepted; without a date the id's time is the date. Removes
   are not checked (they go where the document is). A loaded document stays in the
   partition it was loaded from, whatever its date says now.
2. Any other id (supplied by the caller, composed from ``id_fields``) on a document not
   loaded: its date (``date_field``) says where it *would* go, but a copy may already live
   in another period. All such ids of the call are looked up at once, in real time
   (:func:`~esmapper.indexes._lookup.stored_copies`: ``GET /_alias/<umbrella>`` and
   ``_mget`` on every live partition). Found: the write goes to the partition holding it
   (an ``add`` then answers 409 there; a ``save`` replaces that copy; a ``remove`` deletes
   it). Not found: add/save go to their date's partition; a remove answers 404 ("already
   gone"), now that every partition that could hold the id was checked.
3. Within one call, every write of an id that needs the lookup goes where the first one
   goes, so ``add([a, b])`` of one id with two dates answers 409 for ``b``.

Before anything is sent, an ObjectId id of another period than its date raises
:class:`~esmapper.errors.DocumentValidationError` (1.), then a known date older than
``max_age`` raises :class:`~esmapper.errors.IndexMaxAgeExceededError`. Removes never
create a partition.

Residual window (not closed; closing it needs a registry of ids outside Elasticsearch,
which esmapper does not build): two processes adding one *non-ObjectId* id with dates in
different periods at the same moment both look it up, both find nothing, and both create,
one copy per partition. The window is the time between the lookup and the create landing
(one bulk round trip). Same id and same period is safe (one partition, create-only), and
ObjectId ids are always safe. A duplicate made that way, or written before this check
existed, is reported by :func:`time_series_targets` with a warning when it is removed (the
newest copy goes first; remove again for the next).
"""

from __future__ import annotations

import datetime as _dt
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from elasticsearch import Elasticsearch

from esmapper.errors import DocumentValidationError
from esmapper.ids import ObjectId
from esmapper.indexes import timeseries
from esmapper.indexes._lookup import stored_copies
from esmapper.model.codec import parse_datetime
from esmapper.model.state import state_of

if TYPE_CHECKING:
    from esmapper.indexes.spec import IndexSpec

__all__ = ["time_series_targets"]

log = logging.getLogger("esmapper.indexes")


def _certain_start(spec: IndexSpec, doc: Any, removing: bool) -> _dt.datetime | None:
    """The period start of a document whose place is certain (loaded, or an ObjectId id).

    Raises :class:`~esmapper.errors.DocumentValidationError` for an add/save of a document
    not loaded whose ObjectId id encodes another period than its date (module docstring).
    """
    state = state_of(doc)
    if state is not None and state.index:
        partition = timeseries.parse_partition(spec, state.index)
        if partition is not None:
            return partition.start
    if ObjectId.is_valid(doc.id):
        start = timeseries.period_start(spec.kind, ObjectId(doc.id).created_at)
        if not removing:
            _check_id_period(spec, doc, start)
        return start
    return None


def _check_id_period(spec: IndexSpec, doc: Any, start: _dt.datetime) -> None:
    """Refuse an ObjectId id whose period (``start``) is not its document date's: stored in
    the id's period, the document would be out of its date's partition (a date-pruned
    search misses it, retention deletes it by the id's age); stored by its date, reads by
    id (which go to the id's period, one request) would not find it."""
    value = getattr(doc, spec.date_field, None)
    if value is None:
        return  # no date: the id's time is the document's date
    date = parse_datetime(value)
    dated = timeseries.period_start(spec.kind, date)
    if dated == start:
        return
    period = "day" if spec.kind == "daily" else "month"
    oid = ObjectId(doc.id)
    raise DocumentValidationError(
        f"{spec.info.name} {doc.id!r}: its ObjectId id encodes {oid.created_at.isoformat()} "
        f"and its {spec.date_field} is {date.isoformat()}, another {period}. A "
        f"{spec.kind} document with an ObjectId id is stored in its date's partition, "
        f"which must be its id's {period} too (reads by id look there): give it "
        f"ObjectId.new(at=<its {spec.date_field}>), let add() generate the id, or use an "
        "id that is not an ObjectId (placed by date, found by a lookup)",
        field=spec.date_field,
        index=spec.dated_alias(dated),
        ids=[doc.id],
    )


def _dated_start(spec: IndexSpec, doc: Any) -> _dt.datetime | None:
    value = getattr(doc, spec.date_field, None)
    return None if value is None else timeseries.period_start(spec.kind, value)


def time_series_targets(
    spec: IndexSpec, client: Elasticsearch, writes: Sequence[tuple[Any, bool]]
) -> list[str]:
    """The partition (or dated alias) each ``(doc, removing)`` write goes to, in order.

    Sends: the lookup of the uncertain ids (module docstring, at most once per call), then,
    for add/save, the partition creation of a new period (once per period and process,
    :meth:`~esmapper.indexes.timeseries.PartitionCache.ensure`). Raises
    :class:`~esmapper.errors.IndexMaxAgeExceededError` (nothing sent) and
    :class:`~esmapper.errors.DocumentValidationError` for an add/save without any date, or
    whose ObjectId id encodes another period than its date (nothing sent).
    """
    now = spec.clock()
    starts: list[_dt.datetime | None] = []
    certain: list[bool] = []
    for doc, removing in writes:
        start = _certain_start(spec, doc, removing)
        certain.append(start is not None)
        if start is None:
            start = _dated_start(spec, doc)
        if start is not None:
            timeseries.check_max_age(spec, start, now, doc.id)
        starts.append(start)
    uncertain = [doc.id for (doc, _), sure in zip(writes, certain, strict=True) if not sure]
    copies = stored_copies(client, spec, [i for i in uncertain if i is not None])
    chosen: dict[str, str] = {}  # id -> target, for later writes of the same id in this call
    targets: list[str] = []
    for (doc, removing), start, sure in zip(writes, starts, certain, strict=True):
        if sure:
            assert start is not None
            targets.append(_partition(spec, client, doc, start, removing))
            continue
        target = chosen.get(doc.id)
        if target is None:
            found = copies.get(doc.id, [])
            if len(found) > 1 and removing:
                log.warning(
                    "%s %r is stored in %d partitions (%s): removing the copy in %s; remove "
                    "it again for the next",
                    spec.info.name,
                    doc.id,
                    len(found),
                    ", ".join(str(c["_index"]) for c in found),
                    found[0]["_index"],
                )
            if found:  # through its dated alias, so the write follows a reindex's swap
                target = spec.write_name(str(found[0]["_index"]))
            elif removing:  # checked everywhere: the delete answers 404, already gone
                target = spec.dated_alias(start if start is not None else now)
            elif start is None:
                raise DocumentValidationError(
                    f"{spec.info.name}: cannot pick a partition for a document without an "
                    f"ObjectId id and without {spec.date_field}",
                    field=spec.date_field,
                )
            else:
                target = spec.partitions.ensure(client, spec, start)
            chosen[doc.id] = target
        targets.append(target)
    return targets


def _partition(
    spec: IndexSpec, client: Elasticsearch, doc: Any, start: _dt.datetime, removing: bool
) -> str:
    """The dated alias of a certain period: its partition ensured for add/save; for a
    remove, the alias of the partition the document was loaded from, else the dated alias
    (no partition is created to delete nothing)."""
    if not removing:
        return spec.partitions.ensure(client, spec, start)
    state = state_of(doc)
    if state is not None and state.index and timeseries.parse_partition(spec, state.index):
        return spec.write_name(state.index)
    return spec.partitions.known(start) or spec.dated_alias(start)
