"""Crash recovery in-process: an interrupted fresh install, a run in progress seen by plans.
(test_kill9.py kills the real command.)"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from elasticsearch import ApiError, Elasticsearch

import esmapper as em
from esmapper.migrations import (
    MigrationContext,
    MigrationRecord,
    MigrationResult,
    StateStore,
    plan,
    run_migrations,
)
from esmapper.migrations.install import read_install
from esmapper.model.codec import format_datetime
from esmapper.testing.faults import FaultProxy

from .conftest import Employee, MakeMapper, records
from .test_runner import Calls, migration

INSTALL = r"-esmapper-migrations/_doc/esmapper%3Ainstall$"


@pytest.fixture
def proxy(es_url: str) -> Iterator[FaultProxy]:
    with FaultProxy(es_url, lifetime=300) as p:
        yield p


def needs_data(ctx: MigrationContext) -> None:
    """A migration written for existing deployments: it fails on empty indexes."""
    if ctx.mapper.repository(Employee).count(consistency="immediate") == 0:
        raise ValueError("no employees to migrate: written for existing deployments")


def install_doc(mapper: em.Mapper) -> Any:
    return read_install(StateStore(mapper.client, index_prefix=mapper.index_prefix))


# -- 5. a fresh install interrupted after configure_indexes ------------------------------


def test_a_fresh_install_stopped_after_configure_indexes_resumes_as_fresh(
    make_mapper: MakeMapper, proxy: FaultProxy, index_prefix: str, es_client: Elasticsearch
) -> None:
    calls: Calls = []
    v1 = migration(calls, 1, fn=needs_data)
    v2 = migration(calls, 2, "resumable")
    seed = migration(calls, None, "repeatable", name="seed")
    proxy.reply_status(500, method="PUT", path=r"-esmapper-migrations/_doc/1$")  # the 1st mark
    dying = em.Mapper(proxy.url, models=[Employee], index_prefix=index_prefix,
                      migrations=[v1, v2, seed])  # fmt: skip
    with dying, pytest.raises(ApiError):
        run_migrations(dying)
    mapper = make_mapper(v1, v2, seed)
    assert es_client.indices.exists(index=f"{index_prefix}employees-v1")
    assert records(mapper) == {}
    stored = install_doc(mapper)
    assert (stored.fresh, stored.marks, stored.status) == (True, ("1", "2"), "started")
    assert [(s.action, s.target) for s in plan(mapper)][:2] == [
        ("mark_completed", "1"),
        ("mark_completed", "2"),
    ]  # the plan decides as the rerun does

    report = run_migrations(mapper)
    assert report.result is MigrationResult.SUCCESS, report.error
    assert calls == [("seed", 1)]  # migration 1 would have failed on the empty index
    state = records(mapper)
    assert all(state[i].completed and state[i].skipped for i in ("1", "2"))
    assert install_doc(mapper).status == "completed"

    v3 = migration(calls, 3)  # added later: the install is over, it runs
    assert make_mapper(v1, v2, v3, seed).migrate() is MigrationResult.SUCCESS
    assert calls == [("seed", 1), ("versioned3", 1)]


def test_a_migration_added_before_an_interrupted_install_is_resumed_still_runs(
    make_mapper: MakeMapper, proxy: FaultProxy, index_prefix: str
) -> None:
    calls: Calls = []
    v1 = migration(calls, 1, fn=needs_data)
    proxy.reply_status(500, method="PUT", path=r"/[^/]*employees-v1$")  # the model index
    dying = em.Mapper(proxy.url, models=[Employee], index_prefix=index_prefix, migrations=[v1])
    with dying, pytest.raises(ApiError):
        run_migrations(dying)
    v2 = migration(calls, 2)  # deployed meanwhile: not in the install record's marks
    mapper = make_mapper(v1, v2)
    assert [(s.action, s.target) for s in plan(mapper)][1:] == [
        ("mark_completed", "1"),
        ("run", "2"),
    ]
    assert mapper.migrate() is MigrationResult.SUCCESS
    assert calls == [("versioned2", 1)]
    assert records(mapper)["1"].skipped and not records(mapper)["2"].skipped


@pytest.mark.parametrize("what", ["model indexes", "records of an older esmapper"])
def test_a_deployment_without_install_record_but_with_data_is_not_fresh(
    what: str, make_mapper: MakeMapper
) -> None:
    calls: Calls = []
    mapper = make_mapper(migration(calls, 1), migration(calls, 2))
    store = StateStore(mapper.client, index_prefix=mapper.index_prefix)
    if what == "model indexes":
        mapper.configure_indexes()
    else:  # an older esmapper ran migration 1, the model indexes are gone
        store.ensure()
        store.save(MigrationRecord(id="1", kind="versioned", version=1, status="completed"))
    assert [s.action for s in plan(mapper) if s.is_migration] == (
        ["run", "run"] if what == "model indexes" else ["run"]
    )
    assert mapper.migrate() is MigrationResult.SUCCESS
    assert calls == ([("versioned1", 1)] if what == "model indexes" else []) + [("versioned2", 1)]
    stored = install_doc(mapper)
    assert (stored.fresh, stored.marks) == (False, ())


def test_the_install_decision_is_made_once(make_mapper: MakeMapper) -> None:
    calls: Calls = []
    mapper = make_mapper(migration(calls, 1))
    store = StateStore(mapper.client, index_prefix=mapper.index_prefix)
    store.ensure()
    store.create("esmapper:install", {"kind": "install", "fresh": False, "marks": []})
    assert mapper.migrate() is MigrationResult.SUCCESS  # nothing existed, but it was decided
    assert calls == [("versioned1", 1)]


@pytest.mark.parametrize("how", ["drop_before", "drop_after", "truncate"])
def test_a_lost_answer_to_the_install_record_is_read_back(
    how: str, proxy: FaultProxy, index_prefix: str
) -> None:
    calls: Calls = []
    if how == "truncate":
        proxy.truncate_response(method="PUT", path=INSTALL)
    else:
        proxy.drop_connection(method="PUT", path=INSTALL, after_forwarding=how == "drop_after")
    with em.Mapper(proxy.url, models=[Employee], index_prefix=index_prefix,
                   migrations=[migration(calls, 1, fn=needs_data)]) as mapper:  # fmt: skip
        assert mapper.migrate() is MigrationResult.SUCCESS
        assert calls == []
        assert records(mapper)["1"].skipped
        sent = [r for r in proxy.requests if r.path.endswith("/_doc/esmapper%3Ainstall")]
        creates = [r for r in sent if r.method == "PUT" and "op_type=create" in r.query]
        assert len(creates) == (2 if how == "drop_before" else 1)  # resent only if not applied
        assert install_doc(mapper).status == "completed"


# -- 6. a run in progress ----------------------------------------------------------------


def test_a_migration_running_in_another_thread_is_running_not_interrupted(
    make_mapper: MakeMapper,
) -> None:
    inside, release = threading.Event(), threading.Event()

    def block(ctx: MigrationContext) -> None:
        inside.set()
        assert release.wait(30)

    calls: Calls = []
    runner = make_mapper(migration(calls, 1, fn=block), migration(calls, 2))
    runner.configure_indexes()
    observer = make_mapper(migration([], 1), migration([], 2))
    thread = threading.Thread(target=runner.migrate)
    thread.start()
    try:
        assert inside.wait(30)
        steps = [s for s in plan(observer) if s.is_migration]
        assert [(s.action, s.target) for s in steps] == [("running", "1"), ("run", "2")]
        assert "the migrations lock is held by" in steps[0].reason
        assert "interrupted" not in steps[0].reason
        dry = run_migrations(observer, dry_run=True)
        assert dry.result is MigrationResult.SUCCESS
        assert dry.warnings and dry.warnings[0].startswith("a migrate run is in progress: ")
    finally:
        release.set()
        thread.join(30)
    assert calls == [("versioned1", 1), ("versioned2", 1)]
    assert plan(observer) == []


@pytest.mark.parametrize("lock", ["expired", "taken after the record started"])
def test_a_started_record_without_its_run_is_interrupted(
    lock: str, make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    mapper = make_mapper(migration([], 1))
    mapper.configure_indexes()
    store = StateStore(mapper.client, index_prefix=index_prefix)
    store.ensure()
    now = mapper.clock()
    started = now - timedelta(minutes=5)
    store.save(MigrationRecord(id="1", kind="versioned", version=1, attempts=1,
                               started_utc=started))  # fmt: skip
    acquired = started - timedelta(minutes=1) if lock == "expired" else now
    expires = now - timedelta(seconds=1) if lock == "expired" else now + timedelta(minutes=5)
    es_client.index(
        index=f"{index_prefix}esmapper-locks", id="migrations", refresh=True,
        document={"owner": "dead:1:x", "acquired_at": format_datetime(acquired),
                  "expires_at": format_datetime(expires)},
    )  # fmt: skip
    (step,) = plan(mapper)
    assert step.action == "blocked"
    assert "was interrupted" in step.reason and "--retry-failed" in step.reason
