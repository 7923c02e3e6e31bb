"""Several outdated models reindex at once, bounded by ``max_parallel``; a failure stops
new ones from starting, lets the running ones finish, and is raised."""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper.cli import main
from esmapper.indexes import ReindexError, ReindexProgress, reindex_outdated
from esmapper.migrations import MigrationResult, run_migrations
from tests.integration.conftest import MakeMapper
from tests.integration.pausing import Child, children, linux_only

SETTINGS = {"number_of_shards": 1, "number_of_replicas": 0}
WAIT = 60  # seconds a test waits for another thread before it counts as failed


class AV1(em.Document):
    class Index:
        name = "par_a"
        version = 1
        settings = SETTINGS

    n: int = em.field(em.Integer(), default=0)


class AV2(em.Document):
    class Index:
        name = "par_a"
        version = 2
        settings = SETTINGS

    n: int = em.field(em.Long(), default=0)


class BV1(em.Document):
    class Index:
        name = "par_b"
        version = 1
        settings = SETTINGS

    n: int = em.field(em.Integer(), default=0)


class BV2(em.Document):
    class Index:
        name = "par_b"
        version = 2
        settings = SETTINGS

    n: int = em.field(em.Long(), default=0)


class CV1(em.Document):
    class Index:
        name = "par_c"
        version = 1
        settings = SETTINGS

    n: int = em.field(em.Integer(), default=0)


class CV2(em.Document):
    class Index:
        name = "par_c"
        version = 2
        settings = SETTINGS

    n: int = em.field(em.Long(), default=0)


class BV2Broken(em.Document):
    """Version 2 of ``par_b`` whose reindex script fails on every document."""

    class Index:
        name = "par_b"
        version = 2
        settings = SETTINGS
        reindex_scripts = {2: "ctx._source.n = ctx._source.missing.toString()"}  # noqa: RUF012

    n: int = em.field(em.Long(), default=0)


def _seed(make_mapper: MakeMapper, *models: type[Any]) -> None:
    mapper = make_mapper(*models, configure=True)
    for model in models:
        mapper.repository(model).add([model(n=i) for i in range(5)], consistency="immediate")


class Watch:
    """Counts the reindexes running at once (between ``starting`` and ``done``/``failed``)
    and holds the first ``meet`` to start at their first progress report until all of
    them are there: they can only all get there by running at the same time."""

    def __init__(self, meet: int) -> None:
        self.guard = threading.Lock()
        self.active = self.most = 0
        self.started: list[str] = []
        self.finished: list[str] = []
        self.meet = threading.Barrier(meet, timeout=WAIT)
        self.waiting = meet
        self.held: set[str] = set()

    def starting(self, model: type, spec: Any, current: str | None) -> None:
        with self.guard:
            self.active += 1
            self.most = max(self.most, self.active)
            self.started.append(model.__name__)
            if len(self.started) <= self.waiting:
                self.held.add(spec.alias)

    def end(self, model: type, *_: Any) -> None:
        with self.guard:
            self.active -= 1
            self.finished.append(model.__name__)

    def progress(self, report: ReindexProgress) -> None:
        with self.guard:
            hold = report.alias in self.held
            self.held.discard(report.alias)
        if hold:
            self.meet.wait()


