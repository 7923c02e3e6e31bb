"""The README's main job runs to completion (without serving) against the test server."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_demo_runs_to_completion(es_url: str, index_prefix: str) -> None:
    env = {**os.environ, "ESMAPPER_URL": es_url}
    done = subprocess.run(
        [sys.executable, "-m", "examples.demo", "--no-serve", "--prefix", index_prefix],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert "stale save refused: VersionConflictError" in out
    assert "IdTooLongError" in out or "512" in out
    assert "migrations: success" in out
    # (the status table's columns are as wide as the longest model name)
    assert re.search(rf"Employee +{re.escape(index_prefix)}directory_employees", out)
    assert "CustomFieldDefinition" in out  # the per-team custom fields' definitions
    assert "sample data: 40 employees" in out
    assert "Traceback" not in done.stderr
