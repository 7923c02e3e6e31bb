"""``kill -9`` of the real ``esmapper migrate`` at the points where a crash used to leave a
wrong state, then a rerun of the command: the final state, the records, the documents and
``esmapper status`` must be as if nothing had happened.

The command runs in a subprocess (``python -m esmapper.cli``) on an application module
written to ``tmp_path``. It is stopped at a chosen point either by a migration that waits at
a *checkpoint* (a file the test arms; the migration writes ``<name>.reached`` and waits) or
by a :class:`FaultProxy` in front of it holding one request (``delay``): once the proxy has
seen the request, the process is killed and the proxy stopped, so the held request is never
forwarded. A killed run's lock is not released: the killed runs take it with ``--lock-ttl
1`` and the reruns wait for it to expire (``--lock-wait``), or the test breaks it the
documented way (deleting the lock document).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from elasticsearch import Elasticsearch

from esmapper._cli_app import load_mapper
from esmapper.cli import main
from esmapper.indexes import find_leftovers
from esmapper.migrations import MigrationRecord, StateStore
from esmapper.migrations.install import read_install
from esmapper.testing.faults import FaultProxy
from tests.unit.cli.apps import subprocess_env

APP = '''
"""A test application for test_kill9: checkpoints let the test stop it where it wants."""
import os
import pathlib
import time

import esmapper as em
from esmapper.migrations import Migration

CONTROL = pathlib.Path({control!r})


def checkpoint(name):
    """When the test armed ``name``: say we are here (our pid), then wait to be killed."""
    armed, reached = CONTROL / f"{{name}}.armed", CONTROL / f"{{name}}.reached"
    if not armed.exists() or reached.exists():
        return
    partial = CONTROL / f"{{name}}.partial"
    partial.write_text(str(os.getpid()))
    partial.rename(reached)
    while True:
        time.sleep(0.05)


class Employee(em.Document):
    class Index:
        name = "employees"
        version = {version}
        settings = {{"number_of_shards": 1, "number_of_replicas": 0}}

    name: str = ""


def write(ctx, ids):
    alias = ctx.mapper.spec(Employee).alias
    for id_ in ids:
        ctx.mapper.client.index(index=alias, id=id_, document={{"name": id_}}, refresh=True)


class ForExistingData(Migration):
    """Needs existing employees: fails on a fresh install."""

    version = 1

    def run(self, ctx):
        if ctx.mapper.repository(Employee).count(consistency="immediate") == 0:
            raise ValueError("no employees: written for existing deployments")
        write(ctx, ["m1"])


class Backfill(Migration):
    """Adds 20 employees, 10 at a time."""

    version = 2
    kind = "resumable"

    def run(self, ctx):
        write(ctx, [f"b{{i}}" for i in range(10)])
        checkpoint("backfill")
        write(ctx, [f"b{{i}}" for i in range(10, 20)])


class Rename(Migration):
    """Writes two employees, one before its checkpoint."""

    version = 3

    def run(self, ctx):
        write(ctx, ["v3-a"])
        checkpoint("rename")
        write(ctx, ["v3-b"])


class Seed(Migration):
    """Seeds one employee."""

    kind = "repeatable"
    id = "seed"  # the same migration in every version of the app module

    def run(self, ctx):
        write(ctx, ["seed"])


mapper = em.Mapper({url!r}, models=[Employee], index_prefix={prefix!r},
                   migrations=[ForExistingData, Backfill, Rename, Seed])
'''

EXISTING = [f"e{i}" for i in range(30)]  # an existing deployment's documents
MIGRATED = ["m1", *(f"b{i}" for i in range(20)), "v3-a", "v3-b", "seed"]
KILLED = -signal.SIGKILL


class App:
    """The application module(s) of one test and the commands run on them."""

    def __init__(self, directory: Path, url: str, prefix: str) -> None:
        self.directory, self.url, self.prefix = directory, url, prefix
        self.control = directory / "control"
        self.control.mkdir()
        self.alias = f"{prefix}employees"

    def module(self, version: int = 1) -> str:
        name = f"kill9_app_{uuid.uuid4().hex[:10]}"
        source = APP.format(control=str(self.control), version=version, url=self.url,
                            prefix=self.prefix)  # fmt: skip
        (self.directory / f"{name}.py").write_text(source, encoding="utf-8")
        return f"{name}:mapper"

    def arm(self, checkpoint: str) -> Path:
        (self.control / f"{checkpoint}.armed").touch()
        return self.control / f"{checkpoint}.reached"

    def start(
        self, app: str, *args: str, url: str | None = None, command: str = "migrate"
    ) -> subprocess.Popen[str]:
        """``esmapper --app APP [--url URL] COMMAND ARGS`` in a subprocess."""
        env = subprocess_env(self.directory)  # the app, then this checkout's esmapper
        where = ["--url", url] if url else []
        return subprocess.Popen(
            [sys.executable, "-m", "esmapper.cli", "--app", app, *where, command, *args],
            cwd=self.directory, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip

    def migrate(self, app: str, *args: str) -> subprocess.CompletedProcess[str]:
        """A rerun to the end, waiting for a killed run's lock to expire."""
        proc = self.start(app, "--lock-wait", "60", *args)
        out, err = proc.communicate(timeout=120)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    def cli(self, app: str, *args: str) -> Result:
        """A read-only command in this process (``status``, ``migrate --dry-run``)."""
        return CliRunner().invoke(main, ["--app", app, *args])


