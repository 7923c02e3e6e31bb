"""Index jobs: time-series upkeep and index cleanup.

:class:`MaintainIndexesJob` runs :func:`esmapper.indexes.maintenance.maintain` under the
lock ``maintenance``: time-series aliases put right, expired partitions deleted.

:class:`CleanupIndexesJob` finds, per registered model (or ``models``):

- the time-series partitions whose period expired (``Index.max_age``; the same rule as
  ``maintain``: :func:`~esmapper.indexes.maintenance.expired_partitions`);
- the old versions a reindex left behind that are safe to delete: **only after a
  successful reindex** (the alias points at the model's current version, the old index
  is write-blocked and its ``_meta`` marker says it was replaced and not to be kept:
  :attr:`esmapper.indexes.leftovers.Leftover.deletable`); other old versions are listed
  as kept, with why;
- with ``patterns`` and ``max_age``: indexes no model owns whose name ends with a date
  (``logs-2024.01.15``, ``logs-2024-01-15``, ``logs-2024.01``) past ``max_age`` (daily
  names: from the day; monthly names: from the end of the month, like partition retention).
  Names without
  a date, and any index named like a registered model's (``<alias>`` or ``<alias>-v...``),
  are skipped.

It is a **dry run by default** (``dry_run=True``: reads only, no lock, the result lists
what would be deleted). Otherwise, under the lock ``index-cleanup``, it deletes the
expired partitions through ``maintain`` (for the models that have some), the leftovers
through :func:`~esmapper.indexes.leftovers.delete_leftovers` (under each model's
``reindex:<alias>`` lock: a model whose reindex runs now is skipped and reported kept),
and the dated indexes of ``patterns`` one ``DELETE /<index>`` each, sent once (a lost
answer is read back with ``HEAD /<index>``).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final

import attrs
from elasticsearch import Elasticsearch, NotFoundError

from esmapper._transport import once, send_or_read_back
from esmapper.errors import LockError
from esmapper.indexes.leftovers import delete_leftovers, find_leftovers
from esmapper.indexes.maintenance import (
    MaintenanceReport,
    expired_partitions,
    list_partitions,
    maintain,
)
from esmapper.indexes.timeseries import expires_at
from esmapper.jobs.base import Job, JobContext, JobResult
from esmapper.jobs.durations import format_duration
from esmapper.locks import DEFAULT_TTL

if TYPE_CHECKING:
    from esmapper._context import Context, HasContext
    from esmapper.indexes.spec import IndexSpec

__all__ = ["CleanupIndexesJob", "CleanupItem", "IndexCleanupReport", "MaintainIndexesJob"]

_DATED: Final = re.compile(r"(\d{4})[.\-_](\d{2})(?:[.\-_](\d{2}))?$")


class MaintainIndexesJob(Job):
    """:func:`~esmapper.indexes.maintenance.maintain` as a job (lock ``maintenance``);
    ``details`` is the :class:`~esmapper.indexes.maintenance.MaintenanceReport`."""

    name = "maintenance"

    def __init__(
        self,
        mapper: Context | HasContext,
        models: Iterable[type] | None = None,
        *,
        lock_wait: _dt.timedelta = _dt.timedelta(0),
        lock_ttl: _dt.timedelta = DEFAULT_TTL,
    ) -> None:
        super().__init__(mapper, lock_wait=lock_wait, lock_ttl=lock_ttl)
        self.models = list(models) if models is not None else None

    def execute(self, ctx: JobContext) -> JobResult:
        for model in self.models or self.services.models:
            spec = self.services.spec(model)
            if spec.is_time_series:
                ctx.sends("GET", f"/{spec.alias}-v*/_alias")
        report = maintain(self.services, self.models)
        message = (
            f"{len(report.expired)} expired, {len(report.deleted)} deleted, "
            f"{len(report.alias_actions)} alias changes"
        )
        return JobResult.success(self.name, message, report)


@attrs.frozen
class CleanupItem:
    """An index the cleanup deletes (or keeps): ``kind`` is ``expired``, ``leftover`` or
    ``dated``; ``model`` the model's class name (``None`` for ``dated``)."""

    index: str
    kind: str
    reason: str
    model: str | None = None


@attrs.frozen
class IndexCleanupReport:
    """``candidates``: what is deleted (in a dry run: would be); ``deleted``: the names
    actually deleted; ``kept``: old indexes left alone, with why."""

    candidates: tuple[CleanupItem, ...] = ()
    deleted: tuple[str, ...] = ()
    kept: tuple[CleanupItem, ...] = ()
    dry_run: bool = True


