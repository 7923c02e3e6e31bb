"""The pure parts of crash recovery: the fresh-install decision, a run in progress in a plan,
the leftover classification and the reindex's keep decision."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

import esmapper as em
from esmapper.indexes._reindex_run import _keep_reason
from esmapper.indexes.leftovers import Leftover
from esmapper.locks import LockHolder
from esmapper.migrations import MigrationRecord, compute_steps, load_migrations
from esmapper.migrations.install import InstallRecord, decide, fresh_marks

from .test_planning import actions, done, make

T0 = datetime(2030, 1, 1, tzinfo=timezone.utc)


# -- the fresh-install decision ----------------------------------------------------------


def test_nothing_and_no_records_is_fresh_with_the_known_versioned_ids_as_marks() -> None:
    v1, v2, r = make(version=1), make("resumable", 2), make("repeatable", None)
    decided = decide([v1, v2, r], {}, nothing_existed=True, now=T0)
    assert (decided.fresh, decided.marks, decided.status) == (True, ("1", "2"), "started")
    assert fresh_marks(None, decided) == {"1", "2"}


@pytest.mark.parametrize(
    ("nothing_existed", "records"),
    [
        (False, {}),  # model indexes exist: an existing deployment
        (True, {"1": "completed"}),  # records of an older esmapper, indexes gone
        (False, {"1": "completed"}),  # an upgrade from an esmapper without install record
    ],
)
def test_an_existing_deployment_is_never_fresh(
    nothing_existed: bool, records: dict[str, str]
) -> None:
    v1 = make(version=1)
    stored = {k: done(v1, status=s) for k, s in records.items()}
    decided = decide([v1], stored, nothing_existed=nothing_existed, now=T0)
    assert (decided.fresh, decided.marks) == (False, ())
    assert fresh_marks(None, decided) == set()


def test_the_stored_decision_wins_over_what_exists_now() -> None:
    stored = InstallRecord(fresh=True, marks=("1",), started_utc=T0)
    not_fresh_now = decide([make(version=1)], {}, nothing_existed=False, now=T0)
    assert fresh_marks(stored, not_fresh_now) == {"1"}
    assert fresh_marks(InstallRecord(fresh=False), None) == set()
    round_trip = InstallRecord.from_source(stored.to_source())
    assert round_trip == stored


def test_only_the_recorded_marks_are_marked_a_later_migration_runs() -> None:
    v1, v2, v3 = make(version=1), make(version=2), make(version=3)
    records = {"1": done(v1, skipped=True)}
    steps = compute_steps([v1, v2, v3], records, fresh={"1", "2"})
    assert actions(steps) == [("mark_completed", "2"), ("run", "3")]


def test_the_install_id_is_reserved() -> None:
    with pytest.raises(em.MigrationError, match="reserved id 'esmapper:install'"):
        load_migrations([make(version=1, id="esmapper:install")])


# -- a run in progress -------------------------------------------------------------------


def holder(acquired: datetime | None = T0, owner: str = "host:42:abcd") -> LockHolder:
    return LockHolder("migrations", owner, acquired, T0 + timedelta(minutes=30))


def started(m: em.Migration, at: datetime, attempts: int = 1) -> MigrationRecord:
    return done(m, status="started", started_utc=at, attempts=attempts)


def test_a_started_migration_under_the_live_lock_is_running_not_interrupted() -> None:
    v1, v2, r = make(version=1), make(version=2), make("repeatable", None)
    records = {"1": started(v1, T0 + timedelta(seconds=5))}
    steps = compute_steps([v1, v2, r], records, running=holder())
    assert [s.action for s in steps] == ["running", "run", "run"]  # nothing waits for it
    reason = steps[0].reason
    assert reason.startswith("running now (attempt 1, started 2030-01-01T00:00:05")
    assert "host:42:abcd since 2030-01-01T00:00:00" in reason
    assert "interrupted" not in reason and "--retry-failed" not in reason
    resumable = make("resumable", 3)
    (step,) = compute_steps([resumable], {"3": started(resumable, T0, 2)}, running=holder())
    assert (step.action, "attempt 2" in step.reason) == ("running", True)


@pytest.mark.parametrize(
    "running",
    [None, holder(acquired=T0 + timedelta(seconds=10))],
    ids=["no live lock", "lock taken after the record was started"],
)
def test_a_started_migration_without_its_run_was_interrupted(running: LockHolder | None) -> None:
    v1, v2 = make(version=1), make(version=2)
    records = {"1": started(v1, T0 + timedelta(seconds=5))}
    steps = compute_steps([v1, v2], records, running=running)
    assert [s.action for s in steps] == ["blocked", "blocked"]
    assert "was interrupted" in steps[0].reason and "--retry-failed" in steps[0].reason


def test_lock_holder_liveness_and_text() -> None:
    h = holder()
    assert h.live(T0) and not h.live(T0 + timedelta(minutes=30))
    assert str(h) == "host:42:abcd since 2030-01-01T00:00:00Z, expires 2030-01-01T00:30:00Z"


# -- leftovers and the keep decision -----------------------------------------------------


def leftover(**kw: object) -> Leftover:
    values: dict[str, object] = {
        "index": "e-v1", "version": 1, "target": "e-v2", "current": True, "docs": 3,
        "write_blocked": True, "replaced_by": "e-v2", "keep": None,
    }  # fmt: skip
    values.update(kw)
    return Leftover(**values)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("changes", "deletable", "words"),
    [
        ({}, True, "stopped before deleting it; migrate deletes it"),
        ({"keep": "delete_old=False"}, False, "kept by the reindex into e-v2: delete_old=False"),
        ({"replaced_by": None}, False, "not marked by a reindex; delete it by hand"),
        ({"write_blocked": False}, False, "but not write-blocked; delete it by hand"),
        ({"current": False}, False, "once the alias is current"),
    ],
)
def test_only_a_marked_blocked_leftover_behind_a_current_alias_is_deletable(
    changes: dict[str, object], deletable: bool, words: str
) -> None:
    item = leftover(**changes)
    assert item.deletable is deletable
    assert words in item.reason


def test_the_keep_decision_is_the_delete_old_rule() -> None:
    assert _keep_reason(True, 10, 10, "e-v2") is None
    assert _keep_reason(True, 10, 11, "e-v2") is None
    assert _keep_reason(False, 10, 10, "e-v2") == "delete_old=False"
    assert _keep_reason(True, 10, 9, "e-v2") == "e-v2 has 9 documents, fewer than its 10"
