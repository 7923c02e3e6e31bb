"""The ``esmapper`` command against the test server (CliRunner and a real subprocess)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from elasticsearch import Elasticsearch

from esmapper._cli_app import load_mapper
from esmapper.cli import main
from esmapper.locks import LockProvider
from tests.unit.cli.apps import subprocess_env, write_app


@pytest.fixture
def app_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


@pytest.fixture
def app(app_dir: Path, es_url: str, index_prefix: str) -> str:
    return f"{write_app(app_dir, es_url, index_prefix)}:mapper"


@pytest.fixture
def broken_app(app_dir: Path, es_url: str, index_prefix: str) -> str:
    return f"{write_app(app_dir, es_url, index_prefix, broken=True)}:mapper"


def esmapper(app: str, *args: str) -> Result:
    return CliRunner().invoke(main, ["--app", app, *args])


def one_error_line(result: Result) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.output + result.stderr
    return lines[0]


def test_migrate_a_fresh_install_then_status(app: str, index_prefix: str) -> None:
    result = esmapper(app, "migrate")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    alias = f"{index_prefix}employees"
    assert lines[0].split() == ["created", alias, f"({alias}-v1)"]
    assert lines[1].split()[:4] == ["marked", "versioned", "migration", "1"]
    assert lines[-1] == "migrations: success"

    status = esmapper(app, "status")
    assert status.exit_code == 0, status.output
    header, row, *rest = status.stdout.splitlines()
    assert header.split() == ["MODEL", "ALIAS", "INDEX", "VERSION", "DOCS", "STATE"]
    expected = ["Employee", f"{index_prefix}employees", f"{index_prefix}employees-v1"]
    assert row.split() == [*expected, "1/1", "0", "ok"]
    assert rest == ["pending migrations: none"]


def test_status_before_anything_and_migrate_on_existing_indexes(app: str) -> None:
    status = esmapper(app, "status")
    assert status.exit_code == 0, status.output
    assert status.stdout.splitlines()[1].split()[2:] == ["-", "-/1", "-", "missing"]
    assert "mark_completed" in status.stdout  # a fresh install would skip migration 1

    load_mapper(app).configure_indexes()
    status = esmapper(app, "status")
    assert "pending migrations: 1" in status.stdout
    assert "run             versioned 1 (Adds one employee.): pending" in status.stdout

    result = esmapper(app, "migrate")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0].startswith("completed  versioned migration 1")
    row = esmapper(app, "status").stdout.splitlines()[1].split()
    assert row[-2:] == ["1", "ok"]  # the migration added one document


def test_dry_run_prints_the_plan_and_changes_nothing(
    app: str, es_client: Elasticsearch, index_prefix: str
) -> None:
    result = esmapper(app, "migrate", "--dry-run")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "plan (dry run, nothing changed):"
    assert lines[1].split()[:2] == ["create_index", f"{index_prefix}employees"]
    assert lines[2].split()[:3] == ["mark_completed", "versioned", "1"]
    assert not es_client.indices.exists(index=f"{index_prefix}*")


def test_a_failed_migration_is_one_line_and_exit_1(broken_app: str) -> None:
    load_mapper(broken_app).configure_indexes()
    result = esmapper(broken_app, "migrate")
    assert result.exit_code == 1
    assert "completed  versioned migration 1" in result.stdout
    assert "failed     versioned migration 2" in result.stdout
    line = one_error_line(result)
    assert line == "error: migration 2 (Always fails.) failed: ValueError: broken on purpose"

    again = esmapper(broken_app, "migrate")
    assert again.exit_code == 1
    assert "--retry-failed" in one_error_line(again)
    dry = esmapper(broken_app, "migrate", "--dry-run")
    assert dry.exit_code == 1 and "blocked" in dry.stdout


def test_a_held_lock_is_one_line_and_exit_2(
    app: str, es_client: Elasticsearch, index_prefix: str
) -> None:
    provider = LockProvider(es_client, index_prefix=index_prefix)
    with provider.acquire("migrations", timedelta(minutes=5)):
        result = esmapper(app, "migrate")
    assert result.exit_code == 2
    assert "lock 'migrations' is held by another process" in one_error_line(result)


def test_verbose_shows_the_logs(app: str) -> None:
    result = CliRunner().invoke(main, ["-v", "--app", app, "migrate"])
    assert result.exit_code == 0, result.output
    assert "INFO esmapper.migrations: migrations: success" in result.stderr


def run_cli(app_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = subprocess_env(app_dir)
    return subprocess.run(
        [sys.executable, "-m", "esmapper.cli", *args],
        cwd=app_dir, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def test_the_real_command_in_a_subprocess(app: str, app_dir: Path) -> None:
    migrated = run_cli(app_dir, "--app", app, "migrate")
    assert migrated.returncode == 0, migrated.stderr
    assert migrated.stdout.splitlines()[-1] == "migrations: success"
    assert migrated.stderr == ""

    status = run_cli(app_dir, "--app", app, "status")
    assert status.returncode == 0, status.stderr
    assert "pending migrations: none" in status.stdout

    down = run_cli(app_dir, "--app", app, "--url", "http://127.0.0.1:1", "status")
    assert down.returncode == 1
    assert down.stderr.startswith(
        "error: cannot reach Elasticsearch at http://127.0.0.1:1: the connection was refused "
        "(nothing listens there). Check that Elasticsearch is running"
    )
    assert len(down.stderr.splitlines()) == 1 and "Traceback" not in down.stderr


def test_the_installed_console_script(app: str, app_dir: Path) -> None:
    script = Path(sys.executable).with_name("esmapper")
    if not script.exists():  # pragma: no cover - depends on how the package was installed
        script_path = shutil.which("esmapper")
        if script_path is None:
            pytest.skip("the esmapper console script is not installed")
        script = Path(script_path)
    env = subprocess_env(app_dir, ESMAPPER_APP=app)
    done = subprocess.run(
        [str(script), "migrate", "--dry-run"],
        cwd=app_dir, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("plan (dry run, nothing changed):")


def test_reindex_and_migrate_with_the_real_reindex(
    app: str, app_dir: Path, es_url: str, index_prefix: str, es_client: Elasticsearch
) -> None:
    load_mapper(app).configure_indexes()
    assert esmapper(app, "migrate").exit_code == 0  # migration 1 adds one document
    v2 = f"{write_app(app_dir, es_url, index_prefix, version=2)}:mapper"

    status = esmapper(v2, "status")
    assert status.stdout.splitlines()[1].split()[-3:] == ["1/2", "1", "outdated"]
    assert "pending migrations: none" in status.stdout
    dry = esmapper(v2, "migrate", "--dry-run")
    assert dry.stdout.splitlines()[-1].split()[:2] == ["reindex", f"{index_prefix}employees"]

    result = esmapper(v2, "reindex", "employees")
    assert result.exit_code == 0, result.output
    alias = f"{index_prefix}employees"
    assert f"reindexed Employee: {alias}-v1 -> {alias}-v2, " in result.stdout
    assert list(es_client.indices.get_alias(name=alias).body) == [f"{alias}-v2"]
    assert es_client.count(index=alias)["count"] == 1
    again = esmapper(v2, "reindex", "Employee")
    assert again.stdout.splitlines()[-1] == f"Employee is up to date ({alias}-v2)"


def test_migrate_reindexes_outdated_indexes(
    app: str, app_dir: Path, es_url: str, index_prefix: str, es_client: Elasticsearch
) -> None:
    load_mapper(app).configure_indexes()
    assert esmapper(app, "migrate").exit_code == 0
    v2 = f"{write_app(app_dir, es_url, index_prefix, version=2)}:mapper"
    throttled = ["--batch-size", "2", "--requests-per-second", "50", "--stall-timeout", "60"]
    result = esmapper(v2, "migrate", *throttled)
    assert result.exit_code == 0, result.output
    alias = f"{index_prefix}employees"
    *_, bar, reindexed, done = result.stdout.splitlines()
    assert bar.startswith("reindex Employee")  # the progress bar (its label, off a terminal)
    assert reindexed.split()[:2] == ["reindexed", alias] and "(writes blocked " in reindexed
    assert done == "migrations: success"
    assert list(es_client.indices.get_alias(name=alias).body) == [f"{alias}-v2"]
    assert es_client.count(index=alias)["count"] == 1


def test_maintain_and_ids_with_the_real_modules(app: str) -> None:
    load_mapper(app).configure_indexes()
    maintained = esmapper(app, "maintain")
    assert maintained.exit_code == 0, maintained.output
    assert maintained.stdout.splitlines() == [
        "maintenance: 0 expired, 0 deleted, 0 alias changes",
        "index cleanup: deleted 0 indexes",
    ]
    audit = esmapper(app, "ids", "audit", "Employee")
    assert audit.exit_code == 1
    assert "id_fields" in one_error_line(audit)
