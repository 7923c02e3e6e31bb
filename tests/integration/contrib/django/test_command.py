"""``manage.py esmapper ...`` is the esmapper command line with the mapper of the settings."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

import esmapper as em

from .documents import Note

ROOT = Path(__file__).resolve().parents[4]


def test_migrate_then_status_through_manage_py(es_url: str, index_prefix: str) -> None:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.integration.contrib.django.settings",
        "ESMAPPER_URL": es_url,
        "ESMAPPER_INDEX_PREFIX": index_prefix,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    manage = [sys.executable, "-m", "django", "esmapper"]
    migrated = subprocess.run(
        [*manage, "migrate"], env=env, capture_output=True, text=True, check=False
    )
    assert migrated.returncode == 0, migrated.stderr
    with em.Mapper(es_url, models=[Note], index_prefix=index_prefix) as mapper:
        assert mapper.client.indices.exists_alias(name=f"{index_prefix}django_notes")
    status = subprocess.run(
        [*manage, "status"], env=env, capture_output=True, text=True, check=False
    )
    assert status.returncode == 0, status.stderr
    assert "django_notes" in status.stdout
    wrong = subprocess.run(
        [*manage, "reindex", "Nothing"], env=env, capture_output=True, text=True, check=False
    )
    assert wrong.returncode != 0 and wrong.stderr.startswith("error: ")
    assert "Traceback" not in wrong.stderr
    usage = subprocess.run(
        [*manage, "--help"], env=env, capture_output=True, text=True, check=False
    )
    assert usage.returncode == 0
    assert "migrate" in usage.stdout


def test_call_command_runs_the_cli_with_the_process_mapper(
    esmapper_django_mapper: em.Mapper, capsys: pytest.CaptureFixture[str]
) -> None:
    call_command("esmapper", "status")
    assert "django_notes" in capsys.readouterr().out
    with pytest.raises(CommandError) as raised:
        call_command("esmapper", "reindex", "Nothing")
    assert "unknown model 'Nothing'" in str(raised.value)


def test_django_admin_options_are_django_s(es_url: str, index_prefix: str, tmp_path: Path) -> None:
    """``django-admin esmapper status --settings=... --pythonpath=...``: Django's own options
    choose the project (applied before the command runs), and are not passed to the CLI."""
    env = {
        **{k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"},
        "ESMAPPER_URL": es_url,
        "ESMAPPER_INDEX_PREFIX": index_prefix,
    }
    env.pop("PYTHONPATH", None)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "django",
            "esmapper",
            "status",
            "--settings=tests.integration.contrib.django.settings",
            "--pythonpath",
            str(ROOT),
        ],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "django_notes" in done.stdout


def test_call_command_passes_the_cli_s_options_through(
    esmapper_django_mapper: em.Mapper, es_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every argument of ``call_command("esmapper", ...)`` is the CLI's, as after
    ``manage.py esmapper``: its options (``--url`` before the command, ``--dry-run`` after
    it) and its ``--help``, not Django's parser's."""
    call_command("esmapper", "--url", es_url, "migrate", "--dry-run")
    call_command("esmapper", "status", "--help")
    out = capsys.readouterr().out
    assert "Usage: esmapper status" in out
    with pytest.raises(CommandError, match="No such option"):
        call_command("esmapper", "status", "--colour")
