"""The pure parts of migrations: validation, discovery and the step computation."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest

import esmapper as em
from esmapper.migrations import (
    Migration,
    MigrationCancelled,
    MigrationContext,
    MigrationRecord,
    compute_steps,
    load_migrations,
    migrations_from_module,
)

from . import sample_migrations


def make(kind: str = "versioned", version: int | None = 1, **attrs: object) -> Migration:
    cls = type(f"M_{kind}_{version}", (Migration,), {"kind": kind, "version": version, **attrs})
    migration: Migration = cls()
    return migration


def done(m: Migration, **kw: object) -> MigrationRecord:
    values: dict[str, object] = {"kind": m.kind, "version": m.version, "status": "completed"}
    values.update(kw)
    return MigrationRecord(id=m.migration_id, **values)  # type: ignore[arg-type]


def actions(steps: list[em.migrations.PlannedStep]) -> list[tuple[str, str]]:
    return [(s.action, s.target) for s in steps]


# -- validation and ids ------------------------------------------------------------------


def test_duplicate_versions_raise() -> None:
    with pytest.raises(em.MigrationError, match="duplicate migration version 3"):
        load_migrations([make(version=3), make("resumable", 3)])


def test_repeatable_versions_may_repeat_but_ids_may_not() -> None:
    a, b = make("repeatable", 1), make("repeatable", 1, id="same")
    assert len(load_migrations([a, b])) == 2
    with pytest.raises(em.MigrationError, match="duplicate migration id 'same'"):
        load_migrations([make(id="same", version=1), make(id="same", version=2)])


@pytest.mark.parametrize(
    ("kind", "version", "message"),
    [
        ("versioned", None, "needs an int version"),
        ("resumable", None, "needs an int version"),
        ("sometimes", 1, "has kind 'sometimes'"),
        ("versioned", "2", "expected an int"),
        ("versioned", True, "expected an int"),
    ],
)
def test_invalid_migrations_raise(kind: str, version: object, message: str) -> None:
    with pytest.raises(em.MigrationError, match=message):
        load_migrations([make(kind, version)])  # type: ignore[arg-type]


def test_load_accepts_classes_and_instances_and_rejects_others() -> None:
    cls = type(make(version=5))
    loaded = load_migrations([cls, make(version=6)])
    assert [m.version for m in loaded] == [5, 6]
    with pytest.raises(em.MigrationError, match="not an esmapper Migration"):
        load_migrations([object])

    class NeedsArgs(Migration):
        version = 9

        def __init__(self, repo: object) -> None:
            self.repo = repo

    with pytest.raises(em.MigrationError, match="pass an instance"):
        load_migrations([NeedsArgs])


def test_ids_and_titles() -> None:
    assert make(version=7).migration_id == "7"
    repeatable = make("repeatable", None)
    assert repeatable.migration_id == f"{__name__}.M_repeatable_None"
    assert make(version=1, id="custom").migration_id == "custom"
    assert make(version=1, description="Adds x").title == "Adds x"
    assert sample_migrations.First().title == "Adds the first thing."
    assert sample_migrations.Second().title == "Second"


def test_migrations_from_module_sorted_without_private_bases() -> None:
    found = migrations_from_module(sample_migrations)
    assert found == [sample_migrations.First, sample_migrations.Second, sample_migrations.Cleanup]
    assert migrations_from_module(sample_migrations.__name__) == found


def test_migrations_from_a_package_walks_submodules() -> None:
    found = migrations_from_module("tests.unit.migrations")
    assert sample_migrations.First in found
    assert all(cls.__module__.startswith("tests.unit.migrations") for cls in found)


def test_base_run_is_abstract_and_context_cancellation() -> None:
    class Lock:
        def renew(self, ttl: timedelta | None = None) -> None:
            return None

    ctx = MigrationContext(object(), logging.getLogger("t"), Lock())  # type: ignore[arg-type]
    with pytest.raises(NotImplementedError):
        Migration().run(ctx)
    ctx.raise_if_cancelled()
    ctx.cancel.set()
    assert ctx.cancelled
    with pytest.raises(MigrationCancelled):
        ctx.raise_if_cancelled()


# -- compute_steps ----------------------------------------------------------------------


def test_versioned_run_in_version_order_then_repeatables() -> None:
    r = make("repeatable", None)
    v2, v1, v3 = make(version=2), make(version=1), make("resumable", 3)
    steps = compute_steps([r, v2, v1, v3], {})
    assert actions(steps) == [("run", "1"), ("run", "2"), ("run", "3"), ("run", r.migration_id)]
    assert steps[0].migration is v1
    assert "versioned 1" in str(steps[0])


def test_completed_migrations_are_skipped() -> None:
    v1, v2 = make(version=1), make(version=2)
    assert actions(compute_steps([v1, v2], {"1": done(v1)})) == [("run", "2")]


def test_out_of_order_versions_still_run() -> None:
    v1, v5 = make(version=1), make(version=5)
    (step,) = compute_steps([v1, v5], {"5": done(v5)})
    assert (step.action, step.target) == ("run", "1")
    assert "out of order" in step.reason


def test_failed_versioned_blocks_itself_and_everything_after() -> None:
    v1, v2, r = make(version=1), make(version=2), make("repeatable", None)
    records = {"1": done(v1, status="failed", error="ValueError: boom")}
    steps = compute_steps([v1, v2, r], records)
    assert [s.action for s in steps] == ["blocked", "blocked", "blocked"]
    assert "ValueError: boom" in steps[0].reason
    assert "retry_failed=True" in steps[0].reason
    assert "waits for migration 1" in steps[1].reason
    retried = compute_steps([v1, v2, r], records, retry_failed=True)
    assert [s.action for s in retried] == ["run", "run", "run"]
    assert retried[0].reason.startswith("retrying")


def test_interrupted_versioned_is_blocked_but_resumable_resumes() -> None:
    v1, v2 = make(version=1), make("resumable", 2)
    records = {"1": done(v1, status="started"), "2": done(v2, status="failed", attempts=3)}
    assert compute_steps([v1], records)[0].action == "blocked"
    assert "interrupted" in compute_steps([v1], records)[0].reason
    (step,) = compute_steps([v2], records)
    assert step.action == "run"
    assert step.reason == "resuming: failed after 3 attempt(s)"


def test_fresh_install_marks_versioned_and_resumable_but_runs_repeatables() -> None:
    v1, v2, r = make(version=1), make("resumable", 2), make("repeatable", None)
    steps = compute_steps([v1, v2, r], {}, fresh=True)
    assert [s.action for s in steps] == ["mark_completed", "mark_completed", "run"]


@pytest.mark.parametrize(
    ("record", "migration", "expected"),
    [
        (None, {}, "never ran"),
        ({"status": "failed"}, {}, "last run failed"),
        ({"version": 1}, {"version": 2}, "version changed 1 -> 2"),
        ({"version": 2}, {"version": None}, "version changed 2 -> None"),
        ({}, {"always": True}, "runs on every migrate (always = True)"),
        ({}, {}, None),
    ],
)
def test_repeatable_rules(
    record: dict[str, object] | None, migration: dict[str, object], expected: str | None
) -> None:
    kw: dict[str, object] = {"version": None, **migration}
    m = make("repeatable", **kw)  # type: ignore[arg-type]
    values: dict[str, object] = {"version": None, **(record or {})}
    records = {} if record is None else {m.migration_id: done(m, **values)}
    steps = compute_steps([m], records)
    assert [s.reason for s in steps] == ([] if expected is None else [expected])


def test_record_round_trip() -> None:
    from datetime import datetime, timezone

    now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    record = MigrationRecord(id="1", kind="versioned", version=1, status="failed", attempts=2,
                             started_utc=now, error="boom")  # fmt: skip
    hit = {"_id": "1", "_source": record.to_source()}
    assert MigrationRecord.from_hit(hit) == record
    assert hit["_source"]["started_utc"] == "2026-01-02T03:04:05Z"  # type: ignore[index]
