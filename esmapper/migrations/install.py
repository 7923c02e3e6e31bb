"""The install record: whether this deployment was a fresh install, decided once, durably.

A fresh install has no old data, so its versioned and resumable migrations are recorded
``completed`` (``skipped``) instead of run. The decision must survive a crash: a run killed
after creating the model indexes must not be mistaken, on its rerun, for an existing
deployment (the rerun would run migrations written for old data, and one of them failing
would block the install). So the first run of this esmapper on a deployment decides once
and writes the decision *before* it creates any model index:

1. no install record: ``fresh`` when there is no migration record and nothing of any
   model index exists (no index, alias, time-series partition or template; there is at
   least one model). An existing deployment (model indexes, or records written by an
   older esmapper that had no install record) is therefore never fresh;
2. the state index is created and the record ``esmapper:install`` is written create-only
   (``fresh``, ``marks``: the ids of the versioned and resumable migrations known then,
   ``status: started``): a lost answer or a concurrent writer is settled by reading it
   back, and what is stored wins;
3. ``configure_indexes`` runs; the migrations in ``marks`` without a record are marked
   completed (a rerun after a crash marks the rest), then the record gets ``status:
   completed``.

A migration added later (not in ``marks``) runs, even when the install it follows was
interrupted: data written meanwhile came from code that did not know it. Limitation: an
install interrupted by an esmapper older than this record (model indexes created, no
state) is not recognised as fresh.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import attrs

from esmapper.migrations.base import Migration
from esmapper.migrations.state import INSTALL_ID, MigrationRecord, StateStore
from esmapper.model.codec import format_datetime, parse_datetime

__all__ = ["InstallRecord", "complete_install", "fresh_marks", "read_install", "record_install"]

STARTED = "started"
COMPLETED = "completed"


@attrs.frozen
class InstallRecord:
    """The stored decision: ``fresh``, the migration ids a fresh install marks completed
    (``marks``), ``status`` (``started`` until the marks are written, then ``completed``)."""

    fresh: bool
    marks: tuple[str, ...] = ()
    status: str = STARTED
    started_utc: _dt.datetime | None = None
    completed_utc: _dt.datetime | None = None

    @property
    def completed(self) -> bool:
        return self.status == COMPLETED

    def to_source(self) -> dict[str, Any]:
        def date(value: _dt.datetime | None) -> str | None:
            return None if value is None else format_datetime(value)

        return {
            "kind": "install",
            "fresh": self.fresh,
            "marks": list(self.marks),
            "status": self.status,
            "started_utc": date(self.started_utc),
            "completed_utc": date(self.completed_utc),
        }

    @classmethod
    def from_source(cls, source: Mapping[str, Any]) -> InstallRecord:
        def date(value: Any) -> _dt.datetime | None:
            return None if value is None else parse_datetime(value)

        return cls(
            fresh=bool(source.get("fresh", False)),
            marks=tuple(str(m) for m in source.get("marks") or ()),
            status=str(source.get("status", STARTED)),
            started_utc=date(source.get("started_utc")),
            completed_utc=date(source.get("completed_utc")),
        )


def decide(
    migrations: Sequence[Migration],
    records: Mapping[str, MigrationRecord],
    *,
    nothing_existed: bool,
    now: _dt.datetime,
) -> InstallRecord:
    """The decision of a deployment without an install record (pure; see the module
    docstring): fresh when there is no record and ``nothing_existed``."""
    fresh = nothing_existed and not records
    marks = tuple(m.migration_id for m in migrations if m.is_versioned) if fresh else ()
    return InstallRecord(fresh=fresh, marks=marks, started_utc=now)


def fresh_marks(install: InstallRecord | None, decided: InstallRecord | None = None) -> set[str]:
    """The migration ids to mark completed instead of running: the stored record's
    ``marks`` when it says fresh, else those of the ``decided`` one (a plan of a deployment
    without a record), else none."""
    chosen = install if install is not None else decided
    return set(chosen.marks) if chosen is not None and chosen.fresh else set()


def read_install(store: StateStore) -> InstallRecord | None:
    """The install record (``GET /<prefix>esmapper-migrations/_doc/esmapper:install``),
    ``None`` when there is none or no state index."""
    source = store.source(INSTALL_ID)
    return None if source is None else InstallRecord.from_source(source)


def record_install(store: StateStore, record: InstallRecord) -> InstallRecord:
    """Create the state index if missing and write ``record`` create-only; returns what is
    stored (an earlier record wins). See :meth:`StateStore.ensure` and
    :meth:`StateStore.create` for the requests and how a lost answer is settled."""
    store.ensure()
    return InstallRecord.from_source(store.create(INSTALL_ID, record.to_source()))


def complete_install(
    store: StateStore, record: InstallRecord, now: _dt.datetime, done: Collection[str]
) -> InstallRecord:
    """Set ``status: completed`` once every id of ``record.marks`` is in ``done`` (a
    ``PUT`` of the record, read back after a lost answer: :meth:`StateStore.save`'s rule);
    returns the record, unchanged when something is left or it was already completed."""
    if record.completed or not set(record.marks) <= set(done):
        return record
    completed = attrs.evolve(record, status=COMPLETED, completed_utc=now)
    store.put(INSTALL_ID, completed.to_source())
    return completed
