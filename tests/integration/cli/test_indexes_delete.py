"""``esmapper indexes delete MODEL... [--yes]`` through a real subprocess."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from elasticsearch import Elasticsearch

from tests.unit.cli.apps import subprocess_env

APP = """
import esmapper as em

SETTINGS = {{"number_of_shards": 1, "number_of_replicas": 0}}


class Employee(em.Document):
    class Index:
        name = "employees"
        settings = SETTINGS

    name: str = ""


class EmployeeArchive(em.Document):
    class Index:
        name = "employees-archive"
        settings = SETTINGS

    name: str = ""


class Shift(em.Document, em.HasDates):
    class Index:
        name = "shifts"
        kind = "monthly"
        settings = SETTINGS


mapper = em.Mapper({url!r}, models=[Employee, EmployeeArchive, Shift], index_prefix={prefix!r})
"""


@pytest.fixture
def app(tmp_path: Path, es_url: str, index_prefix: str) -> str:
    name = f"app_{uuid.uuid4().hex[:10]}"
    source = APP.format(url=es_url, prefix=index_prefix)
    (tmp_path / f"{name}.py").write_text(source, encoding="utf-8")
    return f"{name}:mapper"


def run_cli(app_dir: Path, app: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "esmapper.cli", "--app", app, *args],
        cwd=app_dir, env=subprocess_env(app_dir), capture_output=True, text=True, timeout=60,
        check=False,
    )  # fmt: skip


def _indexes(client: Elasticsearch, prefix: str) -> list[str]:
    body = client.indices.get(index=f"{prefix}*", allow_no_indices=True).body
    names = (name.removeprefix(prefix) for name in body)
    return sorted(name for name in names if not name.startswith("esmapper-"))


def test_a_dry_run_then_the_delete(
    app: str, tmp_path: Path, es_client: Elasticsearch, index_prefix: str
) -> None:
    p = index_prefix
    assert run_cli(tmp_path, app, "migrate").returncode == 0
    assert _indexes(es_client, p) == ["employees-archive-v1", "employees-v1"]

    dry = run_cli(tmp_path, app, "indexes", "delete", "Employee", "shifts")
    assert dry.returncode == 0, dry.stderr
    assert dry.stderr == ""
    assert dry.stdout.splitlines() == [
        "dry run: nothing is deleted without --yes",
        f"Employee ({p}employees):",
        f"  index     {p}employees-v1",
        f"  alias     {p}employees",
        f"Shift ({p}shifts):",
        f"  template  {p}shifts-v1-template",
        "would delete: 1 index, 1 alias, 1 template; run again with --yes to delete",
    ]
    assert _indexes(es_client, p) == ["employees-archive-v1", "employees-v1"]

    done = run_cli(tmp_path, app, "indexes", "delete", "Employee", "shifts", "--yes")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1] == f"  index     {p}employees-v1"
    assert done.stdout.splitlines()[0] == f"Employee ({p}employees): deleted"
    assert done.stdout.splitlines()[-1] == "deleted: 1 index, 1 alias, 1 template"
    assert _indexes(es_client, p) == ["employees-archive-v1"]  # shares the prefix: kept
    assert es_client.indices.exists_alias(name=f"{p}employees-archive")
    assert not es_client.indices.exists_index_template(name=f"{p}shifts-v1-template")

    again = run_cli(tmp_path, app, "indexes", "delete", "employee", "--yes")
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines() == [
        f"Employee ({p}employees): nothing to delete",
        "deleted: 0 indexes, 0 aliases, 0 templates",
    ]


def test_an_unknown_model_is_one_error_line_and_deletes_nothing(
    app: str, tmp_path: Path, es_client: Elasticsearch, index_prefix: str
) -> None:
    assert run_cli(tmp_path, app, "migrate").returncode == 0

    bad = run_cli(tmp_path, app, "indexes", "delete", "Employee", "Nope", "--yes")

    assert bad.returncode == 1
    assert bad.stderr == (
        "error: unknown model 'Nope' (models: Employee, EmployeeArchive, Shift)\n"
    )
    assert bad.stdout == ""
    assert "employees-v1" in _indexes(es_client, index_prefix)

    missing = run_cli(tmp_path, app, "indexes", "delete")
    assert missing.returncode == 2 and "Missing argument" in missing.stderr
