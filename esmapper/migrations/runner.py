"""Running migrations: :func:`migrate` (the result) and :func:`run_migrations` (the report).

A run sends, in order:

1. the ``migrations`` lock: a create-only write of ``<prefix>esmapper-locks/_doc/migrations``
   (see :mod:`esmapper.locks`); held by someone else -> ``UNABLE_TO_ACQUIRE_LOCK``;
2. ``GET /<prefix>esmapper-migrations/_doc/esmapper:install``: the install record. Without
   one (the first run of this esmapper on the deployment) a search of the records and the
   reads of :func:`~esmapper.migrations.planning.view_index` per model decide whether this
   is a fresh install, and ``PUT /<prefix>esmapper-migrations`` (if missing) and a
   create-only write of the record store the decision *before any model index is created*
   (:mod:`esmapper.migrations.install`), so a rerun after a crash decides the same;
3. ``mapper.configure_indexes()``; per versioned or time-series model ``GET
   /<alias>-v*`` and the removal of a write block a killed reindex left on an index serving
   it (:mod:`esmapper.indexes.blocks`: at once when its lock is not live); then a search
   of the records;
4. per migration step a state write (``started``), ``Migration.run(ctx)``, a state write
   (``completed`` / ``failed``) and a lock renewal; on a fresh install the marks (one state
   write each), then the install record's ``status: completed``;
5. when every migration succeeded, a reindex of each outdated versioned index (when
   :mod:`esmapper.indexes.reindex` is available; its progress goes to ``progress``), then
   the deletion of old indexes a killed reindex left behind
   (:func:`esmapper.indexes.leftovers.delete_leftovers`), then the ``idx`` rebuild a killed
   reindex of a custom-field model owes (``GET /<alias>/_mapping`` per such model,
   :mod:`esmapper.indexes._idx_owed`); then the lock is released.

The ``migrations`` lock has a short expiry (``lock_ttl``, 90 s by default) and is renewed
every ttl/3 by a heartbeat thread while the run's process lives (:mod:`esmapper.locks`):
a migration may run for as long as it needs without renewing it itself, and a killed run's
lock lapses within the ttl (at once for a rerun on the same machine). The run also renews
it explicitly after every migration and before every retry: a renewal that finds the lock
taken over fails the run.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import attrs

from esmapper.errors import LockError
from esmapper.indexes._idx_owed import settle_idx_rebuild
from esmapper.indexes._reindex_pass import Throttle
from esmapper.indexes._reindex_run import ReindexProgress, ReindexResult
from esmapper.indexes.blocks import clear_leftover_block, serving_blocked
from esmapper.indexes.configure import IndexState
from esmapper.indexes.leftovers import delete_leftovers
from esmapper.indexes.reindex import check_lock_options, check_parallel, reindex_outdated
from esmapper.indexes.spec import IndexSpec
from esmapper.locks import DEFAULT_TTL, Lock, LockProvider
from esmapper.migrations import install as inst
from esmapper.migrations import state as st
from esmapper.migrations.base import (
    LOCK_NAME,
    Migration,
    MigrationCancelled,
    MigrationContext,
    MigrationResult,
    load_migrations,
)
from esmapper.migrations.planning import (
    BLOCKED,
    CREATE_INDEX,
    DELETE_INDEX,
    MARK_COMPLETED,
    REBUILD_IDX,
    REINDEX,
    UNBLOCK_INDEX,
    PlannedStep,
    compute_steps,
    in_progress,
    index_steps,
    plan,
)

if TYPE_CHECKING:
    from esmapper.mapper import Mapper

__all__ = ["LOCK_NAME", "LOCK_TTL", "MigrationRun", "StepOutcome", "migrate", "run_migrations"]

log = logging.getLogger("esmapper.migrations")

LOCK_TTL = DEFAULT_TTL


@attrs.define
class StepOutcome:
    """What happened to one step: ``status`` is ``created`` / ``reindexed`` / ``deleted`` /
    ``unblocked`` / ``rebuilt`` (index steps), ``completed``, ``marked`` (fresh install),
    ``failed`` or ``blocked``; ``note`` adds figures (e.g. how long a reindex blocked writes)."""

    step: PlannedStep
    status: str
    attempts: int = 0
    seconds: float = 0.0
    error: str | None = None
    note: str | None = None

    def __str__(self) -> str:
        step = self.step
        what = step.target if step.kind == "index" else f"{step.kind} migration {step.target}"
        if step.description and step.description != step.target:
            what += f" ({step.description})"
        text = f"{self.status:<10} {what}"
        if self.attempts > 1:
            text += f" after {self.attempts} attempts"
        if self.seconds >= 0.01:
            text += f" in {self.seconds:.2f}s"
        if self.note:
            text += f" ({self.note})"
        return f"{text}: {self.error}" if self.error else text


@attrs.define
class MigrationRun:
    """The report of :func:`run_migrations`; ``result`` is what :func:`migrate` returns.

    ``steps`` is the plan (what a dry run would do), ``outcomes`` what was done, ``indexes``
    what ``configure_indexes`` reported, ``error`` the reason of a non-success result.
    """

    result: MigrationResult
    steps: list[PlannedStep] = attrs.field(factory=list)
    outcomes: list[StepOutcome] = attrs.field(factory=list)
    indexes: list[IndexState] = attrs.field(factory=list)
    error: str | None = None
    warnings: list[str] = attrs.field(factory=list)
    dry_run: bool = False


class _LockLost(Exception):
    pass


@attrs.define(eq=False, kw_only=True)
class _Runner:
    mapper: Mapper
    lock: Lock
    migrations: Sequence[Migration]
    cancel: threading.Event
    sleep: Callable[[float], object]
    on_outcome: Callable[[StepOutcome], object] | None
    progress: Callable[[Any], object] | None
    throttle: Throttle
    max_parallel: int = 1
    store: st.StateStore = attrs.field(
        init=False,
        default=attrs.Factory(
            lambda self: st.StateStore(self.mapper.client, index_prefix=self.mapper.index_prefix),
            takes_self=True,
        ),
    )
    report: MigrationRun = attrs.field(
        init=False, factory=lambda: MigrationRun(MigrationResult.SUCCESS)
    )
    cancelled: bool = attrs.field(init=False, default=False)
    _install: inst.InstallRecord | None = attrs.field(init=False, default=None)
    _completed: set[str] = attrs.field(init=False, factory=set)

    def emit(self, outcome: StepOutcome) -> None:
        self.report.outcomes.append(outcome)
        if self.on_outcome is not None:
            self.on_outcome(outcome)

    def renew(self) -> None:
        try:
            self.lock.renew()
        except LockError as exc:
            raise _LockLost(str(exc)) from exc

    def install(self) -> inst.InstallRecord:
        """The install record; without one, decide now and store it (before any model
        index is created: a crash after this point is rerun with the same decision)."""
        return inst.settle_install(
            self.store,
            self.migrations,
            nothing_existed=lambda: index_steps(self.mapper.services)[2],
            now=self.mapper.clock(),
        )

    def run(self, *, retry_failed: bool, reindex: bool) -> MigrationRun:
        install = self.install()
        fresh = inst.fresh_marks(install)
        if install.fresh and not install.completed:
            log.info("fresh install: versioned migrations are marked completed, not run")
        # every model's state is needed (not the marker's "done"): configured under the
        # configure lock, the marker set for the application's processes that start next
        states = self.mapper.configure_indexes(force=True)
        self.report.indexes = states
        for s in states:
            if s.action == "created":
                step = PlannedStep(CREATE_INDEX, s.alias, "index", None, s.expected_index)
                self.report.steps.append(step)
                self.emit(StepOutcome(step, "created"))
        self.clear_blocks()
        records = self.store.load()  # the install record exists, so does the state index
        self._install = install
        self._completed = {i for i, r in records.items() if r.completed}
        steps = compute_steps(self.migrations, records, fresh=fresh, retry_failed=retry_failed)
        self.report.steps.extend(steps)
        try:
            self.complete_install()  # every mark may be written already (a crash after them)
            result, error = self.run_steps(steps, records)
            if result is MigrationResult.SUCCESS and reindex:
                result, error = self.reindex_outdated(states)
            if result is MigrationResult.SUCCESS and reindex:
                result, error = self.delete_leftovers()
            if result is MigrationResult.SUCCESS and reindex:
                result, error = self.settle_idx_rebuilds()
        except _LockLost as exc:
            result, error = MigrationResult.FAILED, f"the migrations lock was lost: {exc}"
        self.report.result, self.report.error = result, error
        return self.report

    def clear_blocks(self) -> None:
        """Remove the write blocks killed reindexes left on the indexes serving the models
        (:func:`~esmapper.indexes.blocks.serving_blocked`; one ``unblocked`` step each); a
        block whose reindex runs now, or someone else's, is left alone."""
        mapper = self.mapper
        locks = LockProvider(mapper.client, index_prefix=mapper.index_prefix, clock=mapper.clock)
        for spec in map(mapper.spec, mapper.models):
            for index in serving_blocked(mapper.client, spec):
                started = time.monotonic()
                cleared = clear_leftover_block(locks, index, lock_ttl=self.lock.ttl)
                if cleared is None:
                    continue
                on = cleared.seconds(mapper.clock())
                reason = f"write-blocked by the reindex into {cleared.into}, which no longer runs"
                step = PlannedStep(UNBLOCK_INDEX, index, "index", reason=reason)
                self.report.steps.append(step)
                note = "writes were refused" + ("" if on is None else f" for {on:.0f}s")
                seconds = time.monotonic() - started
                self.emit(StepOutcome(step, "unblocked", 1, seconds, note=note))

    def run_steps(
        self, steps: Sequence[PlannedStep], records: Mapping[str, st.MigrationRecord]
    ) -> tuple[MigrationResult, str | None]:
        failure: str | None = None
        for step in steps:
            if self.cancel.is_set():
                return MigrationResult.CANCELLED, "the migration run was cancelled"
            if step.action == BLOCKED:
                self.emit(StepOutcome(step, "blocked", error=step.reason))
                return MigrationResult.FAILED, f"migration {step.target} {step.reason}"
            if step.action == MARK_COMPLETED:
                self.mark_completed(step)
                continue
            outcome = self.execute(step, records.get(step.target))
            if outcome.status == "failed":
                error = f"migration {step.target} ({step.description}) failed: {outcome.error}"
                if self.cancelled or self.cancel.is_set():
                    return MigrationResult.CANCELLED, error
                if step.kind != "repeatable":
                    return MigrationResult.FAILED, error
                failure = failure or error
        return (MigrationResult.FAILED, failure) if failure else (MigrationResult.SUCCESS, None)

    def complete_install(self) -> None:
        """``status: completed`` on a fresh install's record once all its marks are written."""
        install = self._install
        if install is not None and install.fresh and not install.completed:
            self._install = inst.complete_install(
                self.store, install, self.mapper.clock(), self._completed
            )

    def mark_completed(self, step: PlannedStep) -> None:
        assert step.migration is not None
        now = self.mapper.clock()
        self.store.save(
            st.MigrationRecord(
                id=step.target,
                kind=step.kind,
                version=step.version,
                status=st.COMPLETED,
                started_utc=now,
                completed_utc=now,
                description=step.description,
                skipped=True,
            )
        )
        self._completed.add(step.target)
        self.emit(StepOutcome(step, "marked"))
        self.complete_install()

    def execute(self, step: PlannedStep, record: st.MigrationRecord | None) -> StepOutcome:
        migration = step.migration
        assert migration is not None
        if record is None:
            record = st.MigrationRecord(id=step.target, kind=migration.kind)
        retried = migration.kind != "versioned"
        attempts = max(1, migration.max_attempts) if retried else 1
        cls = type(migration)
        ctx_log = logging.getLogger(f"{cls.__module__}.{cls.__qualname__}")
        started = time.monotonic()
        error: str | None = None
        ran = 0
        for attempt in range(1, attempts + 1):
            if attempt > 1:
                if self.cancel.is_set():
                    break
                self.sleep(max(0.0, migration.retry_delay) * 2 ** (attempt - 2))
            if retried:
                self.renew()  # before each attempt (Foundatio renews before every retry)
            self._start(record, migration)
            ran = attempt
            log.info("running %s migration %s (attempt %d)", migration.kind, step.target, attempt)
            ctx = MigrationContext(self.mapper, ctx_log, self.lock, self.cancel, attempt)
            try:
                migration.run(ctx)
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}"
                self._finish(record, st.FAILED, error)
                log.error(
                    "migration %s failed (attempt %d of %d): %s",
                    step.target, attempt, attempts, error, exc_info=True,
                )  # fmt: skip
                if isinstance(exc, MigrationCancelled):
                    self.cancelled = True
                if isinstance(exc, LockError | MigrationCancelled):
                    break
                continue
            self._finish(record, st.COMPLETED, None)
            self.renew()
            outcome = StepOutcome(step, "completed", attempt, time.monotonic() - started)
            self.emit(outcome)
            return outcome
        outcome = StepOutcome(step, "failed", ran, time.monotonic() - started, error)
        self.emit(outcome)
        return outcome

    def _start(self, record: st.MigrationRecord, migration: Migration) -> None:
        record.kind, record.version = migration.kind, migration.version
        record.description, record.skipped = migration.title, False
        record.status, record.attempts = st.STARTED, record.attempts + 1
        record.started_utc, record.completed_utc = self.mapper.clock(), None
        self.store.save(record)

    def _finish(self, record: st.MigrationRecord, status: str, error: str | None) -> None:
        record.status, record.error = status, error
        if status == st.COMPLETED:
            record.completed_utc = self.mapper.clock()
        self.store.save(record)

    def reindex_outdated(self, states: Sequence[IndexState]) -> tuple[MigrationResult, str | None]:
        """Reindex the models ``configure_indexes`` reported ``outdated`` (one ``reindex``
        step each), through :func:`esmapper.indexes.reindex.reindex_outdated`, which checks
        each again first (another process may have reindexed it meanwhile)."""
        outdated = {s.alias for s in states if s.action == "outdated"}
        models = [m for m in self.mapper.models if self.mapper.spec(m).alias in outdated]
        if not models:
            return MigrationResult.SUCCESS, None
        running: dict[type, tuple[PlannedStep, float]] = {}
        failures: list[tuple[PlannedStep, str]] = []
        guard = threading.Lock()  # the callbacks run in the reindex threads (max_parallel)

        def starting(model: type, spec: IndexSpec, current: str | None) -> None:
            reason = f"the alias points at {current}"
            expected = spec.index_pattern if spec.is_time_series else spec.physical_name()
            step = PlannedStep(REINDEX, spec.alias, "index", None, expected, reason)
            with guard:
                self.report.steps.append(step)
                running[model] = (step, time.monotonic())

        def done(model: type, result: ReindexResult) -> None:
            with guard:
                step, started = running.pop(model)
                seconds = time.monotonic() - started
                self.emit(StepOutcome(step, "reindexed", 1, seconds, note=_reindex_note(result)))

        def failed(model: type, exc: BaseException) -> None:
            with guard:
                step, started = running.pop(model)
                if isinstance(exc, _LockLost):
                    return
                error = f"{type(exc).__name__}: {exc}"
                log.error("reindex of %s failed: %s", step.target, error, exc_info=exc)
                self.emit(StepOutcome(step, "failed", 1, time.monotonic() - started, error))
                failures.append((step, error))

        try:
            reindex_outdated(
                self.mapper,
                models,
                progress=self._progress,
                lock_ttl=self.lock.ttl,
                batch_size=self.throttle.batch_size,
                requests_per_second=self.throttle.requests_per_second,
                stall_timeout=self.throttle.stall_timeout,
                starting=starting,
                done=done,
                failed=failed,
                max_parallel=self.max_parallel,
            )
        except _LockLost:
            raise
        except Exception as exc:
            if not failures:  # reading the aliases failed
                error = f"{type(exc).__name__}: {exc}"
                log.error("reindex of outdated indexes failed: %s", error, exc_info=True)
                return MigrationResult.FAILED, f"reindex of outdated indexes failed: {error}"
            step, error = failures[0]
            return MigrationResult.FAILED, f"reindex of {step.target} failed: {error}"
        return MigrationResult.SUCCESS, None

    def delete_leftovers(self) -> tuple[MigrationResult, str | None]:
        """Delete the old indexes a killed reindex left behind (one step per index)."""
        for model in self.mapper.models:
            alias = self.mapper.spec(model).alias
            started = time.monotonic()
            try:
                # a killed run's reindex:<alias> lock expires within the ttl: wait for it
                deleted = delete_leftovers(
                    self.mapper, model, lock_wait=self.lock.ttl, lock_ttl=self.lock.ttl
                )
            except LockError as exc:  # a reindex of this model runs now: it is its business
                message = f"old indexes of {alias} not checked: {exc}"
                log.warning(message)
                self.report.warnings.append(message)
                continue
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}"
                log.error("deleting old indexes of %s failed: %s", alias, error, exc_info=True)
                step = PlannedStep(DELETE_INDEX, alias, "index", reason="leftover old indexes")
                self.report.steps.append(step)
                self.emit(StepOutcome(step, "failed", 1, time.monotonic() - started, error))
                return MigrationResult.FAILED, f"deleting old indexes of {alias} failed: {error}"
            for index in deleted:
                reason = f"left behind by a reindex; {alias} points at its current index"
                step = PlannedStep(DELETE_INDEX, index, "index", reason=reason)
                self.report.steps.append(step)
                self.emit(StepOutcome(step, "deleted", 1, time.monotonic() - started))
        return MigrationResult.SUCCESS, None

    def settle_idx_rebuilds(self) -> tuple[MigrationResult, str | None]:
        """Rebuild ``idx`` of the custom-field models a killed reindex owes it
        (:func:`~esmapper.indexes._idx_owed.settle_idx_rebuild`; one ``rebuild_idx`` step
        each); a failure fails the run (the debt stays recorded for the next one)."""
        for model in self.mapper.models:
            alias = self.mapper.spec(model).alias
            started = time.monotonic()
            step = PlannedStep(REBUILD_IDX, alias, "index", reason="owed by a killed reindex")
            try:
                updated = settle_idx_rebuild(self.mapper.services, model)
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}"
                log.error("rebuilding idx of %s failed: %s", alias, error, exc_info=True)
                self.report.steps.append(step)
                self.emit(StepOutcome(step, "failed", 1, time.monotonic() - started, error))
                return MigrationResult.FAILED, f"rebuilding idx of {alias} failed: {error}"
            if updated is None:
                continue
            self.report.steps.append(step)
            note = f"{updated} document(s) updated"
            self.emit(StepOutcome(step, "rebuilt", 1, time.monotonic() - started, note=note))
        return MigrationResult.SUCCESS, None

    def _progress(self, progress: ReindexProgress) -> None:
        log.info("reindex progress: %s/%s", progress.done, progress.total)
        try:
            self.lock.check()  # renewed by its heartbeat; raises when that found it lost
        except LockError as exc:
            raise _LockLost(str(exc)) from exc
        if self.progress is not None:
            self.progress(progress)


