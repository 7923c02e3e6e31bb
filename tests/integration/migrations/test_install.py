"""The fresh-install decision (esmapper.migrations.install) is made by whichever path
creates the first model index: ``migrate``, or an application write that creates its
model's index before the deploy's ``migrate`` ran."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from elasticsearch import ApiError, Elasticsearch

import esmapper as em
from esmapper.migrations import MigrationResult, StateStore, run_migrations
from esmapper.migrations.install import read_install
from esmapper.testing.faults import FaultProxy

from .conftest import Employee, MakeMapper
from .test_runner import Calls, migration

NOW = dt.datetime(2026, 3, 10, 12, 30, tzinfo=dt.timezone.utc)


class Visit(em.Document, em.HasDates):
    class Index:
        name = "visits"
        kind = "daily"
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    page: str = ""


def install_of(mapper: em.Mapper) -> Any:
    return read_install(StateStore(mapper.client, index_prefix=mapper.index_prefix))


def test_an_app_write_before_the_first_migrate_keeps_the_deploy_a_fresh_install(
    make_mapper: MakeMapper,
) -> None:
    """First deploy: the web process writes (creating the employees index) before the
    deploy's ``migrate`` job runs. The write decided first: a fresh install, migration 1
    marked completed by ``migrate``, not run over the new code's documents."""
    calls: Calls = []
    v1 = migration(calls, 1)
    app = make_mapper(v1)
    app.repository(Employee).add(Employee(name="first user"))
    stored = install_of(app)
    assert (stored.fresh, stored.marks, stored.status) == (True, ("1",), "started")

    report = run_migrations(make_mapper(v1))
    assert report.result is MigrationResult.SUCCESS, report.error
    assert calls == []
    assert [(o.status, o.step.target) for o in report.outcomes] == [("marked", "1")]
    assert install_of(app).completed


def test_a_first_time_series_partition_decides_too(make_mapper: MakeMapper) -> None:
    calls: Calls = []
    v1 = migration(calls, 1)
    app = make_mapper(v1, models=(Visit,), clock=lambda: NOW)
    app.repository(Visit).add(Visit(page="/", created_utc=NOW))
    assert (install_of(app).fresh, install_of(app).marks) == (True, ("1",))
    assert run_migrations(make_mapper(v1, models=(Visit,))).result is MigrationResult.SUCCESS
    assert calls == []


def test_migrate_first_then_app_writes_keep_its_decision(
    make_mapper: MakeMapper, proxy: FaultProxy, index_prefix: str
) -> None:
    """``migrate`` decided (and created the index); the application's writes, also the
    first partition of a new period, find the record and leave it alone."""
    calls: Calls = []
    v1 = migration(calls, 1)
    assert run_migrations(make_mapper(v1, models=(Employee, Visit))).result is (
        MigrationResult.SUCCESS
    )
    decided = install_of(make_mapper())
    assert (decided.fresh, decided.completed) == (True, True)

    with em.Mapper(
        proxy.url,
        models=[Employee, Visit],
        migrations=[v1],
        index_prefix=index_prefix,
        clock=lambda: NOW,
    ) as app:
        app.repository(Employee).add(Employee(name="a"))
        app.repository(Visit).add(Visit(page="/", created_utc=NOW))  # a new partition
        app.repository(Visit).add(Visit(page="/b", created_utc=NOW - dt.timedelta(days=1)))
        # one read of the install record, for the first partition created; nothing written
        assert proxy.count(r"-esmapper-migrations/_doc/esmapper%3Ainstall$", "GET") == 1
        assert proxy.count(r"-esmapper-migrations", "PUT") == 0
    assert install_of(make_mapper()) == decided
    assert run_migrations(make_mapper(v1)).result is MigrationResult.SUCCESS
    assert calls == []


def test_the_decision_is_written_before_the_index_is_created(
    make_mapper: MakeMapper, proxy: FaultProxy, index_prefix: str, es_client: Elasticsearch
) -> None:
    """A crash (here: the index create refused) after the decision leaves the decision,
    never a model index without one."""
    calls: Calls = []
    v1 = migration(calls, 1)
    with em.Mapper(proxy.url, models=[Employee], migrations=[v1], index_prefix=index_prefix) as app:
        proxy.reply_status(500, path=rf"^/{index_prefix}employees-v1$", method="PUT")
        with pytest.raises(ApiError):
            app.repository(Employee).add(Employee(name="a"))
    assert not es_client.indices.exists(index=f"{index_prefix}employees-v1")
    assert install_of(make_mapper()).fresh
    assert run_migrations(make_mapper(v1)).result is MigrationResult.SUCCESS
    assert calls == []


def test_a_mapper_without_migrations_decides_nothing(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    """Documented choice: an application whose mapper registers no migrations gets no
    state index from its writes; a later ``migrate`` with migrations finds an existing
    deployment and runs them (its data was written by code that did not know them)."""
    calls: Calls = []
    make_mapper().repository(Employee).add(Employee(name="a"))
    assert not es_client.indices.exists(index=f"{index_prefix}esmapper-migrations")

    assert run_migrations(make_mapper(migration(calls, 1))).result is MigrationResult.SUCCESS
    assert calls == [("versioned1", 1)]
    assert install_of(make_mapper()).fresh is False


def test_a_new_models_first_write_in_an_existing_deployment_decides_not_fresh(
    make_mapper: MakeMapper,
) -> None:
    """Employees exist (an install from before migrations); a new model's first write
    decides: not fresh, so ``migrate`` runs migration 1 over the existing data."""
    calls: Calls = []
    make_mapper().configure_indexes()  # the existing deployment
    app = make_mapper(migration(calls, 1), models=(Employee, Visit), clock=lambda: NOW)
    app.repository(Visit).add(Visit(page="/", created_utc=NOW))
    assert (install_of(app).fresh, install_of(app).marks) == (False, ())
    assert run_migrations(make_mapper(migration(calls, 1))).result is MigrationResult.SUCCESS
    assert calls == [("versioned1", 1)]
