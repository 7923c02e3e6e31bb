"""The job commands through a real subprocess: ``snapshot``, ``indexes cleanup``,
``status --health`` and ``maintain --loop`` stopped by SIGTERM."""

from __future__ import annotations

import queue
import signal
import subprocess
import sys
import threading
from datetime import timedelta
from pathlib import Path
from typing import IO

import pytest
from elasticsearch import Elasticsearch

from esmapper._cli_app import load_mapper
from esmapper.locks import LockProvider
from esmapper.testing.faults import FaultProxy
from tests.integration.jobs.conftest import repository
from tests.unit.cli.apps import subprocess_env, write_app

__all__ = ["repository"]


@pytest.fixture
def app_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


@pytest.fixture
def app(app_dir: Path, es_url: str, index_prefix: str) -> str:
    return f"{write_app(app_dir, es_url, index_prefix)}:mapper"


def cli(app_dir: Path, app: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "esmapper.cli", "--app", app, *args],
        cwd=app_dir, env=subprocess_env(app_dir), capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    return lines[0]


def test_snapshot_create_and_cleanup(
    app_dir: Path, app: str, repository: str, index_prefix: str
) -> None:
    load_mapper(app).configure_indexes()
    made = cli(app_dir, app, "snapshot", "create", "--repository", repository)
    assert made.returncode == 0, made.stderr
    (line,) = made.stdout.splitlines()
    assert line.startswith(f"snapshot {repository}/snapshot-")
    assert line.split(": ")[1].startswith("SUCCESS, 1 indexes, 1 shards")

    dry = cli(app_dir, app, "snapshot", "cleanup", "--repository", repository,
              "--max-age", "0s", "--dry-run")  # fmt: skip
    assert dry.returncode == 0, dry.stderr
    kept, summary = dry.stdout.splitlines()
    assert kept.startswith(f"kept {repository}/snapshot-") and kept.endswith(
        ": the newest successful snapshot"
    )
    assert summary == f"snapshot cleanup: would delete 0 of 1 snapshots in {repository}"


def test_snapshot_failures_are_one_line(
    app_dir: Path, app: str, repository: str, es_client: Elasticsearch, index_prefix: str
) -> None:
    unknown = cli(app_dir, app, "snapshot", "create", "--repository", "no-such-repo")
    assert unknown.returncode == 1
    assert "unknown snapshot repository 'no-such-repo'" in one_error_line(unknown)

    locks = LockProvider(es_client, index_prefix=index_prefix)
    with locks.acquire(f"snapshots:{repository}", timedelta(minutes=5)):
        held = cli(app_dir, app, "snapshot", "create", "--repository", repository)
    assert held.returncode == 2
    assert f"lock 'snapshots:{repository}' is held by another process" in one_error_line(held)

    for bad in (["--max-age", "30x"], ["--max-age", "-1d"], []):
        refused = cli(app_dir, app, "snapshot", "cleanup", "--repository", repository, *bad)
        assert refused.returncode == 2, refused.stderr
        assert "--max-age" in refused.stderr and "Traceback" not in refused.stderr
    name = cli(app_dir, app, "snapshot", "create", "--name", "Upper-%Y")
    assert name.returncode == 2 and "must be lowercase" not in name.stdout
    assert "is invalid" in name.stderr and "Traceback" not in name.stderr


def test_every_command_logs_what_it_sends_and_a_summary(
    app_dir: Path, app: str, repository: str
) -> None:
    done = cli(app_dir, app, "-vv", "snapshot", "create", "--repository", repository,
               "--name", "logged")  # fmt: skip
    assert done.returncode == 0, done.stderr
    err = done.stderr
    assert f"DEBUG esmapper.jobs.snapshot-create: PUT /_snapshot/{repository}/logged" in err
    assert '"metadata":{"taken_by":"esmapper"}' in err
    assert "INFO esmapper.jobs: snapshot-create: success: snapshot" in err
    assert "INFO esmapper.cli: esmapper snapshot: done" in err


def test_indexes_cleanup_is_a_dry_run_without_yes(
    app_dir: Path, app: str, es_client: Elasticsearch, index_prefix: str
) -> None:
    load_mapper(app).configure_indexes()
    old = f"{index_prefix}ext-2020.01.15"
    es_client.indices.create(index=old)
    args = ["indexes", "cleanup", "--pattern", f"{index_prefix}ext-*", "--max-age", "30d"]
    dry = cli(app_dir, app, *args)
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.splitlines() == [
        "dry run: nothing is deleted without --yes",
        f"  dated     {old} (expired 2020-02-14 (max age 30d))",
        "would delete 1 indexes (0 expired partitions, 0 leftover indexes, 1 dated); "
        "run again with --yes to delete",
    ]
    assert es_client.indices.exists(index=old)
    done = cli(app_dir, app, *args, "--yes")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"deleted {old}", "index cleanup: deleted 1 indexes"]
    assert not es_client.indices.exists(index=old)
    refused = cli(app_dir, app, "indexes", "cleanup", "--pattern", "x-*")
    assert refused.returncode == 2 and "--pattern needs --max-age" in refused.stderr


