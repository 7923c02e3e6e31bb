"""Locks are leases kept by a heartbeat: a live holder keeps its lock however long it works,
a dead one loses it within its ttl, at once for a contender on the same machine."""

from __future__ import annotations

import gc
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from elasticsearch import Elasticsearch

from esmapper import _liveness
from esmapper.errors import LockError
from esmapper.locks import LOCK_INDEX, LockProvider
from tests.unit.cli.apps import subprocess_env

TTL = timedelta(seconds=1.5)  # a heartbeat every 0.5 s


def until(what: str, condition: Callable[[], bool], seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.05)


def test_a_live_holder_keeps_its_lock_past_its_ttl(
    es_client: Elasticsearch, index_prefix: str
) -> None:
    locks = LockProvider(es_client, index_prefix=index_prefix)
    other = LockProvider(es_client, index_prefix=index_prefix)
    with locks.acquire("work", TTL) as lock:
        first = locks.holder("work")
        assert first is not None and first.owner == lock.owner
        until("the first expiry passed", lambda: datetime.now(timezone.utc) > first.expires_at)
        until("renewed", lambda: locks.holder("work").expires_at > first.expires_at)  # type: ignore[union-attr]
        assert other.try_acquire("work", TTL) is None  # past its first expiry: still held
        lock.check()
    assert locks.holder("work") is None  # released
    assert lock._heartbeat is not None and not lock._heartbeat.is_alive()


def test_a_dropped_lock_stops_being_renewed_and_lapses(
    es_client: Elasticsearch, index_prefix: str
) -> None:
    locks = LockProvider(es_client, index_prefix=index_prefix)
    lock = locks.acquire("dropped", TTL)
    beat = lock._heartbeat
    del lock
    gc.collect()
    assert beat is not None
    beat.join(timeout=10)
    assert not beat.is_alive()  # the heartbeat holds the lock weakly
    taken = locks.acquire("dropped", TTL, wait=timedelta(seconds=30))
    taken.release()


def test_the_heartbeat_finds_a_lock_taken_over(es_client: Elasticsearch, index_prefix: str) -> None:
    locks = LockProvider(es_client, index_prefix=index_prefix)
    lock = locks.acquire("broken", TTL)
    es_client.delete(index=f"{index_prefix}{LOCK_INDEX}", id="broken", refresh=True)

    def lost() -> bool:
        try:
            lock.check()
        except LockError:
            return True
        return False

    until("the heartbeat noticed", lost)
    with pytest.raises(LockError, match="was lost"):
        lock.renew()
    lock.release()  # not ours any more: nothing is deleted


@pytest.mark.skipif(_liveness.identity() is None, reason="needs Linux /proc")
def test_a_killed_holder_on_this_machine_is_taken_over_at_once(
    es_url: str, es_client: Elasticsearch, index_prefix: str, tmp_path: Path
) -> None:
    holder = subprocess.Popen(
        [
            sys.executable, "-c",
            "import sys, time\n"
            "from elasticsearch import Elasticsearch\n"
            "from esmapper.locks import LockProvider\n"
            f"LockProvider(Elasticsearch({es_url!r}), index_prefix={index_prefix!r})"
            ".acquire('killed')\n"  # the default ttl: 90 s
            "print('held', flush=True)\n"
            "time.sleep(120)\n",
        ],
        stdout=subprocess.PIPE, text=True, env=subprocess_env(tmp_path),
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        locks = LockProvider(es_client, index_prefix=index_prefix)
        alive = locks.holder("killed")
        assert alive is not None and not alive.gone and alive.live(datetime.now(timezone.utc))
        assert locks.try_acquire("killed") is None  # alive: not taken
    finally:
        holder.kill()
        holder.wait()
    dead = locks.holder("killed")
    assert dead is not None and dead.gone and "(its process is gone)" in str(dead)
    assert dead.expires_at > datetime.now(timezone.utc) + timedelta(seconds=30)  # not expired
    lock = locks.try_acquire("killed")  # no wait: taken over at once
    assert lock is not None
    lock.release()
