"""Time-series indexes (``kind = "daily" | "monthly"``): partitions, routing and retention.

Names, for ``class Index: name = "logs"; version = 1; kind = "daily"`` (with the mapper's
``index_prefix`` in front of each):

- physical partition ``logs-v1-2026.12.02`` (monthly: ``logs-v1-2026.12``);
- dated alias ``logs-2026.12.02``, which always points at the one live partition of that
  period, whatever its version;
- umbrella alias ``logs`` over every live partition: reads go through it;
- index template ``logs-v1-template`` with pattern ``logs-v1-*``, priority
  :data:`TEMPLATE_PRIORITY`, the mapping, the settings and the umbrella alias
  (``configure_indexes`` puts it; existing partitions are never changed). Above
  Elasticsearch's built-in data-stream templates: ``logs-v1-2026.12.02`` matches their
  ``logs-*-*``, and without the model's template Elasticsearch refuses to create it
  (:mod:`esmapper.indexes._data_streams`), so the write creating such a partition puts
  the template first when it is missing (:func:`ensure_template`).

A write's partition comes from the document's date: the period of the index
a loaded document was read from, else the ``date_field`` attribute (``created_utc`` by
default), which must fall in the period of the time an ObjectId id encodes (reads by id
look there; :mod:`esmapper.indexes._placement` refuses an add/save where they differ),
else, without a date, that time. Dates are UTC. A period older than
``max_age`` (daily: period start + max_age; monthly: end of month + max_age)
is refused with :class:`IndexMaxAgeExceededError` before anything is sent. An id is
unique per model across partitions: :mod:`esmapper.indexes._placement` sends each write
where its id already lives.

A missing partition is created with ``PUT /<partition>`` (with its dated alias), sent once
without the transport's retries; a lost answer is settled with ``HEAD /<partition>`` (sent
again only if missing), and a partition that already exists gets ``PUT _alias/<dated>``.
"""

from __future__ import annotations

import datetime as _dt
import re
import threading
from typing import TYPE_CHECKING, Any, Final

import attrs
from elasticsearch import BadRequestError, Elasticsearch, NotFoundError

from esmapper._transport import once, send_or_read_back
from esmapper.ids import ObjectId
from esmapper.indexes._data_streams import data_stream_pattern
from esmapper.indexes._ensure import (
    announce_create,
    ensure_fence,
    fence_if_serving,
    reason_of,
    refused,
)
from esmapper.indexes._fence import fence_name
from esmapper.indexes._occupied import alias_taken_error, concrete_index
from esmapper.indexes.errors import IndexMaxAgeExceededError
from esmapper.model.codec import parse_datetime
from esmapper.model.state import state_of

if TYPE_CHECKING:
    from esmapper.indexes.spec import IndexSpec

__all__ = [
    "Partition",
    "PartitionCache",
    "TEMPLATE_PRIORITY",
    "TIME_SERIES_KINDS",
    "check_max_age",
    "dated_alias_start",
    "document_date",
    "ensure_template",
    "expires_at",
    "is_dated_alias",
    "next_period",
    "parse_partition",
    "partition_body",
    "partitions_for_range",
    "period_start",
    "put_template",
    "suffix",
    "template_body",
]

TIME_SERIES_KINDS: Final = ("daily", "monthly")
TEMPLATE_PRIORITY: Final = 501
"""Above Elasticsearch's built-in templates (``logs-*-*``, ``metrics-*-*``... at 100) and
Fleet's integration templates (up to 200): Elastic's guidance for a template whose pattern
may overlap theirs is a priority higher than 500 (esmapper used 500 before; the next
``configure_indexes`` puts 501)."""

_FORMATS: Final = {"daily": "%Y.%m.%d", "monthly": "%Y.%m"}
_SUFFIX_RE: Final = {"daily": r"\d{4}\.\d{2}\.\d{2}", "monthly": r"\d{4}\.\d{2}"}
_AVG_MONTH: Final = _dt.timedelta(days=30.436875)
_AVG_YEAR: Final = _dt.timedelta(days=365.2425)
_REREADS: Final = 3  # dated-alias reads by a first write while reindexes move it meanwhile
_UTC: Final = _dt.timezone.utc


