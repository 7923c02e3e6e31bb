"""``esmapper fields list|add|rename|remove MODEL --tenant T`` against the test server."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from esmapper.cli import main
from tests.unit.cli.apps import subprocess_env

APP = """
import esmapper as em


class Employee(em.Document, em.HasCustomFields):
    class Index:
        name = "cli_employees"
        tenant_field = "company_id"
        settings = {{"number_of_shards": 1, "number_of_replicas": 0}}

    company_id: str = ""


class Plain(em.Document):
    class Index:
        name = "cli_plain"

    name: str = ""


mapper = em.Mapper({url!r}, models=[Employee, Plain], index_prefix={prefix!r})
"""


@pytest.fixture
def app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, es_url: str, index_prefix: str) -> str:
    monkeypatch.syspath_prepend(str(tmp_path))
    name = f"cfapp_{uuid.uuid4().hex[:10]}"
    (tmp_path / f"{name}.py").write_text(APP.format(url=es_url, prefix=index_prefix))
    result = CliRunner().invoke(main, ["--app", f"{name}:mapper", "migrate"])
    assert result.exit_code == 0, result.output
    return f"{name}:mapper"


def esmapper(app: str, *args: str) -> Result:
    return CliRunner().invoke(main, ["--app", app, "fields", *args])


def one_error_line(result: Result) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.output + result.stderr
    return lines[0]


def test_add_list_rename_remove(app: str) -> None:
    added = esmapper(app, "add", "Employee", "--tenant", "acme", "Level", "int",
                     "--description", "Seniority")  # fmt: skip
    assert added.exit_code == 0, added.output
    assert added.stdout.strip() == "added: Level (int) in idx.int-1"
    again = esmapper(app, "add", "employee", "-t", "acme", "level", "int")
    assert again.stdout.strip() == "exists: Level (int) in idx.int-1"
    assert esmapper(app, "add", "Employee", "-t", "acme", "Team", "string").exit_code == 0

    listed = esmapper(app, "list", "Employee", "--tenant", "acme")
    assert listed.exit_code == 0, listed.output
    header, *rows = listed.stdout.splitlines()
    assert header.split() == ["NAME", "TYPE", "SLOT", "MODE", "ORDER", "STATE", "DESCRIPTION"]
    assert [r.split()[:3] for r in rows] == [["Level", "int", "idx.int-1"],
                                             ["Team", "string", "idx.string-1"]]  # fmt: skip
    assert rows[0].endswith("Seniority")

    renamed = esmapper(app, "rename", "Employee", "--tenant", "acme", "Level", "Grade")
    assert renamed.stdout.strip() == "renamed: Level -> Grade (idx.int-1)"
    removed = esmapper(app, "remove", "Employee", "--tenant", "acme", "Grade")
    assert removed.stdout.strip() == "removed: Grade (idx.int-1; name freed, slot kept)"
    assert esmapper(app, "add", "Employee", "-t", "acme", "Grade", "int").stdout.strip() == (
        "added: Grade (int) in idx.int-2"
    )
    everything = esmapper(app, "list", "Employee", "-t", "acme", "--all").stdout.splitlines()
    assert sorted(r.split()[5] for r in everything[1:]) == ["active", "active", "deleted"]
    hard = esmapper(app, "remove", "Employee", "-t", "acme", "Team", "--hard")
    assert hard.stdout.strip() == "removed: Team (idx.string-1; name and slot freed)"
    assert esmapper(app, "list", "Employee", "-t", "globex").stdout.strip() == (
        "Employee tenant 'globex' has no custom fields"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["add", "Employee", "-t", "acme", "Level", "integer"], "unknown type 'integer'"),
        (["add", "Nope", "-t", "acme", "Level", "int"], "unknown model 'Nope'"),
        (["add", "Plain", "-t", "acme", "Level", "int"], "Plain has no custom fields"),
        (["rename", "Employee", "-t", "acme", "Missing", "X"], "no custom field 'Missing'"),
        (["remove", "Employee", "-t", "acme", "Missing"], "no custom field 'Missing'"),
        (["add", "Employee", "-t", "acme", " padded", "int"], "leading or trailing spaces"),
        (["add", "Employee", "-t", "acme", "a.b", "int"], "cannot be named in a filter"),
        (["add", "Employee", "-t", "acme", "Level:5", "int"], "cannot be named in a filter"),
        (["add", "Employee", "-t", "acme", "_id", "int"], "cannot be named in a filter"),
    ],
)
def test_errors_are_one_line(app: str, args: list[str], message: str) -> None:
    result = esmapper(app, *args)
    assert result.exit_code == 1
    line = one_error_line(result)
    assert message in line
    assert "could not be found" not in line  # said once, not wrapped in another message


def test_a_type_clash_and_a_real_subprocess(app: str, tmp_path: Path) -> None:
    assert esmapper(app, "add", "Employee", "-t", "acme", "Level", "int").exit_code == 0
    done = subprocess.run(
        [sys.executable, "-m", "esmapper.cli", "--app", app, "fields", "add", "Employee",
         "--tenant", "acme", "level", "string"],
        cwd=tmp_path, env=subprocess_env(tmp_path), capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.startswith("error: custom field 'level' of tenant 'acme' already exists")
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    missing = esmapper(app, "list", "Employee")
    assert missing.exit_code == 2 and "--tenant" in missing.output


def test_fields_remove_of_a_missing_field_in_a_real_subprocess(app: str, tmp_path: Path) -> None:
    """The error is said once: one ``error:`` line, exit 1, no traceback (it was wrapped in
    'Document "..." could not be found')."""
    done = subprocess.run(
        [sys.executable, "-m", "esmapper.cli", "--app", app, "fields", "remove", "Employee",
         "--tenant", "acme", "Missing"],
        cwd=tmp_path, env=subprocess_env(tmp_path), capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr == "error: Employee tenant 'acme' has no custom field 'Missing'\n"
    assert done.stdout == ""
