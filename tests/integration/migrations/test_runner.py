"""Running migrations against the test server: kinds, failures, resumes, fresh installs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import esmapper as em
from esmapper.migrations import Migration, MigrationContext, MigrationResult, migrate

from .conftest import Employee, MakeMapper, records

Calls = list[tuple[str, int]]


def migration(
    calls: Calls,
    version: int | None,
    kind: str = "versioned",
    *,
    fn: Callable[[MigrationContext], Any] | None = None,
    name: str | None = None,
    **attrs: Any,
) -> type[Migration]:
    """A Migration class that records ``(name, attempt)`` in ``calls``, then calls ``fn``."""
    label = name or f"{kind}{version}"

    def run(self: Migration, ctx: MigrationContext) -> None:
        calls.append((label, ctx.attempt))
        if fn is not None:
            fn(ctx)

    body = {"version": version, "kind": kind, "run": run, "retry_delay": 0.0, **attrs}
    return type(label.capitalize(), (Migration,), body)


def fail(message: str = "boom") -> Callable[[MigrationContext], None]:
    def raise_(ctx: MigrationContext) -> None:
        raise ValueError(message)

    return raise_


def test_versioned_migrations_run_once_in_version_order(make_mapper: MakeMapper) -> None:
    calls: Calls = []
    mapper = make_mapper(migration(calls, 2), migration(calls, 1))
    mapper.configure_indexes()  # existing indexes: not a fresh install

    assert mapper.migrate() == em.migrations.MigrationResult.SUCCESS
    assert calls == [("versioned1", 1), ("versioned2", 1)]
    assert migrate(mapper) is MigrationResult.SUCCESS
    assert len(calls) == 2

    state = records(mapper)
    assert set(state) == {"1", "2"}
    one = state["1"]
    assert (one.kind, one.version, one.status, one.attempts, one.skipped) == (
        "versioned", 1, "completed", 1, False,
    )  # fmt: skip
    assert one.started_utc is not None and one.completed_utc is not None
    assert one.completed_utc >= one.started_utc


def test_a_migration_changes_documents(make_mapper: MakeMapper) -> None:
    def add_department(ctx: MigrationContext) -> None:
        repo = ctx.mapper.repository(Employee)
        ctx.log.info("backfilling departments")
        repo.patch_all("NOT _exists_:department", em.PartialPatch({"department": "General"}))

    mapper = make_mapper(migration([], 1, fn=add_department))
    mapper.configure_indexes()
    repo = mapper.repository(Employee)
    repo.add([Employee(name="a"), Employee(name="b", department="Sales")], consistency="immediate")

    assert mapper.migrate() == MigrationResult.SUCCESS
    assert sorted(str(e.department) for e in repo.find(consistency="immediate").documents) == [
        "General",
        "Sales",
    ]


def test_a_failing_versioned_migration_stops_later_ones_and_stays_failed(
    make_mapper: MakeMapper,
) -> None:
    calls: Calls = []
    broken = {"yes": True}

    def maybe_fail(ctx: MigrationContext) -> None:
        if broken["yes"]:
            raise ValueError("boom")

    later_repeatable = migration(calls, None, "repeatable", name="cleanup")
    mapper = make_mapper(
        migration(calls, 1), migration(calls, 2, fn=maybe_fail), migration(calls, 3),
        later_repeatable,
    )  # fmt: skip
    mapper.configure_indexes()

    assert mapper.migrate() == MigrationResult.FAILED
    assert calls == [("versioned1", 1), ("versioned2", 1)]  # one attempt, nothing after it
    failed = records(mapper)["2"]
    assert (failed.status, failed.error, failed.attempts) == ("failed", "ValueError: boom", 1)
    assert "3" not in records(mapper)

    broken["yes"] = False  # fixed, but a versioned failure is permanent until retried
    report = em.migrations.run_migrations(mapper)
    assert report.result == MigrationResult.FAILED
    assert "retry_failed=True" in (report.error or "")
    assert len(calls) == 2

    assert mapper.migrate(retry_failed=True) == MigrationResult.SUCCESS
    assert calls[2:] == [("versioned2", 1), ("versioned3", 1), ("cleanup", 1)]
    assert records(mapper)["2"].attempts == 2


def test_resumable_crash_and_resume(make_mapper: MakeMapper) -> None:
    calls: Calls = []
    runs = {"n": 0}

    def crash_first_time(ctx: MigrationContext) -> None:
        runs["n"] += 1
        if runs["n"] == 1:
            raise RuntimeError("crashed half-way")

    mapper = make_mapper(
        migration(calls, 1, "resumable", fn=crash_first_time, max_attempts=1),
        migration(calls, 2),
    )
    mapper.configure_indexes()

    assert mapper.migrate() == MigrationResult.FAILED
    assert calls == [("resumable1", 1)]
    state = records(mapper)["1"]
    assert (state.status, state.attempts, state.kind) == ("failed", 1, "resumable")

    assert mapper.migrate() == MigrationResult.SUCCESS  # the next run resumes it
    assert calls == [("resumable1", 1), ("resumable1", 1), ("versioned2", 1)]
    state = records(mapper)["1"]
    assert (state.status, state.attempts, state.error) == ("completed", 2, None)


def test_resumable_retries_within_a_run_with_backoff(make_mapper: MakeMapper) -> None:
    calls: Calls = []

    def fail_twice(ctx: MigrationContext) -> None:
        if ctx.attempt < 3:
            raise ValueError(f"attempt {ctx.attempt}")

    pauses: list[float] = []
    mapper = make_mapper(
        migration(calls, 1, "resumable", fn=fail_twice, max_attempts=3, retry_delay=0.5)
    )
    mapper.configure_indexes()

    assert mapper.migrate(sleep=pauses.append) == MigrationResult.SUCCESS
    assert calls == [("resumable1", 1), ("resumable1", 2), ("resumable1", 3)]
    assert pauses == [0.5, 1.0]
    assert records(mapper)["1"].attempts == 3


def test_repeatable_migrations_rerun_on_version_change_failure_or_always(
    make_mapper: MakeMapper,
) -> None:
    calls: Calls = []
    seed = migration(calls, None, "repeatable", name="seed")
    tick = migration(calls, None, "repeatable", name="tick", always=True)
    v1 = migration(calls, 1)
    mapper = make_mapper(seed, tick, v1)
    mapper.configure_indexes()

    assert mapper.migrate() == MigrationResult.SUCCESS
    assert [c[0] for c in calls] == ["versioned1", "seed", "tick"]  # repeatables after
    assert mapper.migrate() == MigrationResult.SUCCESS
    assert [c[0] for c in calls][3:] == ["tick"]

    seed.version = 2  # bumping the version runs it again
    assert mapper.migrate() == MigrationResult.SUCCESS
    assert [c[0] for c in calls][4:] == ["seed", "tick"]
    assert records(mapper)[seed().migration_id].version == 2


def test_a_failing_repeatable_does_not_stop_the_others_and_is_retried(
    make_mapper: MakeMapper,
) -> None:
    calls: Calls = []
    broken = {"yes": True}

    def maybe_fail(ctx: MigrationContext) -> None:
        if broken["yes"]:
            raise ValueError("flaky")

    bad = migration(calls, None, "repeatable", name="bad", fn=maybe_fail, max_attempts=2)
    good = migration(calls, None, "repeatable", name="good")
    mapper = make_mapper(bad, good)

    report = em.migrations.run_migrations(mapper)
    assert report.result == MigrationResult.FAILED
    assert "ValueError: flaky" in (report.error or "")
    assert calls == [("bad", 1), ("bad", 2), ("good", 1)]
    assert [o.status for o in report.outcomes if o.step.kind == "repeatable"] == [
        "failed",
        "completed",
    ]

    broken["yes"] = False
    assert mapper.migrate() == MigrationResult.SUCCESS
    assert calls[3:] == [("bad", 1)]


def test_fresh_install_marks_versioned_migrations_completed(make_mapper: MakeMapper) -> None:
    calls: Calls = []
    v1, v2 = migration(calls, 1), migration(calls, 2, "resumable")
    seed = migration(calls, None, "repeatable", name="seed")
    mapper = make_mapper(v1, v2, seed)

    report = em.migrations.run_migrations(mapper)
    assert report.result == MigrationResult.SUCCESS
    assert calls == [("seed", 1)]  # nothing to migrate in brand-new indexes
    assert [(o.status, o.step.target) for o in report.outcomes][:3] == [
        ("created", mapper.spec(Employee).alias),
        ("marked", "1"),
        ("marked", "2"),
    ]
    state = records(mapper)
    assert state["1"].completed and state["1"].skipped and state["1"].attempts == 0
    assert state["2"].completed and state["2"].skipped

    v3 = migration(calls, 3)  # a migration added later runs
    later = make_mapper(v1, v2, v3, seed)
    assert later.migrate() == MigrationResult.SUCCESS
    assert calls == [("seed", 1), ("versioned3", 1)]


def test_existing_data_without_state_runs_every_migration(make_mapper: MakeMapper) -> None:
    calls: Calls = []
    mapper = make_mapper(migration(calls, 1))
    mapper.configure_indexes()  # the indexes exist, but migrations never ran
    assert mapper.migrate() == MigrationResult.SUCCESS
    assert calls == [("versioned1", 1)]


def test_without_models_migrations_run(make_mapper: MakeMapper) -> None:
    calls: Calls = []
    mapper = make_mapper(migration(calls, 1), models=())
    assert mapper.migrate() == MigrationResult.SUCCESS
    assert calls == [("versioned1", 1)]


def test_duplicate_versions_raise_before_anything_is_sent(
    make_mapper: MakeMapper, es_client: Any, index_prefix: str
) -> None:
    mapper = make_mapper(migration([], 1, name="a"), migration([], 1, name="b"))
    with pytest.raises(em.MigrationError, match="duplicate migration version 1"):
        mapper.migrate()
    assert not es_client.indices.exists(index=f"{index_prefix}*")


def test_cancel_stops_between_steps(make_mapper: MakeMapper) -> None:
    import threading

    calls: Calls = []
    cancel = threading.Event()
    mapper = make_mapper(
        migration(calls, 1, fn=lambda ctx: cancel.set()),
        migration(calls, 2),
    )
    mapper.configure_indexes()
    assert mapper.migrate(cancel=cancel) == MigrationResult.CANCELLED
    assert calls == [("versioned1", 1)]
    assert records(mapper)["1"].completed

    def stop(ctx: MigrationContext) -> None:
        ctx.cancel.set()
        ctx.raise_if_cancelled()

    calls2: Calls = []
    other = make_mapper(migration(calls2, 3, "resumable", fn=stop))
    assert other.migrate() == MigrationResult.CANCELLED
    assert calls2 == [("resumable3", 1)]  # not retried
    assert records(other)["3"].status == "failed"