def test_outdated_models_reindex_at_the_same_time(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    _seed(make_mapper, AV1, BV1)
    mapper = make_mapper(AV2, BV2, configure=True)
    watch = Watch(meet=2)

    results = reindex_outdated(
        mapper,
        max_parallel=2,
        progress=watch.progress,
        starting=watch.starting,
        done=watch.end,
    )

    assert sorted((r.model, r.status) for r in results) == [
        ("AV2", "reindexed"),
        ("BV2", "reindexed"),
    ]
    assert watch.most == 2
    for name in ("par_a", "par_b"):
        alias = f"{index_prefix}{name}"
        assert sorted(es_client.indices.get_alias(name=alias).body) == [f"{alias}-v2"]
        assert es_client.count(index=alias)["count"] == 5


def test_no_more_than_max_parallel_run_at_once(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    _seed(make_mapper, AV1, BV1, CV1)
    mapper = make_mapper(AV2, BV2, CV2, configure=True)
    watch = Watch(meet=2)

    results = reindex_outdated(
        mapper, max_parallel=2, progress=watch.progress, starting=watch.starting, done=watch.end
    )

    assert len(results) == 3 and watch.most == 2
    assert sorted(watch.finished) == ["AV2", "BV2", "CV2"]


def test_a_failure_lets_the_running_ones_finish_starts_no_other_and_is_raised(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    _seed(make_mapper, AV1, BV1, CV1)
    mapper = make_mapper(BV2Broken, AV2, CV2, configure=True)
    watch = Watch(meet=2)
    failed: list[tuple[str, BaseException]] = []
    heard = threading.Event()

    def on_failure(model: type, exc: BaseException) -> None:
        watch.end(model)
        failed.append((model.__name__, exc))
        heard.set()

    def progress(report: ReindexProgress) -> None:
        watch.progress(report)
        if report.alias == f"{index_prefix}par_a" and report.phase == "done":
            assert heard.wait(WAIT)  # AV2 finishes only once BV2Broken failed

    with pytest.raises(ReindexError) as raised:
        reindex_outdated(
            mapper,
            max_parallel=2,
            progress=progress,
            starting=watch.starting,
            done=watch.end,
            failed=on_failure,
        )

    assert raised.value.result.model == "BV2Broken"
    assert [name for name, _ in failed] == ["BV2Broken"]
    assert sorted(watch.started) == ["AV2", "BV2Broken"]  # CV2 never started
    assert watch.finished[-1] == "AV2"  # the running one finished
    alias = f"{index_prefix}par_a"
    assert sorted(es_client.indices.get_alias(name=alias).body) == [f"{alias}-v2"]
    b = f"{index_prefix}par_b"
    assert sorted(es_client.indices.get_alias(name=b).body) == [f"{b}-v1"]


@pytest.mark.parametrize(("value", "error"), [(0, ValueError), (True, TypeError), (1.5, TypeError)])
def test_max_parallel_is_checked_before_anything_is_sent(
    make_mapper: MakeMapper, value: Any, error: type[Exception]
) -> None:
    mapper = make_mapper(AV2)
    with pytest.raises(error, match="max_parallel"):
        reindex_outdated(mapper, max_parallel=value, starting=lambda *a: pytest.fail("started"))
    with pytest.raises(error, match="max_parallel"):
        run_migrations(mapper, max_parallel=value)


def test_migrate_reindexes_outdated_models_in_parallel_and_reports_each(
    make_mapper: MakeMapper, index_prefix: str
) -> None:
    _seed(make_mapper, AV1, BV1)
    mapper = make_mapper(AV2, BV2)
    watch = Watch(meet=2)

    report = run_migrations(mapper, max_parallel=2, progress=watch.progress)

    assert report.result is MigrationResult.SUCCESS, report.error
    reindexed = sorted(o.step.target for o in report.outcomes if o.status == "reindexed")
    assert reindexed == [f"{index_prefix}par_a", f"{index_prefix}par_b"]


def test_migrate_in_parallel_reports_the_failed_model(
    make_mapper: MakeMapper, index_prefix: str
) -> None:
    _seed(make_mapper, AV1, BV1)
    mapper = make_mapper(AV2, BV2Broken)

    report = run_migrations(mapper, max_parallel=2)

    assert report.result is MigrationResult.FAILED
    assert report.error is not None and f"reindex of {index_prefix}par_b failed" in report.error
    outcomes = {o.step.target: o.status for o in report.outcomes if o.step.action == "reindex"}
    assert outcomes[f"{index_prefix}par_b"] == "failed"


#: the mapper ``esmapper --app`` loads in the command-line test
app_mapper: em.Mapper | None = None


def test_the_migrate_command_reindexes_in_parallel(
    make_mapper: MakeMapper, index_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _seed(make_mapper, AV1, BV1)
    monkeypatch.setattr(sys.modules[__name__], "app_mapper", make_mapper(AV2, BV2))

    out = CliRunner().invoke(
        main, ["--app", f"{__name__}:app_mapper", "migrate", "--parallel", "2"]
    )

    assert out.exit_code == 0, out.output
    reindexed = sorted(line.split()[1] for line in out.output.splitlines() if "reindexed" in line)
    assert reindexed == [f"{index_prefix}par_a", f"{index_prefix}par_b"]
    assert out.output.splitlines()[-1] == "migrations: success"
    refused = CliRunner().invoke(
        main, ["--app", f"{__name__}:app_mapper", "migrate", "--parallel", "0"]
    )
    assert refused.exit_code == 2 and "--parallel" in refused.output


@linux_only
def test_a_parallel_migrate_killed_before_its_swaps_is_finished_by_the_rerun(
    tmp_path: Path,
    make_mapper: MakeMapper,
    es_url: str,
    es_client: Elasticsearch,
    index_prefix: str,
) -> None:
    """kill -9 while both reindexes stand write-blocked before their swaps: nothing is
    lost, and the rerun (its locks' process gone: taken at once) clears the blocks,
    drops the dead run's targets, reindexes both and leaves nothing behind."""
    _seed(make_mapper, AV1, BV1)
    p = index_prefix
    with children() as started:
        child = Child(
            "tests.integration.indexes.reindex_parallel_worker", tmp_path, "killed", es_url, p
        )
        started.append(child)
        child.wait_paused()
        child.proc.kill()
        child.proc.communicate()
    for name in ("par_a", "par_b"):  # both were held before the swap, write-blocked
        old = f"{p}{name}-v1"
        assert sorted(es_client.indices.get_alias(name=f"{p}{name}").body) == [old]
        settings = es_client.indices.get_settings(index=old).body[old]["settings"]["index"]
        assert settings["blocks"]["write"] == "true"
        assert es_client.indices.exists(index=f"{p}{name}-v2")

    mapper = make_mapper(AV2, BV2)
    run = run_migrations(mapper, max_parallel=2)

    assert run.result is MigrationResult.SUCCESS, run
    for name in ("par_a", "par_b"):
        assert sorted(es_client.indices.get_alias(name=f"{p}{name}").body) == [f"{p}{name}-v2"]
        hits = es_client.search(index=f"{p}{name}", size=100)["hits"]["hits"]
        assert sorted(h["_source"]["n"] for h in hits) == list(range(5))
        assert not es_client.indices.exists(index=f"{p}{name}-v1")
    health = mapper.health()
    assert [i for i in health.issues if i.model is not None] == []  # no block, no leftover
