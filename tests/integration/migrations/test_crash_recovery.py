"""Crash recovery in-process: an interrupted fresh install, a run in progress seen by plans,
and old indexes a reindex left behind. (test_kill9.py kills the real command.)"""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
from elasticsearch import ApiError, Elasticsearch

import esmapper as em
from esmapper.indexes import find_leftovers, reindex
from esmapper.locks import LockProvider
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
    assert "was interrupted" in step.reason and "retry_failed=True" in step.reason


# -- 7. old indexes left behind by a reindex ---------------------------------------------


class EmployeeV2(em.Document):
    class Index:
        name = "employees"
        version = 2
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    name: str = em.field(em.Keyword(), default="")
    department: str | None = em.field(em.Keyword(), default=None)


def with_data(make_mapper: MakeMapper, n: int = 12) -> em.Mapper:
    v1 = make_mapper()
    v1.configure_indexes()
    v1.repository(Employee).add([Employee(name=f"e{i}") for i in range(n)], consistency="immediate")
    return make_mapper(models=(EmployeeV2,))


def test_an_old_index_left_after_the_swap_is_reported_then_deleted_by_migrate(
    make_mapper: MakeMapper, proxy: FaultProxy, index_prefix: str, es_client: Elasticsearch
) -> None:
    mapper = with_data(make_mapper)
    alias, v1 = f"{index_prefix}employees", f"{index_prefix}employees-v1"
    proxy.reply_status(500, method="DELETE", path=rf"/{v1}$")  # stops right after the swap
    dying = em.Mapper(proxy.url, models=[EmployeeV2], index_prefix=index_prefix)
    with dying, pytest.raises(ApiError):
        reindex(dying, EmployeeV2)
    assert list(es_client.indices.get_alias(name=alias).body) == [f"{alias}-v2"]
    (left,) = find_leftovers(es_client, mapper.spec(EmployeeV2))
    assert (left.index, left.docs, left.write_blocked, left.deletable) == (v1, 12, True, True)
    assert left.replaced_by == f"{alias}-v2" and left.keep is None
    assert [(s.action, s.target) for s in plan(mapper)] == [("delete_index", v1)]

    report = run_migrations(mapper)
    assert report.result is MigrationResult.SUCCESS, report.error
    assert [(o.status, o.step.target) for o in report.outcomes] == [("deleted", v1)]
    assert not es_client.indices.exists(index=v1)
    assert es_client.count(index=alias)["count"] == 12
    assert find_leftovers(es_client, mapper.spec(EmployeeV2)) == []
    assert run_migrations(mapper).outcomes == []


def test_an_old_index_kept_on_purpose_is_reported_not_deleted(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    mapper = with_data(make_mapper)
    v1 = f"{index_prefix}employees-v1"
    result = reindex(mapper, EmployeeV2, delete_old=False)
    assert (result.swapped, result.old_deleted) == (True, False)
    (left,) = find_leftovers(es_client, mapper.spec(EmployeeV2))
    assert (left.index, left.keep, left.deletable) == (v1, "delete_old=False", False)
    assert "kept by the reindex" in left.reason
    assert plan(mapper) == []
    assert run_migrations(mapper).outcomes == []
    assert es_client.indices.exists(index=v1)


def test_unmarked_old_and_failed_newer_indexes_are_never_deleted(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    mapper = with_data(make_mapper)
    reindex(mapper, EmployeeV2)  # alias on -v2, -v1 deleted
    alias = f"{index_prefix}employees"
    es_client.indices.create(index=f"{alias}-v0")  # not marked: not by a reindex
    es_client.indices.add_block(index=f"{alias}-v0", block="write")
    es_client.indices.create(index=f"{alias}-v3")  # newer: a reindex target's business
    es_client.index(index=f"{alias}-v3", id="x", document={"name": "x"}, refresh=True)
    es_client.indices.create(index=f"{alias}-v1-archive")  # not the versioned naming

    (left,) = find_leftovers(es_client, mapper.spec(EmployeeV2))
    assert (left.index, left.deletable) == (f"{alias}-v0", False)
    assert "not marked by a reindex" in left.reason
    assert run_migrations(mapper).result is MigrationResult.SUCCESS
    for index in (f"{alias}-v0", f"{alias}-v2", f"{alias}-v3", f"{alias}-v1-archive"):
        assert es_client.indices.exists(index=index), index
    assert list(es_client.indices.get_alias(name=alias).body) == [f"{alias}-v2"]


def test_the_cleanup_waits_for_a_reindex_lock_then_leaves_it_to_the_next_run(
    make_mapper: MakeMapper, proxy: FaultProxy, index_prefix: str, es_client: Elasticsearch
) -> None:
    mapper = with_data(make_mapper, 3)
    v1 = f"{index_prefix}employees-v1"
    proxy.reply_status(500, method="DELETE", path=rf"/{v1}$")
    dying = em.Mapper(proxy.url, models=[EmployeeV2], index_prefix=index_prefix)
    with dying, pytest.raises(ApiError):
        reindex(dying, EmployeeV2)
    locks = LockProvider(es_client, index_prefix=index_prefix)
    with locks.acquire(f"reindex:{index_prefix}employees", timedelta(minutes=5)):
        report = run_migrations(mapper, lock_ttl=timedelta(seconds=1))
    assert report.result is MigrationResult.SUCCESS
    assert report.warnings and "held by another process" in report.warnings[0]
    assert es_client.indices.exists(index=v1)
    assert [o.step.target for o in run_migrations(mapper).outcomes] == [v1]
    assert not es_client.indices.exists(index=v1)