@pytest.fixture
def app(tmp_path: Path, es_url: str, index_prefix: str, monkeypatch: pytest.MonkeyPatch) -> App:
    monkeypatch.syspath_prepend(str(tmp_path))
    return App(tmp_path, es_url, index_prefix)


def wait_for(what: str, condition: Callable[[], bool], proc: subprocess.Popen[str]) -> None:
    """Until ``condition()``; fails when the command exits first (or after a minute)."""
    deadline = time.monotonic() + 60
    while not condition():
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"migrate exited {proc.returncode} before {what}:\n{out}\n{err}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"migrate never got to {what}")
        time.sleep(0.02)


def kill9(proc: subprocess.Popen[str]) -> str:
    """SIGKILL the command; its stdout so far."""
    os.kill(proc.pid, signal.SIGKILL)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == KILLED
    return out


def held(proxy: FaultProxy, method: str, path: str, skip: int = 0) -> Callable[[], bool]:
    """Hold the request after the first ``skip`` matching ones (never forwarded: the proxy
    stops first); a callable telling whether it was reached."""
    proxy.delay(300, method=method, path=path, skip=skip)
    return lambda: proxy.count(path, method=method) >= skip + 1


def state(es: Elasticsearch, prefix: str) -> dict[str, MigrationRecord]:
    return StateStore(es, index_prefix=prefix).load()


def ids(es: Elasticsearch, index: str) -> list[str]:
    es.indices.refresh(index=index)
    hits = es.search(index=index, size=1000, source=False)["hits"]["hits"]
    return sorted(str(hit["_id"]) for hit in hits)


def status_ok(app: App, module: str, docs: int) -> list[str]:
    """``esmapper status`` says all is well; its lines."""
    result = app.cli(module, "status")
    assert result.exit_code == 0, result.output
    _, row, *rest = result.stdout.splitlines()
    assert row.split()[-2:] == [str(docs), "ok"], result.stdout
    assert rest == ["pending migrations: none"], result.stdout
    return result.stdout.splitlines()


def existing_deployment(app: App, module: str) -> None:
    """Model indexes with data, no migration state: an install from before migrations."""
    mapper = load_mapper(module)
    mapper.configure_indexes()
    for id_ in EXISTING:
        mapper.client.index(index=app.alias, id=id_, document={"name": id_})
    mapper.client.indices.refresh(index=app.alias)


def assert_migrated_once(es: Elasticsearch, prefix: str, attempts: dict[str, int]) -> None:
    records = state(es, prefix)
    assert sorted(records) == ["1", "2", "3", "seed"]
    assert all(r.completed and not r.skipped for r in records.values()), records
    assert {i: r.attempts for i, r in records.items()} == {**attempts, "seed": 1}


# -- 5. a fresh install killed before its state was written ------------------------------

FRESH_POINTS = {
    # held request: the kill comes right before it is applied
    "after the state index, before the install record": (
        "PUT", r"-esmapper-migrations/_doc/esmapper%3Ainstall$"),
    "after the install record, before configure_indexes": ("PUT", r"-employees-v1$"),
    "after configure_indexes, before any migration state": (
        "PUT", r"-esmapper-migrations/_doc/1$"),
}  # fmt: skip


