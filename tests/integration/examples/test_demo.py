"""The README's main job runs to completion (without serving) against the test server."""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
from pathlib import Path

from examples.webapp.app import create_app
from examples.webapp.models import Employee, build_mapper

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
    assert re.search(r"worker \d+ shows '.* \(renamed\)' at once: True", out)
    assert re.search(r"worker \d+ restored '.*' \(HTTP 303\)", out)

    # the first row a visitor sees is the sample's name, not the check's
    with build_mapper(es_url, index_prefix=index_prefix) as mapper:
        page = create_app(mapper, TESTING=True, SECRET_KEY="t").test_client().get("/employees")
        first = mapper.repository(Employee).find(sort="name", limit=1)[0]
    assert page.status_code == 200
    rows = re.findall(
        r'<tr>\s*<td><a href="/employees/[^"]+">([^<]+)</a>', page.get_data(as_text=True)
    )
    assert rows and rows[0] == html.escape(first.name, quote=True)
    assert "(renamed)" not in first.name and "(renamed)" not in page.get_data(as_text=True)
