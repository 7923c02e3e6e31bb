"""Fixtures for the Redis-backed cache and bus: a shared embedded Redis, a private one that
tests may kill, and worker processes driven line by line."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

import esmapper as em
from esmapper.testing import RedisServer
from tests.unit.cli.apps import subprocess_env

from .worker import Item

HERE = Path(__file__).resolve().parent


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    """A Redis of this test alone (the test may kill and restart it)."""
    with RedisServer() as server:
        yield server


def wait_ready(link: Any, timeout: float = 20.0) -> bool:
    """Poll ``link.ready()`` (``False`` while another thread synchronises the link)."""
    deadline = time.monotonic() + timeout
    while not link.ready():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def wait_leased(link: Any, timeout: float = 20.0) -> bool:
    """Poll ``link.lease_valid()``: the subscription holds its lease, so the in-process
    cache layer is in use."""
    deadline = time.monotonic() + timeout
    while not link.lease_valid():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


class WorkerProcess:
    """A ``worker.py`` subprocess; :meth:`call` sends one command and returns its result."""

    def __init__(self, es_url: str, redis_url: str, prefix: str) -> None:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.integration.distributed.worker",
                es_url,
                redis_url,
                prefix,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=subprocess_env(HERE),
            cwd=HERE.parents[2],
        )
        assert self._read() == {"ok": True}

    def _read(self) -> Any:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, f"the worker exited ({self.proc.poll()})"
        return json.loads(line)

    def send(self, op: str, **fields: Any) -> None:
        """Send a command without waiting for its answer (:meth:`receive` reads it)."""
        stdin: IO[str] | None = self.proc.stdin
        assert stdin is not None
        stdin.write(json.dumps({"op": op, **fields}) + "\n")
        stdin.flush()

    def receive(self) -> Any:
        answer = self._read()
        assert answer["ok"], answer.get("error")
        return answer.get("result")

    def call(self, op: str, **fields: Any) -> Any:
        self.send(op, **fields)
        return self.receive()

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write(json.dumps({"op": "quit"}) + "\n")
                self.proc.stdin.flush()
                self.proc.wait(20)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def spawn(es_url: str, index_prefix: str) -> Iterator[Any]:
    """``spawn(redis_url)`` starts a worker process on this test's indexes."""
    started: list[WorkerProcess] = []

    def start(redis_url: str) -> WorkerProcess:
        worker = WorkerProcess(es_url, redis_url, index_prefix)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.close()


@pytest.fixture
def items(es_url: str, index_prefix: str) -> Iterator[em.Repository[Item]]:
    """The items' repository of the test process (no Redis: the store's truth)."""
    with em.Mapper(es_url, models=[Item], index_prefix=index_prefix, redis="") as m:
        m.configure_indexes()
        yield m.repository(Item)
