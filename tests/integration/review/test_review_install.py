"""Review: the fresh-install decision vs. writes that now ensure their own index."""

from __future__ import annotations

from tests.integration.migrations.conftest import Employee, MakeMapper, make_mapper  # noqa: F401
from tests.integration.migrations.test_runner import Calls, migration

from esmapper.migrations import MigrationResult, run_migrations


def test_a_first_deploy_whose_app_writes_before_migrate_is_still_a_fresh_install(
    make_mapper: MakeMapper,  # noqa: F811
) -> None:
    """First deploy: the web process starts and writes (its first write now creates the
    index, IM-20) while the deploy's ``migrate`` job has not run yet. Nothing of old code
    ever existed, yet migrate decides "existing deployment" and runs versioned migrations
    written for old data over the new code's documents."""
    calls: Calls = []
    v1 = migration(calls, 1)
    app = make_mapper(v1)
    app.repository(Employee).add(Employee(name="first user"))  # creates employees index

    report = run_migrations(make_mapper(v1))
    assert report.result is MigrationResult.SUCCESS, report.error
    assert calls == []  # a fresh install marks migration 1 completed instead of running it
