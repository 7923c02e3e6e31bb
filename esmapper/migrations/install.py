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

**Who decides: whichever path creates the first model index.** ``migrate`` is not the
only one: a write creates its model's index when it is missing, so on a
first deploy the web process may write before the deploy's ``migrate`` job runs. Were the
decision left to ``migrate``, it would find that index and take a brand-new deployment
for an existing one (running migrations written for old data over the new code's
documents). So the write path decides first, by the same function
(:func:`settle_install`, steps 1-2 above): right before a write creates a model index
(``ensure``'s first-write creation of a versioned or plain index, a new time-series
partition) while its mapper does not know an install record yet, the mapper reads the
record and, without one, decides and writes it create-only
(:func:`~esmapper.migrations.planning.decide_before_first_index`, which judges "nothing
existed" as ``migrate`` does; ``Mapper`` calls it at most until a record is known, so
later index creations send nothing more). ``configure_indexes`` called by itself does
not decide (``migrate`` calls it after deciding; tests and tools use it to stand for "an
existing deployment").

Only a mapper **with migrations registered** decides on writes, with ``marks`` = the
versioned and resumable migrations it knows. The CLI loads the application's mapper, and
that usually is the very object the web process writes with, so it carries the same
migrations. A mapper without migrations records nothing: an application that uses no
migrations gets no state index from its writes, and if it adopts migrations later, its
deployment is an existing one and they run (right: its data was written by code that did
not know them). The cost of that choice: a web process whose mapper does *not* register
the migrations the CLI's mapper has (two different objects) still makes the first deploy
look existing; register them on the mapper the application writes with. Recording
``fresh`` with no marks would not help (the migrations not in ``marks`` run), and
recording "marks to be filled by the first ``migrate``" would skip, unrun, migrations a
later deploy adds for data written by this one. Like ``migrate``'s own decision, "nothing
existed" is judged over the mapper's registered models (:func:`~esmapper.migrations.
planning.index_steps`): give the mapper its models (``models=``) rather than registering
them lazily on first use.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import attrs

from esmapper.migrations.base import Migration
from esmapper.migrations.state import INSTALL_ID, MigrationRecord, StateStore
from esmapper.model.codec import format_datetime, parse_datetime

__all__ = [
    "InstallRecord",
    "complete_install",
    "fresh_marks",
    "read_install",
    "record_install",
    "settle_install",
]

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


def settle_install(
    store: StateStore,
    migrations: Sequence[Migration],
    *,
    nothing_existed: Callable[[], bool],
    now: _dt.datetime,
) -> InstallRecord:
    """The install record, decided at most once (steps 1-2 of the module docstring): the
    stored one (:func:`read_install`), else :func:`decide` (``nothing_existed`` is asked
    only then) written create-only (:func:`record_install`: a lost answer or a concurrent
    writer is settled by reading back; what is stored wins). The one function of both
    deciders, ``migrate``'s run and
    :func:`~esmapper.migrations.planning.decide_before_first_index`. Raises the client's
    errors (then nothing is decided)."""
    record = read_install(store)
    if record is not None:
        return record
    decided = decide(migrations, store.load(), nothing_existed=nothing_existed(), now=now)
    return record_install(store, decided)


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