def period_start(kind: str, at: _dt.datetime) -> _dt.datetime:
    """The UTC start of the day (daily) or month (monthly) holding ``at`` (naive = UTC)."""
    at = parse_datetime(at)
    start = _dt.datetime(at.year, at.month, at.day, tzinfo=_UTC)
    return start.replace(day=1) if kind == "monthly" else start


def next_period(kind: str, start: _dt.datetime) -> _dt.datetime:
    """The start of the period after the one starting at ``start``."""
    if kind == "monthly":
        return start.replace(year=start.year + start.month // 12, month=start.month % 12 + 1)
    return start + _dt.timedelta(days=1)


def suffix(kind: str, at: _dt.datetime) -> str:
    """``2026.12.02`` (daily) or ``2026.12`` (monthly)."""
    return period_start(kind, at).strftime(_FORMATS[kind])


def expires_at(
    kind: str, start: _dt.datetime, max_age: _dt.timedelta | None
) -> _dt.datetime | None:
    """When the period starting at ``start`` expires (``None``: never).

    Daily: start + max_age; monthly: end of the month + max_age.
    """
    if max_age is None:
        return None
    return (next_period(kind, start) if kind == "monthly" else start) + max_age


@attrs.frozen(slots=True)
class Partition:
    """A physical partition: ``index`` (e.g. ``logs-v1-2026.12.02``), its ``version`` and
    the UTC ``start`` of its period."""

    index: str
    version: int
    start: _dt.datetime


def parse_partition(spec: IndexSpec, index: str) -> Partition | None:
    """The :class:`Partition` named ``index`` if it is one of ``spec``'s, else ``None``."""
    pattern = rf"{re.escape(spec.alias)}-v(\d+)-({_SUFFIX_RE[spec.kind]})"
    match = re.fullmatch(pattern, index)
    if match is None:
        return None
    try:
        parsed = _dt.datetime.strptime(match.group(2), _FORMATS[spec.kind])
    except ValueError:
        return None
    return Partition(index, int(match.group(1)), parsed.replace(tzinfo=_UTC))


def dated_alias_start(spec: IndexSpec, name: str) -> _dt.datetime | None:
    """The UTC start of the period whose dated alias is ``name`` (``<alias>-2026.12.02``),
    or ``None`` when ``name`` is none of ``spec``'s dated aliases."""
    stem = f"{spec.alias}-"
    if not name.startswith(stem) or not re.fullmatch(_SUFFIX_RE[spec.kind], name[len(stem) :]):
        return None
    try:
        parsed = _dt.datetime.strptime(name[len(stem) :], _FORMATS[spec.kind])
    except ValueError:
        return None
    return parsed.replace(tzinfo=_UTC)


def is_dated_alias(spec: IndexSpec, name: str) -> bool:
    """Whether ``name`` is one of ``spec``'s dated aliases (``<alias>-2026.12.02``)."""
    return dated_alias_start(spec, name) is not None


def document_date(spec: IndexSpec, doc: Any) -> _dt.datetime | None:
    """The date that picks ``doc``'s partition, or ``None`` when nothing tells it.

    In order: the period of the partition the document was loaded from or last written to;
    the time in an ObjectId id (a write is accepted only when ``date_field``, if set, falls
    in the same period: :mod:`esmapper.indexes._placement`); ``date_field``.
    """
    state = state_of(doc)
    if state is not None and state.index:
        partition = parse_partition(spec, state.index)
        if partition is not None:
            return partition.start
    if ObjectId.is_valid(doc.id):
        return ObjectId(doc.id).created_at
    value = getattr(doc, spec.date_field, None)
    return None if value is None else parse_datetime(value)


def check_max_age(spec: IndexSpec, start: _dt.datetime, now: _dt.datetime, id: Any) -> None:
    """Raise :class:`IndexMaxAgeExceededError` if the period starting at ``start`` expired."""
    expiry = expires_at(spec.kind, start, spec.options.max_age)
    if expiry is not None and parse_datetime(now) > expiry:
        dated = spec.dated_alias(start)
        raise IndexMaxAgeExceededError(
            f"Index max age exceeded: {spec.info.name} partition {dated!r} expired at "
            f"{expiry.isoformat()} (max_age {spec.options.max_age}); writes into it are refused",
            index=dated,
            ids=[id] if isinstance(id, str) else [],
        )


def partition_body(spec: IndexSpec, start: _dt.datetime) -> dict[str, Any]:
    """The create-index body of a new partition: mapping, settings, dated + umbrella alias
    and the partition's fence alias (:func:`~esmapper.indexes._fence.fence_name`)."""
    body = spec.body(with_alias=False)
    fence = fence_name(spec.partition_name(start))
    body["aliases"] = {spec.dated_alias(start): {}, spec.alias: {}, fence: {}}
    return body


def template_body(spec: IndexSpec) -> dict[str, Any]:
    """The ``PUT _index_template`` body for the current version's partitions."""
    template = spec.body(with_alias=True)
    return {
        "index_patterns": [spec.index_pattern],
        "priority": TEMPLATE_PRIORITY,
        "template": template,
        "meta": {"managed_by": "esmapper", "model": spec.info.name, "version": spec.version},
    }


def ensure_template(client: Elasticsearch, spec: IndexSpec) -> None:
    """Put the model's index template when it is missing: ``HEAD
    /_index_template/<alias>-v<N>-template``, then ``PUT`` with ``create=true`` (the body
    of :func:`template_body`; one a concurrent ``configure_indexes`` or writer put meanwhile
    is kept). Raises :class:`IndexConfigurationError` when Elasticsearch refuses it."""
    if not client.indices.exists_index_template(name=spec.template_name):
        put_template(client, spec, create=True)


def put_template(client: Elasticsearch, spec: IndexSpec, *, create: bool = False) -> None:
    """``PUT /_index_template/<alias>-v<N>-template`` with :func:`template_body`
    (``create``: ``?create=true``, and one that already exists is kept). Raises
    :class:`IndexConfigurationError` when Elasticsearch refuses it."""
    name = spec.template_name
    try:
        if create:
            client.indices.put_index_template(name=name, create=True, **template_body(spec))
        else:
            client.indices.put_index_template(name=name, **template_body(spec))
    except BadRequestError as exc:
        if create and "already exists" in reason_of(exc):
            return
        what = f"cannot put index template {name!r} for {spec.info.name}"
        raise refused(what, exc, index=spec.alias) from exc


class PartitionCache:
    """The per-process set of ensured partitions of one spec; thread-safe.

    Maps a period start to the name its writes go to (its dated alias).
    """

    def __init__(self) -> None:
        self._known: dict[_dt.datetime, str] = {}
        self._lock = threading.Lock()

    def ensure(self, client: Elasticsearch, spec: IndexSpec, start: _dt.datetime) -> str:
        """The dated alias writes of the period starting at ``start`` go through, its
        partition created if missing. Writes name the dated alias, not the physical
        partition, so they follow a version reindex's alias swap (a process's cached
        name stays right after another process reindexed the partition).

        Sends, once per period and process: ``GET /_alias/<dated alias>`` (a partition
        holding it without its fence alias, made before fences existed, gets it: ``HEAD``
        + ``PUT /<partition>/_alias/<partition>.fence``); if no index holds it, ``HEAD`` of
        the umbrella and dated alias names (a concrete index under either raises
        :class:`~esmapper.errors.AliasNameTakenError`, nothing is created), then ``PUT
        /<alias>-v<N>-<period>`` with the mapping, the settings, the dated and umbrella
        aliases and its fence alias (``resource_already_exists_exception`` from a
        concurrent creator is tolerated: the dated alias and the fence are then added with
        ``PUT _alias``). Before the create, ``spec.before_create`` (the install decision,
        :func:`~esmapper.indexes._ensure.announce_create`), then, for a partition name a
        built-in data-stream template claims (``logs-*-*``...), :func:`ensure_template`.
        Raises :class:`IndexConfigurationError` (with Elasticsearch's reason) if
        Elasticsearch refuses the index or the template.
        """
        known = self._known.get(start)
        if known is not None:
            return known
        with self._lock:
            known = self._known.get(start)
            if known is None:
                known = self._ensure(client, spec, start)
                self._known[start] = known
            return known

    def known(self, start: _dt.datetime) -> str | None:
        """The partition this process ensured for the period starting at ``start``, if any
        (sends nothing)."""
        return self._known.get(start)

    def forget(self, starts: set[_dt.datetime] | None = None) -> None:
        """Drop the cached periods ``starts`` (all by default), e.g. after deleting them."""
        with self._lock:
            if starts is None:
                self._known.clear()
            for start in starts or ():
                self._known.pop(start, None)

    @staticmethod
    def _ensure(client: Elasticsearch, spec: IndexSpec, start: _dt.datetime) -> str:
        dated = spec.dated_alias(start)
        for _ in range(_REREADS):
            try:
                holders = sorted(client.indices.get_alias(name=dated).body)
            except NotFoundError:
                holders = []
            serving = [h for h in holders if parse_partition(spec, h) is not None]
            if not serving:
                break
            # a partition made before fences existed gets its fence; one a reindex replaced
            # since the alias was read (deleted, or no longer behind it) does not: read again
            if all([fence_if_serving(client, spec, holder) for holder in serving]):
                return dated
        else:
            return dated  # the dated alias keeps moving: writes go through it all the same
        name = spec.partition_name(start)
        for alias, wanted in ((spec.alias, spec.index_pattern), (dated, name)):
            if concrete_index(client, alias):  # the new partition could not take the alias
                raise alias_taken_error(spec.info.name, alias, f"the partition(s) {wanted!r}")
        announce_create(spec)  # the install decision precedes a first model index
        if data_stream_pattern(name) is not None:
            # a built-in data-stream template claims the name: only the model's own
            # template (priority 501) makes Elasticsearch create a regular index
            ensure_template(client, spec)

        def create() -> bool:
            try:
                once(client).indices.create(index=name, **partition_body(spec, start))
            except BadRequestError as exc:
                if exc.error != "resource_already_exists_exception":
                    what = f"cannot create partition {name!r} for {spec.info.name}"
                    raise refused(what, exc, index=name) from exc
                return False
            return True

        # Sent once; a lost answer is settled with HEAD /<name> (sent again if missing).
        if not send_or_read_back(
            create, lambda: bool(client.indices.exists(index=name)), what=f"PUT /{name}"
        ):
            # Created concurrently (or by a write through the template, or by our request
            # whose answer was lost): make sure it carries the dated alias too (idempotent).
            client.indices.put_alias(index=name, name=dated)
            ensure_fence(client, spec, name)
        return dated


def partitions_for_range(
    spec: IndexSpec, start: _dt.datetime | None, end: _dt.datetime | None
) -> list[str] | None:
    """The dated aliases a search over ``[start, end]`` needs, or ``None`` for the umbrella.

    Pure (sends nothing). ``None`` when the model is not time-series, a bound is open, the
    range exceeds ``max_age``, or it is too long to list: daily at >= 3 months, monthly at
    > 1 year (months of 30.436875 days and years of 365.2425 days, as the
    reference implementation measures them). Some of the aliases may not exist (no
    document that day, or expired): search with ``ignore_unavailable=True,
    allow_no_indices=True``. Raises ``ValueError`` when ``end`` is before ``start``.
    """
    if spec.kind not in TIME_SERIES_KINDS or start is None or end is None:
        return None
    start, end = parse_datetime(start), parse_datetime(end)
    if end < start:
        raise ValueError(f"the range ends ({end.isoformat()}) before it starts")
    period = end - start
    max_age = spec.options.max_age
    if max_age is not None and period > max_age:
        return None
    if (spec.kind == "daily" and period >= 3 * _AVG_MONTH) or (
        spec.kind == "monthly" and period > _AVG_YEAR
    ):
        return None
    names = []
    current = period_start(spec.kind, start)
    while current <= end:
        names.append(spec.dated_alias(current))
        current = next_period(spec.kind, current)
    return names
