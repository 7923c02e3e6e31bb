"""``esmapper indexes configure --begin-reindexing-outdated`` and ``esmapper jobs
reindex-worker`` through real subprocesses: an outdated model queued, then reindexed by
``--once``; an empty queue; ``--loop`` stopped by SIGTERM; errors in one line, non-zero."""

from __future__ import annotations

import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from elasticsearch import Elasticsearch

from esmapper.jobs import QueueCounts, RedisWorkQueue
from tests.unit.cli.apps import subprocess_env

APP = """
import esmapper as em


class Employee(em.Document):
    class Index:
        name = "employees"
        version = {version!r}
        settings = {{"number_of_shards": 1, "number_of_replicas": 0}}

    name: str = ""


queue = em.RedisWorkQueue({redis!r}, name={queue!r}) if {redis!r} else None
mapper = em.Mapper({url!r}, models=[Employee], index_prefix={prefix!r}, work_queue=queue)
"""


@pytest.fixture
def queue(redis_url: str) -> Iterator[RedisWorkQueue]:
    made = RedisWorkQueue(redis_url, name=f"esmapper-test:{uuid.uuid4().hex[:8]}")
    yield made
    made.client.delete(*made.keys.values())
    made.close()


def app(directory: Path, es_url: str, prefix: str, version: int, redis: str, queue: str) -> str:
    name = f"app_{uuid.uuid4().hex[:10]}"
    source = APP.format(version=version, redis=redis, queue=queue, url=es_url, prefix=prefix)
    (directory / f"{name}.py").write_text(source, encoding="utf-8")
    return f"{name}:mapper"


def cli(directory: Path, target: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "esmapper.cli", "--app", target, *args],
        cwd=directory, env=subprocess_env(directory), capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    return lines[0]


def test_configure_queues_the_outdated_model_and_the_worker_reindexes_it(
    tmp_path: Path,
    es_url: str,
    es_client: Elasticsearch,
    index_prefix: str,
    redis_url: str,
    queue: RedisWorkQueue,
) -> None:
    v1 = app(tmp_path, es_url, index_prefix, 1, redis_url, queue.name)
    v2 = app(tmp_path, es_url, index_prefix, 2, redis_url, queue.name)
    assert cli(tmp_path, v1, "indexes", "configure").returncode == 0
    es_client.index(index=f"{index_prefix}employees", id="e1", document={"name": "Ann"})

    configured = cli(tmp_path, v2, "indexes", "configure", "--begin-reindexing-outdated")
    assert configured.returncode == 0, configured.stderr
    assert "outdated, reindex queued for a worker: Employee" in configured.stdout
    assert queue.counts() == QueueCounts(pending=1, leased=0, failed=0)

    ran = cli(tmp_path, v2, "jobs", "reindex-worker", "--once")
    assert ran.returncode == 0, ran.stderr
    key = f"reindex:{index_prefix}employees:{index_prefix}employees-v2"
    assert ran.stdout.strip() == (
        f"{key}: reindexed ({index_prefix}employees-v1 -> {index_prefix}employees-v2)"
    )
    assert es_client.get(index=f"{index_prefix}employees", id="e1")["_index"].endswith("-v2")
    empty = cli(tmp_path, v2, "jobs", "reindex-worker", "--once")
    assert (empty.returncode, empty.stdout.strip()) == (0, "no reindex work item pending")


def test_the_loop_runs_items_until_sigterm(
    tmp_path: Path, es_url: str, index_prefix: str, redis_url: str, queue: RedisWorkQueue
) -> None:
    v1 = app(tmp_path, es_url, index_prefix, 1, redis_url, queue.name)
    v2 = app(tmp_path, es_url, index_prefix, 2, redis_url, queue.name)
    assert cli(tmp_path, v1, "indexes", "configure").returncode == 0
    assert cli(tmp_path, v2, "indexes", "configure", "--begin-reindexing-outdated").returncode == 0
    proc = subprocess.Popen(
        [sys.executable, "-m", "esmapper.cli", "--app", v2, "jobs", "reindex-worker", "--loop",
         "--idle", "0.2"],
        cwd=tmp_path, env=subprocess_env(tmp_path), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stderr is not None and proc.stdout is not None
        assert "running items until SIGTERM" in proc.stderr.readline()
        assert proc.stdout.readline().startswith(f"reindex:{index_prefix}employees:")
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "reindex-worker: stopped after 1 items" in err and "Traceback" not in err
    assert queue.counts() == QueueCounts(0, 0, 0)


def test_errors_are_one_line_and_non_zero(
    tmp_path: Path, es_url: str, es_client: Elasticsearch, index_prefix: str
) -> None:
    v1 = app(tmp_path, es_url, index_prefix, 1, "", "")
    v2 = app(tmp_path, es_url, index_prefix, 2, "", "")
    no_queue = cli(tmp_path, v2, "jobs", "reindex-worker")
    assert no_queue.returncode == 1
    assert "the mapper has no work queue" in one_error_line(no_queue)
    bad_lease = cli(tmp_path, v2, "jobs", "reindex-worker", "--lease", "0")
    assert bad_lease.returncode == 2 and "--lease" in one_error_line(bad_lease)
    bad_idle = cli(tmp_path, v2, "jobs", "reindex-worker", "--loop", "--idle", "-1")
    assert bad_idle.returncode == 2 and "--idle" in one_error_line(bad_idle)
    assert cli(tmp_path, v1, "indexes", "configure").returncode == 0
    refused = cli(tmp_path, v2, "indexes", "configure", "--begin-reindexing-outdated")
    assert refused.returncode == 1
    assert "Must specify a work queue" in one_error_line(refused)
    assert sorted(es_client.indices.get_alias(name=f"{index_prefix}employees").body) == [
        f"{index_prefix}employees-v1"
    ]