def _reindex_note(result: ReindexResult) -> str:
    """``writes blocked 0.12s`` (and a leftover block removed) from a ReindexResult."""
    note = f"writes blocked {result.blocked_seconds:.2f}s"
    cleared = result.cleared_block_seconds
    if cleared is not None:
        note += f"; removed a killed reindex's write block, on for {cleared:.0f}s"
    return note


def run_migrations(
    mapper: Mapper,
    *,
    dry_run: bool = False,
    lock_wait: timedelta = timedelta(0),
    lock_ttl: timedelta = LOCK_TTL,
    retry_failed: bool = False,
    reindex: bool = True,
    cancel: threading.Event | None = None,
    sleep: Callable[[float], object] = time.sleep,
    on_outcome: Callable[[StepOutcome], object] | None = None,
    progress: Callable[[Any], object] | None = None,
    batch_size: int | None = None,
    requests_per_second: float | None = None,
    stall_timeout: timedelta | None = None,
    max_parallel: int = 1,
) -> MigrationRun:
    """Configure indexes, run pending migrations, reindex outdated indexes; the full report.

    ``dry_run`` only computes :func:`~esmapper.migrations.plan` (nothing is written, no lock
    is taken; the result is ``FAILED`` when a step is blocked; a run in progress elsewhere,
    a live ``migrations`` lock, is a warning and its migration a ``running`` step).
    ``lock_wait`` is how long to wait for the ``migrations`` lock, ``lock_ttl`` its expiry
    and that of the ``reindex:<alias>`` locks the run takes (90 s by default; renewed by a
    heartbeat every ttl/3 while the process lives, see the module docstring; a killed run's
    locks block the next runs until they expire, not at all for a run on the same machine;
    the cleanup of a killed reindex's old index waits that long for its lock).
    ``retry_failed`` runs failed versioned migrations again. ``reindex=False`` leaves
    outdated indexes (and old indexes left behind) alone. ``cancel`` stops the run between
    steps (``CANCELLED``). ``on_outcome`` is called after every step, ``progress`` with
    every :class:`~esmapper.indexes.ReindexProgress` of the reindexes. ``batch_size``,
    ``requests_per_second`` and ``stall_timeout`` throttle them (see
    :func:`esmapper.indexes.reindex.reindex`); ``max_parallel`` outdated models are
    reindexed at once (1, the default: one after the other; see
    :func:`esmapper.indexes.reindex.reindex_outdated`).

    Raises :class:`~esmapper.errors.MigrationError` for invalid migrations and ``ValueError``
    for a bad throttle value, a ``max_parallel`` below 1, a ``lock_ttl`` not above zero or
    a negative ``lock_wait`` (before anything is sent),
    :class:`~esmapper.errors.IndexConfigurationError` from ``configure_indexes`` and the
    client's transport errors; a failing migration is reported, not raised.
    """
    check_lock_options(lock_wait, lock_ttl)
    migrations = load_migrations(mapper.migrations)
    throttle = Throttle(batch_size, requests_per_second, stall_timeout)
    check_parallel(max_parallel)
    if dry_run:
        steps = plan(mapper, retry_failed=retry_failed)
        running = in_progress(mapper)
        warnings = [] if running is None else [f"a migrate run is in progress: {running}"]
        blocked = next((s for s in steps if s.action == BLOCKED), None)
        if blocked is None:
            return MigrationRun(
                MigrationResult.SUCCESS, steps=steps, warnings=warnings, dry_run=True
            )
        error = f"migration {blocked.target} {blocked.reason}"
        return MigrationRun(
            MigrationResult.FAILED, steps=steps, error=error, warnings=warnings, dry_run=True
        )
    provider = LockProvider(mapper.client, index_prefix=mapper.index_prefix, clock=mapper.clock)
    try:
        lock = provider.acquire(LOCK_NAME, lock_ttl, wait=lock_wait)
    except LockError as exc:
        log.warning("migrations not run: %s", exc)
        return MigrationRun(MigrationResult.UNABLE_TO_ACQUIRE_LOCK, error=str(exc))
    with lock:
        runner = _Runner(
            mapper=mapper,
            lock=lock,
            migrations=migrations,
            cancel=cancel or threading.Event(),
            sleep=sleep,
            on_outcome=on_outcome,
            progress=progress,
            throttle=throttle,
            max_parallel=max_parallel,
        )
        report = runner.run(retry_failed=retry_failed, reindex=reindex)
    log.info("migrations: %s", report.result.value)
    return report


def migrate(mapper: Mapper, **kwargs: Any) -> MigrationResult:
    """Run :func:`run_migrations` and return its :class:`MigrationResult` (same arguments,
    same requests, same exceptions)."""
    return run_migrations(mapper, **kwargs).result
