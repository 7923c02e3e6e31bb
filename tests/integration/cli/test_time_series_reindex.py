"""``status``, ``migrate --dry-run`` and ``reindex`` on a time-series model after a version
bump."""

from __future__ import annotations

import datetime as dt
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from esmapper._cli_app import load_mapper
from esmapper.cli import main

APP = """
import datetime as dt

import esmapper as em


class Log(em.Document, em.HasDates):
    class Index:
        name = "clogs"
        kind = "daily"
        version = {version}
        settings = {{"number_of_shards": 1, "number_of_replicas": 0}}

    message: str = ""


mapper = em.Mapper({url!r}, models=[Log], index_prefix={prefix!r})
"""


def _app(directory: Path, url: str, prefix: str, version: int) -> str:
    name = f"app_{uuid.uuid4().hex[:10]}"
    source = APP.format(url=url, prefix=prefix, version=version)
    (directory / f"{name}.py").write_text(source, encoding="utf-8")
    return f"{name}:mapper"


def esmapper(app: str, *args: str) -> Result:
    return CliRunner().invoke(main, ["--app", app, *args])


def test_an_outdated_daily_model_is_reported_and_reindexed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, es_url: str, index_prefix: str
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    p = index_prefix
    v1 = _app(tmp_path, es_url, p, 1)
    mapper = load_mapper(v1)
    mapper.configure_indexes()
    (log,) = mapper.models
    now = dt.datetime.now(dt.timezone.utc)
    mapper.repository(log).add(
        [log(message="m", created_utc=now - dt.timedelta(days=d)) for d in (0, 1)],
        consistency="immediate",
    )
    v2 = _app(tmp_path, es_url, p, 2)
    assert esmapper(v2, "migrate", "--no-reindex").exit_code == 0  # puts the v2 template

    status = esmapper(v2, "status")
    assert status.exit_code == 0, status.output
    row = status.stdout.splitlines()[1].split()
    assert row[:3] == ["Log", f"{p}clogs", f"{p}clogs-v2-*"]
    assert row[-5:] == ["partitions)", "1/2", "(daily)", "2", "outdated"]
    dry = esmapper(v2, "migrate", "--dry-run")
    assert f"reindex         {p}clogs (" in dry.stdout
    assert "partitions at version 1 serve" in dry.stdout

    done = esmapper(v2, "reindex", "Log")
    assert done.exit_code == 0, done.output
    assert done.stdout.splitlines()[-1].startswith(
        f"reindexed Log: {p}clogs-v1-* -> {p}clogs-v2-* (2 partitions), 2 copied, "
    )
    assert "old partitions deleted" in done.stdout
    assert esmapper(v2, "status").stdout.splitlines()[1].split()[-3:] == ["(daily)", "2", "ok"]
    again = esmapper(v2, "reindex", "Log")
    assert again.stdout.strip() == f"Log is up to date ({p}clogs-v2-*)"
