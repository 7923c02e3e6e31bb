"""The migrations lock (overlap, renewal, loss), dry runs and plans, outdated indexes."""

from __future__ import annotations

import importlib
import threading
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from elasticsearch import Elasticsearch, NotFoundError

import esmapper as em
from esmapper.indexes import ReindexProgress, ReindexResult
from esmapper.locks import LockProvider
from esmapper.migrations import Migration, MigrationContext, MigrationResult, plan
from esmapper.model.codec import parse_datetime

from .conftest import MakeMapper, records
from .test_runner import Calls, migration


def test_two_concurrent_runs_never_overlap(make_mapper: MakeMapper) -> None:
    inside, release = threading.Event(), threading.Event()

    def block(ctx: MigrationContext) -> None:
        inside.set()
        assert release.wait(10)

    calls: Calls = []
    first = make_mapper(migration(calls, 1, fn=block))
    first.configure_indexes()
    second = make_mapper(migration(calls, 1, fn=block))
    results: list[MigrationResult] = []
    thread = threading.Thread(target=lambda: results.append(first.migrate()))
    thread.start()
    try:
        assert inside.wait(10)
        report = em.migrations.run_migrations(second)
        assert report.result == MigrationResult.UNABLE_TO_ACQUIRE_LOCK
        assert "held by another process" in (report.error or "")
    finally:
        release.set()
        thread.join(10)
    assert results == [MigrationResult.SUCCESS]
    assert calls == [("versioned1", 1)]
    assert second.migrate(lock_wait=timedelta(seconds=5)) == MigrationResult.SUCCESS


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2030, 1, 1, tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        return self.now


def lock_doc(es_client: Elasticsearch, prefix: str) -> dict[str, Any] | None:
    try:
        return dict(es_client.get(index=f"{prefix}esmapper-locks", id="migrations")["_source"])
    except NotFoundError:
        return None


