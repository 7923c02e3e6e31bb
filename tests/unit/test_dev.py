"""``python3 dev.py check`` gates lint and types, and CI runs it before the tests."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import dev

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def this_python(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run the checks with the interpreter running the tests (it has ruff and mypy)."""
    monkeypatch.setattr(dev, "PYTHON", Path(sys.executable))


def test_ci_runs_the_checks_before_the_tests() -> None:
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    commands = [line for line in lines if line.startswith("python3 dev.py")]
    assert commands == ["python3 dev.py check", "python3 dev.py test -q -p no:cacheprovider"]


def test_check_runs_ruff_check_ruff_format_and_mypy() -> None:
    tools = [command[2:4] for command in dev.checks()]
    assert tools == [["ruff", "check"], ["ruff", "format"], ["mypy"]]
    assert "--check" in dev.checks()[1]


@pytest.mark.usefixtures("this_python")
def test_check_passes_on_this_tree() -> None:
    assert dev.check() == 0


@pytest.mark.usefixtures("this_python")
def test_check_fails_on_a_lint_error_and_stops_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import os\n")  # unused import (F401)
    monkeypatch.setattr(dev, "LINTED", (str(bad),))
    assert dev.check() != 0
    out = capsys.readouterr().out
    assert "$ ruff check" in out
    assert "$ mypy" not in out  # stopped at the first failure


def test_an_unknown_command_prints_the_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert dev.main(["lint"]) == 2
    assert "python3 dev.py check" in capsys.readouterr().out