@pytest.mark.parametrize("point", list(FRESH_POINTS))
def test_a_fresh_install_killed_before_its_state_is_resumed_as_fresh(
    point: str, app: App, proxy: FaultProxy, es_client: Elasticsearch, index_prefix: str
) -> None:
    module = app.module()
    method, path = FRESH_POINTS[point]
    reached = held(proxy, method, path)
    proc = app.start(module, "--lock-ttl", "1", url=proxy.url)
    wait_for(point, reached, proc)
    kill9(proc)
    proxy.stop()

    store = StateStore(es_client, index_prefix=index_prefix)
    install = read_install(store)
    model_index = es_client.indices.exists(index=f"{app.alias}-v1")
    assert store.exists() and state(es_client, index_prefix) == {}
    if point.startswith("after the state index"):
        assert install is None and not model_index
    else:
        assert install is not None and (install.fresh, install.status) == (True, "started")
        assert model_index == point.startswith("after configure_indexes")

    rerun = app.migrate(module)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    lines = [line.split()[:4] for line in rerun.stdout.splitlines()]
    assert ["marked", "versioned", "migration", "1"] in lines  # not run: it would fail
    assert ["marked", "resumable", "migration", "2"] in lines
    assert ["marked", "versioned", "migration", "3"] in lines
    records = state(es_client, index_prefix)
    assert sorted(records) == ["1", "2", "3", "seed"]
    assert all(records[i].completed and records[i].skipped for i in ("1", "2", "3"))
    assert (records["seed"].completed, records["seed"].attempts) == (True, 1)
    install = read_install(store)
    assert install is not None and (install.fresh, install.status) == (True, "completed")
    assert ids(es_client, app.alias) == ["seed"]  # only the repeatable wrote
    status_ok(app, module, docs=1)


# -- 6. status while a run is in progress, then killed mid-migration ---------------------