def test_status_health_exit_codes(app_dir: Path, app: str, es_url: str, index_prefix: str) -> None:
    load_mapper(app).configure_indexes()
    healthy = cli(app_dir, app, "status", "--health")
    assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    lines = healthy.stdout.splitlines()
    assert lines[0].startswith("cluster ")
    assert lines[2].split()[:3] == [
        "Employee",
        f"{index_prefix}employees",
        f"{index_prefix}employees-v1",
    ]
    v2 = f"{write_app(app_dir, es_url, index_prefix, version=2)}:mapper"
    pending = cli(app_dir, v2, "status", "--health")
    assert pending.returncode == 1
    assert "attention: Employee: reindex pending" in pending.stdout
    assert one_error_line(pending).startswith(
        "error: 1 issue(s) need attention; first: attention: Employee: reindex pending"
    )


class Lines:
    """A subprocess's stderr read line by line in a thread, to wait for a line."""

    def __init__(self, stream: IO[str]) -> None:
        self.seen: list[str] = []
        self._queue: queue.Queue[str] = queue.Queue()
        self._reader = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._reader.start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self._queue.put(line)

    def wait_for(self, text: str, timeout: float = 60) -> None:
        while not any(text in line for line in self.seen):
            self.seen.append(self._queue.get(timeout=timeout))

    def rest(self) -> str:
        """Everything written, once the stream ended (the process exited)."""
        self._reader.join(timeout=60)
        while not self._queue.empty():
            self.seen.append(self._queue.get())
        return "".join(self.seen)


def _loop(app_dir: Path, app: str, proxy: FaultProxy, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "esmapper.cli", "--app", app, "--url", proxy.url, "-v",
         "maintain", "--loop", "--interval", "1h", *args],
        cwd=app_dir, env=subprocess_env(app_dir), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _finish(process: subprocess.Popen[str]) -> str:
    """The stdout of ``process`` once it exited (its stderr is read by :class:`Lines`)."""
    assert process.stdout is not None
    out = process.stdout.read()
    process.wait(timeout=60)
    return out


def test_sigterm_lets_the_run_in_progress_finish_then_exits_0(
    app_dir: Path, app: str, proxy: FaultProxy, index_prefix: str
) -> None:
    load_mapper(app).configure_indexes()
    # the run's first request (taking the maintenance lock) waits at the proxy
    held = proxy.hold(method="PUT", path=rf"^/{index_prefix}esmapper-locks/_doc/maintenance$")
    process = _loop(app_dir, app, proxy)
    try:
        assert held.wait_arrived(60), "the run did not start"
        err = Lines(process.stderr)  # type: ignore[arg-type]
        process.send_signal(signal.SIGTERM)
        err.wait_for("SIGTERM: stopping after the run in progress")
        held.forward()  # the run goes on, and ends
        out = _finish(process)
    finally:
        process.kill()
    assert process.returncode == 0, err.rest()
    assert out.splitlines() == [
        "maintenance: 0 expired, 0 deleted, 0 alias changes",
        "index cleanup: deleted 0 indexes",
    ]
    assert "maintain: stopped after 1 runs" in err.rest()


def test_a_second_signal_cancels_the_run_exit_3(
    app_dir: Path, app: str, proxy: FaultProxy, index_prefix: str
) -> None:
    load_mapper(app).configure_indexes()
    held = proxy.hold(method="PUT", path=rf"^/{index_prefix}esmapper-locks/_doc/maintenance$")
    process = _loop(app_dir, app, proxy)
    try:
        assert held.wait_arrived(60), "the run did not start"
        err = Lines(process.stderr)  # type: ignore[arg-type]
        process.send_signal(signal.SIGTERM)
        err.wait_for("SIGTERM: stopping after the run in progress")
        process.send_signal(signal.SIGINT)
        err.wait_for("SIGINT again: cancelling the job in progress")
        held.forward()
        out = _finish(process)
    finally:
        process.kill()
    assert process.returncode == 3, err.rest()
    assert "index cleanup" not in out  # no job starts after a cancel
    assert "error: maintain cancelled during run 1" in err.rest()


def test_repeated_failures_end_the_loop_non_zero(app_dir: Path, app: str) -> None:
    done = cli(app_dir, app, "--url", "http://127.0.0.1:1", "maintain", "--loop",
               "--interval", "10ms", "--max-failures", "2")  # fmt: skip
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: maintain gave up after 2 failed runs in a row; last: "
                           "maintenance failed: cannot reach Elasticsearch")  # fmt: skip
    assert "Traceback" not in done.stderr


def test_a_single_maintain_run_with_its_lock_held_elsewhere_exits_2(
    app_dir: Path, app: str, es_client: Elasticsearch, index_prefix: str
) -> None:
    load_mapper(app).configure_indexes()
    with LockProvider(es_client, index_prefix=index_prefix).acquire("maintenance"):
        held = cli(app_dir, app, "maintain")
    assert held.returncode == 2
    assert "maintenance skipped: lock 'maintenance' is held by another process" in (
        one_error_line(held)
    )
    assert held.stdout == "index cleanup: deleted 0 indexes\n"  # the other job still ran


def test_maintain_with_snapshots(app_dir: Path, app: str, repository: str) -> None:
    load_mapper(app).configure_indexes()
    done = cli(app_dir, app, "maintain", "--snapshot-repository", repository,
               "--snapshot-max-age", "30d")  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[2].startswith(f"snapshot {repository}/snapshot-") and "SUCCESS" in lines[2]
    assert lines[3] == f"snapshot cleanup: deleted 0 of 1 snapshots in {repository}"
    refused = cli(app_dir, app, "maintain", "--snapshot-max-age", "30d")
    assert refused.returncode == 2
    assert "--snapshot-max-age needs --snapshot-repository" in refused.stderr
