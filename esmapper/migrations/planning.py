"""What a ``migrate`` would do: :func:`compute_steps` (pure) and :func:`plan` (read-only).

The rules (also in the package docstring):

- **versioned** / **resumable** migrations run in ascending ``version`` order. One without a
  ``completed`` record runs (also when its version is below an already completed one: it is
  run "out of order" and the reason says so). A ``versioned`` one whose record is ``failed``
  or ``started`` (interrupted) is **blocked** (permanent failure) unless ``retry_failed``;
  a ``resumable`` one is resumed. A blocked step blocks every step after it.
- On a **fresh install** the versioned and resumable migrations the install record lists
  (:mod:`esmapper.migrations.install`) are marked completed instead of run when they have
  no record.
- A ``started`` record while the ``migrations`` lock is live and was taken before the
  record was started is a migration **running** right now in another process (the step
  says who holds the lock and since when); with the lock expired or released, or taken
  after the record was started, it **was interrupted**.
- **repeatable** migrations come after: they run when they never completed, when their last
  run failed, when their ``version`` differs from the recorded one, or always
  (``always = True``).
- Index steps: missing indexes are created first, and a write block a killed reindex left
  on the index behind an alias is removed (:mod:`esmapper.indexes.blocks`); after the
  migrations, outdated indexes are reindexed, then old indexes a killed reindex left behind
  are deleted (:mod:`esmapper.indexes.leftovers`).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING

import attrs
from elasticsearch import NotFoundError

from esmapper._context import context_of
from esmapper.indexes._idx_owed import owed_rebuilds
from esmapper.indexes.blocks import leftover_block, serving_blocked
from esmapper.indexes.configure import index_state, is_outdated
from esmapper.indexes.leftovers import find_leftovers
from esmapper.indexes.partition_versions import partition_versions
from esmapper.indexes.spec import index_owners
from esmapper.locks import LockHolder, LockProvider
from esmapper.migrations.base import LOCK_NAME, Migration, load_migrations
from esmapper.migrations.install import (
    InstallRecord,
    decide,
    fresh_marks,
    read_install,
    settle_install,
)
from esmapper.migrations.state import MigrationRecord, StateStore
from esmapper.model.codec import format_datetime

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

    from esmapper._context import Context, HasContext
    from esmapper.indexes.spec import IndexSpec

__all__ = [
    "IndexView",
    "PlannedStep",
    "compute_steps",
    "decide_before_first_index",
    "idx_rebuild_steps",
    "in_progress",
    "index_steps",
    "leftover_steps",
    "plan",
    "unblock_steps",
    "view_index",
]

CREATE_INDEX = "create_index"
REINDEX = "reindex"
DELETE_INDEX = "delete_index"
UNBLOCK_INDEX = "unblock_index"
REBUILD_IDX = "rebuild_idx"
MARK_COMPLETED = "mark_completed"
RUN = "run"
RUNNING = "running"
BLOCKED = "blocked"

_VERSION_SUFFIX = re.compile(r"-v(\d+)$")


@attrs.frozen
class PlannedStep:
    """One thing ``migrate`` would do.

    ``action`` is ``create_index``, ``reindex`` (index steps: ``target`` is the alias),
    ``delete_index`` (``target`` is a leftover old index), ``unblock_index`` (``target`` is
    the index behind the alias, write-blocked by a killed reindex), ``rebuild_idx`` (``target``
    is the alias of a custom-field model whose ``idx`` rebuild a killed reindex owes),
    ``mark_completed``, ``run``,
    ``running`` (in another process, now) or ``blocked`` (migration steps: ``target`` is the
    migration id, ``migration`` the instance); ``reason`` says why.
    """

    action: str
    target: str
    kind: str
    version: int | None = None
    description: str = ""
    reason: str = ""
    migration: Migration | None = attrs.field(default=None, eq=False, repr=False)

    @property
    def is_migration(self) -> bool:
        return self.migration is not None

    def __str__(self) -> str:
        what = self.target if self.kind == "index" else f"{self.kind} {self.target}"
        text = f"{self.action:<15} {what}"
        if self.description and self.description != self.target:
            text += f" ({self.description})"
        return f"{text}: {self.reason}" if self.reason else text


def _step(action: str, migration: Migration, reason: str) -> PlannedStep:
    return PlannedStep(
        action=action,
        target=migration.migration_id,
        kind=migration.kind,
        version=migration.version,
        description=migration.title,
        reason=reason,
        migration=migration,
    )


def _running_step(
    migration: Migration, record: MigrationRecord, running: LockHolder | None
) -> PlannedStep | None:
    """A ``running`` step when ``record`` is ``started`` and the live lock ``running`` was
    taken before it was started (the same run); ``None`` otherwise (interrupted)."""
    if running is None or record.status != "started":
        return None
    started, acquired = record.started_utc, running.acquired_at
    if started is None or (acquired is not None and started < acquired):
        return None  # started by an earlier run that died; the lock is a newer run's
    reason = (
        f"running now (attempt {record.attempts}, started {format_datetime(started)}); "
        f"the migrations lock is held by {running}"
    )
    return _step(RUNNING, migration, reason)


def _versioned_step(
    migration: Migration,
    record: MigrationRecord | None,
    *,
    fresh: bool,
    retry_failed: bool,
    highest_done: int | None,
    running: LockHolder | None = None,
) -> PlannedStep | None:
    if record is not None and record.completed:
        return None
    if record is None:
        if fresh:
            return _step(MARK_COMPLETED, migration, "fresh install: nothing to migrate")
        version = migration.version
        if highest_done is not None and version is not None and version < highest_done:
            return _step(RUN, migration, f"pending (out of order: {highest_done} is done)")
        return _step(RUN, migration, "pending")
    now = _running_step(migration, record, running)
    if now is not None:
        return now
    state = "failed" if record.status == "failed" else "was interrupted"
    detail = f": {record.error}" if record.error else ""
    if migration.kind == "resumable":
        return _step(RUN, migration, f"resuming: {state} after {record.attempts} attempt(s)")
    if retry_failed:
        return _step(RUN, migration, f"retrying: {state}{detail}")
    return _step(
        BLOCKED,
        migration,
        f"{state}{detail}; fix it, then migrate again with retry_failed=True",
    )


def _repeatable_step(
    migration: Migration, record: MigrationRecord | None, running: LockHolder | None = None
) -> PlannedStep | None:
    if record is None:
        return _step(RUN, migration, "never ran")
    now = _running_step(migration, record, running)
    if now is not None:
        return now
    if not record.completed:
        return _step(RUN, migration, f"last run {record.status}")
    if record.version != migration.version:
        return _step(RUN, migration, f"version changed {record.version} -> {migration.version}")
    if migration.always:
        return _step(RUN, migration, "runs on every migrate (always = True)")
    return None


def compute_steps(
    migrations: Sequence[Migration],
    records: Mapping[str, MigrationRecord],
    *,
    fresh: bool | Collection[str] = False,
    retry_failed: bool = False,
    running: LockHolder | None = None,
) -> list[PlannedStep]:
    """The migration steps for ``migrations`` given the stored ``records`` (pure).

    ``fresh`` says the run is a fresh install (see the module docstring): ``True`` marks
    every versioned and resumable migration without a record, a collection of ids only
    those. ``running`` is the live ``migrations`` lock of another process, if any (a plan
    made while a run is in progress). Completed migrations that need nothing produce no
    step.
    """
    versioned = sorted((m for m in migrations if m.is_versioned), key=lambda m: m.version or 0)
    done = [
        m.version
        for m in versioned
        if (r := records.get(m.migration_id)) is not None and r.completed and m.version is not None
    ]
    highest_done = max(done) if done else None
    steps: list[PlannedStep] = []
    blocker: PlannedStep | None = None
    for migration in versioned:
        marked = fresh if isinstance(fresh, bool) else migration.migration_id in fresh
        step = _versioned_step(
            migration,
            records.get(migration.migration_id),
            fresh=marked,
            retry_failed=retry_failed,
            highest_done=highest_done,
            running=running,
        )
        if step is None:
            continue
        if blocker is not None:
            step = _step(BLOCKED, migration, f"waits for migration {blocker.target}")
        elif step.action == BLOCKED:
            blocker = step
        steps.append(step)
    for migration in migrations:
        if migration.kind != "repeatable":
            continue
        step = _repeatable_step(migration, records.get(migration.migration_id), running)
        if step is not None and blocker is not None:
            step = _step(BLOCKED, migration, f"waits for migration {blocker.target}")
        if step is not None:
            steps.append(step)
    return steps


def index_version(physical: str | None) -> int | None:
    """The version in a physical index name (``employees-v2`` -> 2), if any."""
    match = _VERSION_SUFFIX.search(physical or "")
    return int(match.group(1)) if match else None


@attrs.frozen
class IndexView:
    """What exists of one model's indexes (read-only; see :func:`view_index`).

    ``current`` is the physical index the alias resolves to (time-series: ``None``),
    ``exists`` whether the expected index (time-series: the template) exists, ``partitions``
    the number of time-series partitions behind the alias, ``outdated`` whether a versioned
    alias points at another version than the model's (time-series: whether a live
    partition is at an older version; ``lowest_version`` is the lowest live one).
    """

    current: str | None
    exists: bool
    partitions: int = 0
    outdated: bool = False
    lowest_version: int | None = None

    @property
    def empty(self) -> bool:
        """Nothing of this model exists yet (no index, alias, partition or template)."""
        return self.current is None and not self.exists and not self.partitions


def view_index(client: Elasticsearch, spec: IndexSpec) -> IndexView:
    """Sends ``GET /_alias/<alias>`` and ``HEAD /<index>`` (time-series: ``HEAD
    /_index_template/<name>`` and ``GET /<alias>-v*/_alias``); changes nothing."""
    if spec.kind in ("daily", "monthly"):
        try:
            partitions = len(client.indices.get_alias(name=spec.alias).body)
        except NotFoundError:
            partitions = 0
        template = bool(
            client.indices.exists_index_template(name=f"{spec.physical_name()}-template")
        )
        lowest = partition_versions(client, spec, spec.clock()).lowest
        outdated = is_outdated(spec, current=None, lowest=lowest)
        return IndexView(None, template, partitions, outdated, lowest)
    current, exists = index_state(client, spec)
    return IndexView(current, exists, 0, is_outdated(spec, current=current, lowest=None))


def index_steps(mapper: Context) -> tuple[list[PlannedStep], list[PlannedStep], bool]:
    """``(create steps, reindex steps, whether nothing of any model index exists)``.

    Sends the requests of :func:`view_index` per model; changes nothing.
    """
    creates: list[PlannedStep] = []
    reindexes: list[PlannedStep] = []
    all_missing = bool(mapper.models)
    for owners, spec in index_owners(map(mapper.spec, mapper.models)):  # an index once
        view = view_index(mapper.client, spec)
        all_missing = all_missing and view.empty
        expected = spec.physical_name()
        if not view.exists:
            what = "template" if spec.kind in ("daily", "monthly") else "index"
            creates.append(
                PlannedStep(
                    CREATE_INDEX, spec.alias, "index", spec.version, expected, f"{what} missing"
                )
            )
        if view.outdated:
            reason = f"the alias points at {view.current}; {owners} is at version "
            if view.current is None:  # time-series
                reason = (
                    f"partitions at version {view.lowest_version} serve {spec.alias}; "
                    f"{owners} is at version "
                )
            reindexes.append(
                PlannedStep(
                    REINDEX, spec.alias, "index", spec.version, expected, reason + str(spec.version)
                )
            )
    return creates, reindexes, all_missing


def decide_before_first_index(ctx: Context) -> InstallRecord | None:
    """The write path's decision (:mod:`esmapper.migrations.install`): called right before
    a write creates one of ``ctx``'s model indexes while the mapper knows no install record.

    ``None`` (nothing sent) for a mapper without migrations; else
    :func:`~esmapper.migrations.install.settle_install` with its migrations and "nothing
    existed" judged like ``migrate`` does (:func:`index_steps` over the registered models):
    ``GET`` the record, and without one a search of the records, the index reads and
    ``PUT /<prefix>esmapper-migrations`` (if missing) + the create-only record. Raises
    :class:`~esmapper.errors.MigrationError` for invalid migrations and the client's
    errors; the write then fails before creating anything.
    """
    if not ctx.migrations:
        return None
    return settle_install(
        StateStore(ctx.client, index_prefix=ctx.index_prefix),
        load_migrations(ctx.migrations),
        nothing_existed=lambda: index_steps(ctx)[2],
        now=ctx.clock(),
    )


def leftover_steps(mapper: Context) -> list[PlannedStep]:
    """A ``delete_index`` step per old index a reindex left behind that ``migrate`` deletes
    (:func:`esmapper.indexes.leftovers.find_leftovers`: ``GET /<alias>-v*`` per versioned
    model); changes nothing."""
    steps: list[PlannedStep] = []
    for _, spec in index_owners(map(mapper.spec, mapper.models)):
        for leftover in find_leftovers(mapper.client, spec):
            if leftover.deletable:
                steps.append(
                    PlannedStep(
                        DELETE_INDEX, leftover.index, "index", leftover.version,
                        reason=f"{leftover.docs} documents; {leftover.reason}",
                    )
                )  # fmt: skip
    return steps


def unblock_steps(mapper: Context) -> list[PlannedStep]:
    """An ``unblock_index`` step per index serving a model that a killed reindex left
    write-blocked (:func:`esmapper.indexes.blocks.serving_blocked` and
    :func:`~esmapper.indexes.blocks.leftover_block`: ``GET /<alias>-v*`` per versioned or
    time-series model and, per blocked index, its mapping and the lock); read-only."""
    locks = LockProvider(mapper.client, index_prefix=mapper.index_prefix, clock=mapper.clock)
    steps: list[PlannedStep] = []
    for _, spec in index_owners(map(mapper.spec, mapper.models)):
        for index in serving_blocked(mapper.client, spec):
            block = leftover_block(locks, index)
            if block is not None:
                reason = f"{block.describe(mapper.clock())}, which no longer runs"
                steps.append(PlannedStep(UNBLOCK_INDEX, block.index, "index", reason=reason))
    return steps


def idx_rebuild_steps(mapper: Context) -> list[PlannedStep]:
    """A ``rebuild_idx`` step per custom-field model whose ``idx`` rebuild a killed reindex
    owes (:func:`esmapper.indexes._idx_owed.owed_rebuilds`: ``GET /<alias>/_mapping``
    per model with a ``rebuild`` point); read-only."""
    steps: list[PlannedStep] = []
    for spec in map(mapper.spec, mapper.models):
        owed = owed_rebuilds(mapper, spec)
        if owed:
            reason = f"owed by the reindex into {', '.join(owed)}"
            steps.append(PlannedStep(REBUILD_IDX, spec.alias, "index", reason=reason))
    return steps


def in_progress(mapper: Context | HasContext) -> LockHolder | None:
    """The holder of the live ``migrations`` lock (a run in progress), ``None`` when there
    is none or it expired; sends ``GET /<prefix>esmapper-locks/_doc/migrations``."""
    mapper = context_of(mapper)  # a Mapper: its services
    locks = LockProvider(mapper.client, index_prefix=mapper.index_prefix, clock=mapper.clock)
    return locks.live_holder(LOCK_NAME)


def plan(mapper: Context | HasContext, *, retry_failed: bool = False) -> list[PlannedStep]:
    """What ``migrate(mapper)`` would do now, in order; sends only reads, changes nothing.

    Index steps (``create_index`` and ``unblock_index``; after the migrations ``reindex``,
    then ``delete_index``, then ``rebuild_idx``) come from ``GET /_alias`` / ``HEAD`` /
    ``_settings`` / ``GET /<alias>-v*`` (and ``GET /<alias>/_mapping`` per custom-field
    model) requests; migration steps from ``POST
    /<prefix>esmapper-migrations/_search``, the install record (``GET``, see
    :mod:`esmapper.migrations.install`: the same freshness decision as the run's) and the
    ``migrations`` lock (``GET``: a live one shows the migration it runs as ``running``).
    Raises :class:`~esmapper.errors.MigrationError` when the migrations are invalid (e.g.
    duplicate versions) and the client's errors when the server cannot be reached.
    """
    mapper = context_of(mapper)  # a Mapper: its services
    migrations = load_migrations(mapper.migrations)
    creates, reindexes, all_missing = index_steps(mapper)
    store = StateStore(mapper.client, index_prefix=mapper.index_prefix)
    records = store.load()
    install = read_install(store)
    decided = None
    if install is None:
        decided = decide(migrations, records, nothing_existed=all_missing, now=mapper.clock())
    fresh = fresh_marks(install, decided)
    steps = compute_steps(
        migrations,
        records,
        fresh=fresh,
        retry_failed=retry_failed,
        running=in_progress(mapper),
    )
    return [
        *creates,
        *unblock_steps(mapper),
        *steps,
        *reindexes,
        *leftover_steps(mapper),
        *idx_rebuild_steps(mapper),
    ]