class CleanupIndexesJob(Job):
    """Delete expired partitions and the leftovers of successful reindexes (see the
    module docstring); ``details`` is an :class:`IndexCleanupReport`."""

    name = "index-cleanup"

    def __init__(
        self,
        mapper: Context | HasContext,
        models: Iterable[type] | None = None,
        *,
        dry_run: bool = True,
        patterns: Sequence[str] = (),
        max_age: _dt.timedelta | None = None,
        lock_wait: _dt.timedelta = _dt.timedelta(0),
        lock_ttl: _dt.timedelta = DEFAULT_TTL,
    ) -> None:
        if patterns and max_age is None:
            raise ValueError("cleaning up indexes by pattern needs max_age")
        super().__init__(mapper, lock_wait=lock_wait, lock_ttl=lock_ttl)
        self.models = list(models) if models is not None else None
        self.dry_run = dry_run
        self.patterns = list(patterns)
        self.max_age = max_age

    @property
    def lock_name(self) -> str | None:
        return None if self.dry_run else self.name

    def _specs(self) -> list[IndexSpec]:
        return [self.services.spec(m) for m in self.models or self.services.models]

    def execute(self, ctx: JobContext) -> JobResult:
        client, now = self.services.client, self.services.clock()
        candidates: list[CleanupItem] = []
        kept: list[CleanupItem] = []
        expired_models: list[type] = []
        leftover_models: list[type] = []
        for spec in self._specs():
            ctx.checkpoint()
            name = spec.info.name
            if spec.is_time_series:
                ctx.sends("GET", f"/{spec.alias}-v*/_alias")
                expired = expired_partitions(spec, list_partitions(client, spec), now)
                max_age = format_duration(spec.options.max_age or _dt.timedelta(0))
                candidates += [
                    CleanupItem(p.index, "expired", f"older than max_age {max_age}", name)
                    for p in sorted(expired, key=lambda p: p.index)
                ]
                if expired:
                    expired_models.append(spec.info.cls)
            if spec.kind == "plain":
                continue
            ctx.sends("GET", f"/{spec.alias}-v*")
            for leftover in find_leftovers(client, spec):
                item = CleanupItem(
                    leftover.index, "leftover", f"{leftover.docs} documents; {leftover.reason}",
                    name,
                )  # fmt: skip
                if leftover.deletable:
                    candidates.append(item)
                    if spec.info.cls not in leftover_models:
                        leftover_models.append(spec.info.cls)
                else:
                    kept.append(item)
        candidates += self._dated(ctx, client, now)
        if self.dry_run:
            report = IndexCleanupReport(tuple(candidates), (), tuple(kept), dry_run=True)
            return JobResult.success(self.name, f"would delete {_count(candidates)}", report)
        deleted = self._apply(ctx, client, candidates, expired_models, leftover_models, kept)
        report = IndexCleanupReport(tuple(candidates), tuple(deleted), tuple(kept), dry_run=False)
        return JobResult.success(self.name, f"deleted {len(deleted)} indexes", report)

    def _apply(  # noqa: PLR0917 - the pieces found by execute
        self,
        ctx: JobContext,
        client: Elasticsearch,
        candidates: list[CleanupItem],
        expired_models: list[type],
        leftover_models: list[type],
        kept: list[CleanupItem],
    ) -> list[str]:
        deleted: list[str] = []
        if expired_models:
            ctx.checkpoint()
            report: MaintenanceReport = maintain(self.services, expired_models)
            deleted += report.deleted
        for model in leftover_models:
            ctx.checkpoint()
            try:
                deleted += delete_leftovers(self.services, model)
            except LockError as exc:
                kept += [
                    attrs.evolve(item, reason=f"{item.reason}; not now: {exc}")
                    for item in candidates
                    if item.kind == "leftover" and item.model == model.__name__
                ]
        for item in candidates:
            if item.kind == "dated":
                ctx.checkpoint()
                _delete_index(ctx, client, item.index)
                deleted.append(item.index)
        return deleted

    def _dated(
        self, ctx: JobContext, client: Elasticsearch, now: _dt.datetime
    ) -> list[CleanupItem]:
        """The indexes of :attr:`patterns` whose name's date is past :attr:`max_age`."""
        if not self.patterns or self.max_age is None:
            return []
        owned = [spec.alias for spec in self._specs()] + [
            self.services.spec(m).alias for m in self.services.models
        ]
        found: list[CleanupItem] = []
        for pattern in self.patterns:
            ctx.sends("GET", f"/{pattern}/_alias")
            body: dict[str, Any] = dict(
                client.indices.get_alias(
                    index=pattern, ignore_unavailable=True, allow_no_indices=True
                ).body
            )
            for index in sorted(body):
                if any(index == a or index.startswith(f"{a}-v") for a in owned):
                    continue  # a model's: its own rules apply
                expiry = _dated_expiry(index, self.max_age)
                if expiry is not None and now > expiry and all(i.index != index for i in found):
                    why = f"expired {expiry:%Y-%m-%d} (max age {format_duration(self.max_age)})"
                    found.append(CleanupItem(index, "dated", why))
        return found


def _dated_expiry(index: str, max_age: _dt.timedelta) -> _dt.datetime | None:
    """When a dated index expires: its day + ``max_age``, or the end of its month +
    ``max_age`` (``None``: no date in the name)."""
    match = _DATED.search(index)
    if match is None:
        return None
    year, month, day = match.group(1), match.group(2), match.group(3)
    try:
        start = _dt.datetime(int(year), int(month), int(day or 1), tzinfo=_dt.timezone.utc)
    except ValueError:
        return None
    return expires_at("daily" if day else "monthly", start, max_age)


def _delete_index(ctx: JobContext, client: Elasticsearch, index: str) -> None:
    def send() -> None:
        ctx.sends("DELETE", f"/{index}")
        with contextlib.suppress(NotFoundError):  # already gone
            once(client).indices.delete(index=index)

    send_or_read_back(send, lambda: not client.indices.exists(index=index), what=f"DELETE /{index}")
    ctx.log.info("deleted %s", index)


def _count(items: Sequence[CleanupItem]) -> str:
    kinds = {"expired": "expired partitions", "leftover": "leftover indexes", "dated": "dated"}
    parts = [f"{sum(i.kind == k for i in items)} {label}" for k, label in kinds.items()]
    return f"{len(items)} indexes ({', '.join(parts)})"
