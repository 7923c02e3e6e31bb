"""``esmapper indexes list|stats`` and ``esmapper status --health`` of a parent and child
model sharing one index (:mod:`esmapper._join`): the index is shown, counted and checked
once, under both models' names."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from esmapper.cli import main
from tests.integration.conftest import MakeMapper
from tests.integration.test_join import Company, Worker


@pytest.fixture
def app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, es_url: str, index_prefix: str) -> str:
    monkeypatch.syspath_prepend(str(tmp_path))
    name = f"app_{uuid.uuid4().hex[:10]}"
    (tmp_path / f"{name}.py").write_text(
        "import esmapper as em\n"
        "from tests.integration.test_join import Company, Worker\n"
        f"mapper = em.Mapper({es_url!r}, models=[Company, Worker], "
        f"index_prefix={index_prefix!r})\n",
        encoding="utf-8",
    )
    return f"{name}:mapper"


def test_stats_and_list_show_a_join_index_once(
    app: str, make_mapper: MakeMapper, index_prefix: str
) -> None:
    mapper = make_mapper(Company, Worker, configure=True)
    acme = mapper.repository(Company).add(Company(name="acme"))
    mapper.repository(Worker).add(Worker(company_id=acme.id), consistency="immediate")
    index = mapper.spec(Company).physical_name()
    stats = CliRunner().invoke(main, ["--app", app, "indexes", "stats"])
    assert stats.exit_code == 0, stats.output
    rows = [line.split() for line in stats.stdout.splitlines()[1:]]
    assert [row[:3] for row in rows] == [["Company,Worker", index, "2"]]
    assert CliRunner().invoke(main, ["--app", app, "indexes", "stats", "Worker"]).exit_code == 0
    listed = CliRunner().invoke(main, ["--app", app, "indexes", "list"])
    assert [line.split()[0] for line in listed.stdout.splitlines()[1:]] == ["Company,Worker"]
    status = CliRunner().invoke(main, ["--app", app, "status"])
    assert status.exit_code == 0, status.output
    models = [line.split()[0] for line in status.stdout.splitlines()[1:] if "join-" in line]
    assert models == ["Company,Worker"]


def test_health_checks_a_join_index_once(make_mapper: MakeMapper) -> None:
    make_mapper(Company, Worker)  # nothing configured: the one index is missing
    report = make_mapper(Company, Worker).health()
    assert [m.model for m in report.models] == ["Company,Worker"]
    assert [(i.model, i.code) for i in report.attention] == [("Company,Worker", "missing")]


def test_migrate_plans_and_snapshots_name_a_join_index_once(
    make_mapper: MakeMapper, index_prefix: str
) -> None:
    """``migrate``'s plan (creates, reindexes, leftovers) and a snapshot's indexes list
    each index once, not once per model sharing it."""
    from esmapper.jobs.snapshots import SnapshotJob
    from esmapper.migrations import plan

    mapper = make_mapper(Company, Worker)
    creates = [s.target for s in plan(mapper) if s.action == "create_index"]
    assert creates == [mapper.spec(Company).alias]
    job = SnapshotJob(mapper, repository="backups")
    assert job.targets().count(mapper.spec(Company).alias) == 1
