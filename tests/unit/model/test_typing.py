"""Type checkers see models as typed, keyword-only classes (``typing_check.py``)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed")
def test_mypy_strict_accepts_the_typed_snippet_and_reports_the_marked_errors(
    tmp_path: Path,
) -> None:
    # Run outside the repository so that no project config applies: plain --strict (which
    # makes a "type: ignore" that is no longer needed an error). The cache lives in the
    # system temp dir: the first run takes a few seconds, later runs a fraction of one.
    cache = Path(tempfile.gettempdir()) / "esmapper-typing-check-mypy-cache"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--follow-imports=silent",
            "--no-error-summary",
            f"--cache-dir={cache}",
            str(HERE / "typing_check.py"),
        ],
        cwd=tmp_path,
        env={**os.environ, "MYPYPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