def test_a_long_migration_renews_the_lock(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    clock = Clock()
    seen: list[datetime] = []

    def long_job(ctx: MigrationContext) -> None:
        for _ in range(2):
            clock.now += timedelta(minutes=20)  # one batch later...
            ctx.lock.renew()
            doc = lock_doc(es_client, index_prefix)
            assert doc is not None
            seen.append(parse_datetime(doc["expires_at"]))

    mapper = make_mapper(migration([], 1, fn=long_job), clock=clock)
    mapper.configure_indexes()
    assert mapper.migrate() == MigrationResult.SUCCESS
    start = datetime(2030, 1, 1, tzinfo=timezone.utc)
    ttl = timedelta(seconds=90)  # the default
    assert seen == [start + timedelta(minutes=20) + ttl, start + timedelta(minutes=40) + ttl]
    assert lock_doc(es_client, index_prefix) is None  # released at the end


def test_renewals_keep_when_the_lock_was_acquired(
    es_client: Elasticsearch, index_prefix: str
) -> None:
    clock = Clock()
    locks = LockProvider(es_client, index_prefix=index_prefix, clock=clock)
    assert locks.holder("migrations") is None
    with locks.acquire("migrations", timedelta(minutes=1)) as lock:
        acquired = clock.now
        clock.now += timedelta(minutes=10)
        lock.renew()
        holder = locks.holder("migrations")
        assert holder is not None and holder.owner == lock.owner
        assert (holder.acquired_at, holder.expires_at) == (acquired, clock.now + lock.ttl)
        assert holder.live(clock.now) and not holder.live(clock.now + lock.ttl)
    assert locks.holder("migrations") is None


def test_a_lost_lock_fails_the_run(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    calls: Calls = []

    def lose_it(ctx: MigrationContext) -> None:
        es_client.delete(index=f"{index_prefix}esmapper-locks", id="migrations", refresh=True)
        ctx.lock.renew()

    mapper = make_mapper(migration(calls, 1, fn=lose_it), migration(calls, 2))
    mapper.configure_indexes()
    report = em.migrations.run_migrations(mapper)
    assert report.result == MigrationResult.FAILED
    assert "LockError" in (report.error or "")
    assert calls == [("versioned1", 1)]
    assert records(mapper)["1"].status == "failed"


def test_plan_and_dry_run_change_nothing(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    calls: Calls = []
    ms = [migration(calls, 1), migration(calls, None, "repeatable", name="seed")]
    mapper = make_mapper(*ms)

    steps = plan(mapper)
    alias = f"{index_prefix}employees"
    assert [(s.action, s.target) for s in steps] == [
        ("create_index", alias),
        ("mark_completed", "1"),
        ("run", ms[1]().migration_id),
    ]
    report = em.migrations.run_migrations(mapper, dry_run=True)
    assert report.result == MigrationResult.SUCCESS and report.dry_run
    assert report.steps == steps
    assert mapper.migrate(dry_run=True) == MigrationResult.SUCCESS
    assert not es_client.indices.exists(index=f"{index_prefix}*")
    assert calls == []

    mapper.configure_indexes()  # now it is an existing install: migrations would run
    assert [s.action for s in plan(mapper)] == ["run", "run"]
    assert "versioned 1" in str(plan(mapper)[0])


def test_dry_run_reports_a_blocked_migration(make_mapper: MakeMapper) -> None:
    mapper = make_mapper(migration([], 1, fn=lambda ctx: 1 / 0))
    mapper.configure_indexes()
    assert mapper.migrate() == MigrationResult.FAILED
    report = em.migrations.run_migrations(mapper, dry_run=True)
    assert report.result == MigrationResult.FAILED
    assert "ZeroDivisionError" in (report.error or "")
    assert [s.action for s in report.steps] == ["blocked"]


#: The module (``esmapper.indexes.reindex`` is also the name of its function, re-exported).
REINDEX_MODULE = importlib.import_module("esmapper.indexes.reindex")


class EmployeeV2(em.Document):
    class Index:
        name = "employees"
        version = 2

    name: str = em.field(em.Keyword(), default="")


@pytest.fixture
def fake_reindex(monkeypatch: pytest.MonkeyPatch) -> list[tuple[type, Any]]:
    """A stand-in for ``esmapper.indexes.reindex.reindex`` recording its calls (the loop
    over the outdated models, which decides what to reindex, is the real one)."""
    called: list[tuple[type, Any]] = []

    def reindex(mapper: em.Mapper, model: type, *, progress: Any, **options: Any) -> ReindexResult:
        spec = mapper.spec(model)
        progress(ReindexProgress(1, 1, "done", spec.alias, 100))
        called.append((model, progress))
        return ReindexResult(
            model.__name__, spec.alias, f"{spec.alias}-v1", spec.physical_name(), "reindexed"
        )

    monkeypatch.setattr(REINDEX_MODULE, "reindex", reindex)
    return called


def test_outdated_indexes_are_reindexed_after_the_migrations(
    make_mapper: MakeMapper, fake_reindex: list[tuple[type, Any]]
) -> None:
    make_mapper().configure_indexes()  # employees-v1
    calls: Calls = []
    mapper = make_mapper(migration(calls, 1), models=(EmployeeV2,))
    assert [s.action for s in plan(mapper)] == ["create_index", "run", "reindex"]

    report = em.migrations.run_migrations(mapper)
    assert report.result == MigrationResult.SUCCESS
    assert calls == [("versioned1", 1)]  # not a fresh install: the old index has data
    assert [m for m, _ in fake_reindex] == [EmployeeV2]
    assert [o.status for o in report.outcomes] == ["completed", "reindexed"]
    step = report.outcomes[1].step
    assert (step.action, step.target, step.reason) == (
        "reindex",
        mapper.spec(EmployeeV2).alias,
        f"the alias points at {mapper.spec(EmployeeV2).alias}-v1",
    )
    assert report.outcomes[1].note == "writes blocked 0.00s"
    assert em.migrations.run_migrations(mapper, reindex=False).outcomes == []


def test_a_failing_reindex_fails_the_run(
    make_mapper: MakeMapper, monkeypatch: pytest.MonkeyPatch
) -> None:
    def reindex(mapper: em.Mapper, model: type, *, progress: Any, **options: Any) -> None:
        raise em.IndexConfigurationError("count check failed")

    monkeypatch.setattr(REINDEX_MODULE, "reindex", reindex)
    make_mapper().configure_indexes()
    mapper = make_mapper(models=(EmployeeV2,))
    report = em.migrations.run_migrations(mapper)
    assert report.result == MigrationResult.FAILED
    alias = mapper.spec(EmployeeV2).alias
    assert report.error == f"reindex of {alias} failed: IndexConfigurationError: count check failed"
    assert [(o.step.action, o.status) for o in report.outcomes] == [("reindex", "failed")]


def test_context_is_handed_the_mapper_logger_and_lock(make_mapper: MakeMapper) -> None:
    seen: list[MigrationContext] = []

    class Inspect(Migration):
        """Looks at its context."""

        version = 1

        def run(self, ctx: MigrationContext) -> None:
            seen.append(ctx)

    mapper = make_mapper(Inspect)
    mapper.configure_indexes()
    assert mapper.migrate() == MigrationResult.SUCCESS
    (ctx,) = seen
    assert ctx.mapper is mapper and ctx.attempt == 1 and not ctx.cancelled
    assert ctx.log.name.endswith("Inspect")
    assert records(mapper)["1"].description == "Looks at its context."


class LogEntry(em.Document, em.HasDates):
    class Index:
        name = "logs"
        kind = "daily"

    message: str = ""


def test_time_series_models_in_plans_and_fresh_installs(make_mapper: MakeMapper) -> None:
    calls: Calls = []
    mapper = make_mapper(migration(calls, 1), models=(LogEntry,))
    steps = plan(mapper)
    assert [(s.action, s.reason) for s in steps] == [
        ("create_index", "template missing"),
        ("mark_completed", "fresh install: nothing to migrate"),
    ]
    assert mapper.migrate() == MigrationResult.SUCCESS
    assert calls == [] and plan(mapper) == []
    view = em.migrations.planning.view_index(mapper.client, mapper.spec(LogEntry))
    assert (view.exists, view.partitions, view.empty) == (True, 0, False)