def test_status_shows_a_run_in_progress_in_another_process_then_it_is_killed_and_resumed(
    app: App, es_client: Elasticsearch, index_prefix: str
) -> None:
    module = app.module()
    existing_deployment(app, module)
    reached = app.arm("backfill")
    proc = app.start(module)  # the default lock ttl: it stays live after the kill
    wait_for("the backfill checkpoint", reached.exists, proc)
    pid = reached.read_text()
    assert pid == str(proc.pid)

    status = app.cli(module, "status")
    assert status.exit_code == 0, status.output
    assert "migrate in progress: the migrations lock is held by " in status.stdout
    assert f":{pid}:" in status.stdout
    (running,) = [line for line in status.stdout.splitlines() if "resumable 2" in line]
    assert running.split()[:3] == ["running", "resumable", "2"]
    assert "running now (attempt 1, started " in running and f":{pid}:" in running
    assert "interrupted" not in status.stdout and "--retry-failed" not in status.stdout
    dry = app.cli(module, "migrate", "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert dry.stderr.startswith("warning: a migrate run is in progress: ")
    assert any(line.split()[:2] == ["running", "resumable"] for line in dry.stdout.splitlines())
    second = app.cli(module, "migrate")
    assert second.exit_code == 2
    assert second.stderr.startswith("error: lock 'migrations' is held by another process (")

    out = kill9(proc)
    assert "completed  versioned migration 1" in out
    es_client.delete(index=f"{index_prefix}esmapper-locks", id="migrations", refresh=True)
    after = app.cli(module, "status").stdout  # no live lock: the record is an interrupted run
    assert "run             resumable 2 (Adds 20 employees, 10 at a time.): resuming: " \
        "was interrupted after 1 attempt(s)" in after  # fmt: skip
    assert "running" not in after and "in progress" not in after

    rerun = app.migrate(module)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert rerun.stdout.splitlines()[0].startswith("completed  resumable migration 2")
    assert_migrated_once(es_client, index_prefix, {"1": 1, "2": 2, "3": 1})
    assert ids(es_client, app.alias) == sorted(EXISTING + MIGRATED)  # none lost or doubled
    status_ok(app, module, docs=len(EXISTING + MIGRATED))


def test_a_versioned_migration_killed_mid_run_is_interrupted_until_retried(
    app: App, es_client: Elasticsearch, index_prefix: str
) -> None:
    module = app.module()
    existing_deployment(app, module)
    reached = app.arm("rename")
    proc = app.start(module, "--lock-ttl", "1")
    wait_for("the rename checkpoint", reached.exists, proc)
    kill9(proc)

    rerun = app.migrate(module)  # takes the expired lock over
    assert rerun.returncode == 1
    assert rerun.stderr == (
        "error: migration 3 was interrupted; fix it, then migrate again with --retry-failed\n"
    )
    status = app.cli(module, "status").stdout
    assert "blocked         versioned 3 (Writes two employees, one before its checkpoint.): " \
        "was interrupted;" in status  # fmt: skip
    assert "running" not in status and "in progress" not in status

    retried = app.migrate(module, "--retry-failed")
    assert retried.returncode == 0, retried.stdout + retried.stderr
    assert_migrated_once(es_client, index_prefix, {"1": 1, "2": 1, "3": 2})
    assert ids(es_client, app.alias) == sorted(EXISTING + MIGRATED)
    status_ok(app, module, docs=len(EXISTING + MIGRATED))


# -- 7. a reindex killed around the alias swap -------------------------------------------

REINDEX_POINTS = {  # (method, path, matching requests to let through first)
    "between the alias swap and deleting the old index": ("DELETE", r"-employees-v1$", 0),
    "at the alias swap": ("POST", r"^/_aliases$", 1),  # the first one claims the new index
}


@pytest.mark.parametrize("point", list(REINDEX_POINTS))
def test_a_reindex_killed_around_the_swap_is_finished_by_the_rerun(
    point: str, app: App, proxy: FaultProxy, es_client: Elasticsearch, index_prefix: str
) -> None:
    v1_app = app.module()
    installed = app.cli(v1_app, "migrate")  # a fresh install at version 1
    assert installed.exit_code == 0, installed.output
    for id_ in EXISTING:
        es_client.index(index=app.alias, id=id_, document={"name": id_})
    expected = sorted([*EXISTING, "seed"])
    v1, v2 = f"{app.alias}-v1", f"{app.alias}-v2"
    v2_app = app.module(version=2)

    method, path, skip = REINDEX_POINTS[point]
    reached = held(proxy, method, path, skip)
    proc = app.start(v2_app, "--lock-ttl", "1", url=proxy.url)
    wait_for(point, reached, proc)
    kill9(proc)
    proxy.stop()

    assert ids(es_client, v1) == expected and es_client.indices.exists(index=v2)
    status = app.cli(v2_app, "status").stdout
    if point.startswith("between"):
        assert list(es_client.indices.get_alias(name=app.alias).body) == [v2]
        assert status.splitlines()[1].split()[-1] == "leftover"
        assert (
            f"old indexes left behind: 1\n  {v1} ({len(expected)} documents): the reindex into "
            f"{v2} stopped before deleting it; migrate deletes it\n"
        ) in status
        dry = app.cli(v2_app, "migrate", "--dry-run").stdout
        assert dry.splitlines()[1].split()[:2] == ["delete_index", f"{v1}:"]
    else:
        assert list(es_client.indices.get_alias(name=app.alias).body) == [v1]
        assert status.splitlines()[1].split()[-1] == "write-blocked"  # and outdated
        assert f"write blocked: {v1} is write-blocked since " in status
        assert f"by the reindex into {v2} (lock " in status
        assert "which no longer runs; migrate or reindex lifts it" in status
        assert "left behind" not in status

    rerun = app.migrate(v2_app)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    done = rerun.stdout.splitlines()[-2].split()
    finished = ["deleted", v1] if point.startswith("between") else ["reindexed", app.alias]
    assert done[:2] == finished
    assert not es_client.indices.exists(index=v1)
    assert list(es_client.indices.get_alias(name=app.alias).body) == [v2]
    assert ids(es_client, app.alias) == expected  # none lost, none doubled
    mapper = load_mapper(v2_app)
    assert find_leftovers(es_client, mapper.spec(mapper.models[0])) == []
    lines = status_ok(app, v2_app, docs=len(expected))
    assert lines[1].split()[2:4] == [v2, "2/2"]
    records = state(es_client, index_prefix)
    assert sorted(records) == ["1", "2", "3", "seed"]
    assert all(r.completed for r in records.values())
    assert records["seed"].attempts == 1  # not run again by the version 2 app
