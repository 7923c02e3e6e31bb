"""Migrations: data changes that run once (or again) under a lock, tracked in Elasticsearch.

``mapper.migrate()`` (or :func:`migrate`) takes the ``migrations`` lock, configures the
indexes, runs what is pending and reindexes outdated indexes. State lives in
``<prefix>esmapper-migrations``, one document per migration (see :mod:`.state`).

Kinds (``Migration.kind``) and when they run:

- ``"versioned"``: once, in ascending ``version`` order together with the resumable ones. A
  failure is recorded (``failed``, with the error) and is **permanent**: it stops every later
  step and blocks the next runs (``FAILED``) until the migration is fixed and run with
  ``retry_failed=True`` (``esmapper migrate --retry-failed``). A run interrupted mid-way
  (``started`` record, e.g. the process died) counts as failed.
- ``"resumable"``: once, in the same sequence; a failure is retried within the run
  (``max_attempts``, default 3, pausing ``retry_delay`` seconds doubled each time, the lock
  renewed before each attempt); if every attempt fails the run stops with ``FAILED`` and the
  next run resumes it. Write it so a re-run continues where it stopped.
- ``"repeatable"``: after every versioned migration succeeded. It runs when it never
  completed, when its last run failed, when its ``version`` differs from the recorded one
  (bump ``version`` to run it again; it need not be unique), and on every run with
  ``always = True`` (periodic maintenance). Retried like a resumable one; a failure does not
  stop the other repeatables but the result is ``FAILED``. This follows Foundatio's manager
  (re-run when the version grows), with ``always`` for the "periodic task" use.

**Fresh install**: when a deployment has no migration record and nothing of any model index
exists (no index, alias, time-series partition or template; there is at least one model),
there is no old data to migrate: the versioned and resumable migrations are recorded
``completed`` (``skipped: true``) without running; repeatable ones still run. This is
decided once, by the first run, and written to the state index (the install record,
:mod:`.install`) *before* any model index is created, so a run killed half-way through the
install is resumed as one by the next run; only the migrations known at that first run are
marked, a later one runs. A first ``migrate`` against existing indexes, or against records
of an older esmapper, is never a fresh install: it runs everything.

**Crashes**: the ``migrations`` lock is renewed by a heartbeat thread while the run's
process lives (a migration never has to renew it), so a process killed while holding it
blocks other runs only until the lock expires (``lock_ttl``, ``esmapper migrate
--lock-ttl``, 90 seconds by default), and not at all for a run on the same machine, which
sees the holder's process is gone; or until its document is deleted (:mod:`esmapper.locks`).
While the lock is live, :func:`plan` / ``esmapper status`` show its ``started`` migration as
``running`` (with the holder and since when); once it lapsed, as interrupted. A write block
a reindex killed in its final pass left on the index behind an alias is lifted by the next
``migrate`` right after ``configure_indexes`` (:mod:`esmapper.indexes.blocks`), and an old
index a killed reindex left behind is reported by ``esmapper status`` and deleted by the
next ``migrate`` (:mod:`esmapper.indexes.leftovers`).

A migration id is ``str(version)`` for versioned/resumable migrations and
``module.QualifiedName`` for repeatable ones (override with ``id``). Duplicate versions or ids,
an unknown kind or a versioned migration without a version raise
:class:`~esmapper.errors.MigrationError` before anything is sent. :func:`plan` shows what a
run would do without changing anything.
"""

from esmapper.migrations.base import (
    Migration,
    MigrationCancelled,
    MigrationContext,
    MigrationResult,
    load_migrations,
    migrations_from_module,
)
from esmapper.migrations.planning import PlannedStep, compute_steps, plan
from esmapper.migrations.runner import MigrationRun, StepOutcome, migrate, run_migrations
from esmapper.migrations.state import STATE_INDEX, MigrationRecord, StateStore

__all__ = [
    "STATE_INDEX",
    "Migration",
    "MigrationCancelled",
    "MigrationContext",
    "MigrationRecord",
    "MigrationResult",
    "MigrationRun",
    "PlannedStep",
    "StateStore",
    "StepOutcome",
    "compute_steps",
    "load_migrations",
    "migrate",
    "migrations_from_module",
    "plan",
    "run_migrations",
]
