"""Each benchmark script runs end to end with a tiny N (no timing assertions): they never
rot. Scripts that need a server get the test server through ``ESMAPPER_URL``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"

SCRIPTS: dict[str, list[str]] = {
    "bench_models.py": ["--docs", "20", "--repeat", "1"],
    "bench_ids.py": ["--repeat", "1"],
    "bench_bulk.py": ["--docs", "20", "--repeat", "1"],
    "bench_codec_msgspec.py": ["--docs", "20", "--repeat", "1"],
    "bench_decode_msgspec.py": ["--hits", "20", "--repeat", "1"],
    "bench_cache.py": ["--reads", "5", "--repeat", "1"],
    "bench_repository.py": ["--docs", "20", "--repeat", "1", "--find", "10", "--find-repeat", "1"],
    "bench_custom_fields.py": ["--docs", "10", "--singles", "2", "--repeat", "1"],
    "bench_perf.py": ["--docs", "20", "--reads", "10", "--gets", "3", "--repeat", "1"],
    "bench_scale.py": ["--docs", "60", "--small", "20", "--batch", "10", "--threads", "2"],
    "bench_write_path.py": ["--docs", "20", "--repeat", "1"],
}


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_bench_script_runs(script: str, es_url: str, tmp_path: Path) -> None:
    args = list(SCRIPTS[script])
    if script == "bench_perf.py":
        pytest.importorskip("matplotlib")
        args += ["--chart", str(tmp_path / "chart.png")]
    env = {
        **os.environ,
        "ESMAPPER_URL": es_url,
        "PYTHONPATH": os.pathsep.join([str(BENCH.parent), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, str(BENCH / script), *args],
        cwd=BENCH,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip()
    if script == "bench_perf.py":
        assert (tmp_path / "chart.png").stat().st_size > 0


def test_every_bench_script_has_a_smoke_run() -> None:
    scripts = {p.name for p in BENCH.glob("bench_*.py")}
    assert scripts - set(SCRIPTS) <= {"bench_session.py"}  # fixed sizes: too slow for a smoke
