"""``esmapper indexes configure|list|mapping|stats`` against the test server (issue 30,
item 4): configure once for processes starting together (``--force`` again, named
models always), list the models' physical indexes, show mappings and stats; bad input is
one ``error:`` line and a non-zero exit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from elasticsearch import Elasticsearch

from esmapper.cli import main
from tests.unit.cli.apps import write_app


@pytest.fixture
def app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, es_url: str, index_prefix: str) -> str:
    monkeypatch.syspath_prepend(str(tmp_path))
    return f"{write_app(tmp_path, es_url, index_prefix)}:mapper"


def esmapper(app: str, *args: str) -> Result:
    return CliRunner().invoke(main, ["--app", app, "indexes", *args])


def one_error_line(result: Result) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.output + result.stderr
    return lines[0]


def test_configure_once_then_marked_then_forced(app: str, index_prefix: str) -> None:
    first = esmapper(app, "configure")
    assert first.exit_code == 0, first.output
    assert [line.split() for line in first.stdout.splitlines()] == [
        ["MODEL", "ALIAS", "INDEX", "ACTION"],
        ["Employee", f"{index_prefix}employees", f"{index_prefix}employees-v1", "created"],
    ]
    marked = esmapper(app, "configure")
    assert marked.exit_code == 0
    assert marked.stdout.startswith("already configured (marked done less than 5 minutes ago)")
    forced = esmapper(app, "configure", "--force")
    assert forced.exit_code == 0 and forced.stdout.rstrip().endswith("unchanged")
    named = esmapper(app, "configure", "employees")
    assert named.exit_code == 0 and named.stdout.rstrip().endswith("unchanged")


def test_list_mapping_and_stats(app: str, index_prefix: str, es_client: Elasticsearch) -> None:
    p = index_prefix
    missing = esmapper(app, "list")
    assert missing.exit_code == 0
    assert missing.stdout.splitlines()[1].split() == ["Employee", "versioned", "1", "-",
                                                       "(missing)"]  # fmt: skip
    no_mapping = esmapper(app, "mapping", "Employee")
    assert no_mapping.exit_code == 1
    assert "has no index yet" in one_error_line(no_mapping)
    assert esmapper(app, "configure").exit_code == 0
    es_client.index(index=f"{p}employees", document={"name": "a"}, refresh=True)

    listed = esmapper(app, "list")
    assert listed.stdout.splitlines()[1].split() == [
        "Employee", "versioned", "1", f"{p}employees-v1", f"{p}employees"
    ]  # fmt: skip

    server = esmapper(app, "mapping", "employee")
    assert server.exit_code == 0, server.output
    shown = json.loads(server.stdout)
    assert list(shown) == [f"{p}employees-v1"]
    assert shown[f"{p}employees-v1"]["properties"]["name"]["type"] == "keyword"
    declared = esmapper(app, "mapping", "Employee", "--declared")
    assert json.loads(declared.stdout)["properties"]["name"] == {"type": "keyword"}

    stats = esmapper(app, "stats")
    assert stats.exit_code == 0, stats.output
    header, row = stats.stdout.splitlines()
    assert header.split() == ["MODEL", "INDEX", "DOCS", "DELETED", "SIZE"]
    assert row.split()[:4] == ["Employee", f"{p}employees-v1", "1", "0"]


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (("mapping", "Nope"), 1, "unknown model 'Nope'"),
        (("stats", "Nope"), 1, "unknown model 'Nope'"),
        (("configure", "Nope"), 1, "unknown model 'Nope'"),
        (("mapping",), 2, "Missing argument 'MODEL'"),
        (("configure", "--lock-wait", "x"), 2, "--lock-wait"),
        (("configure", "Employee", "--force"), 2, "--force applies to every model"),
        (("list", "--nope"), 2, "No such option"),
    ],
)
def test_bad_input_is_one_error_line(app: str, args: tuple[str, ...], code: int, says: str) -> None:
    result = esmapper(app, *args)
    assert result.exit_code == code, result.output
    assert says in one_error_line(result)
