"""Soak: two processes x N threads reading (cached get) and writing (save, remove, add again)
a small hot set through one Redis; every read is checked against the writes of its moment.

``ESMAPPER_SOAK_SECONDS`` (default 4) and ``ESMAPPER_SOAK_THREADS`` (default 3 per process)
size it; the figures are printed (``pytest -s``) and go to docs/reliability.md.
"""

from __future__ import annotations

import os
import random
import signal
import time
from typing import Any

import esmapper as em
from esmapper.testing import RedisServer

from .history import Read, Write, check, from_json
from .worker import Item


def test_soak_no_stale_read(spawn: Any, redis_url: str, items: em.Repository[Item]) -> None:
    seconds = float(os.environ.get("ESMAPPER_SOAK_SECONDS") or 4)
    threads = int(os.environ.get("ESMAPPER_SOAK_THREADS") or 3)
    ids = [f"s{i}" for i in range(2 * threads)]
    initial = []
    for id in ids:
        start = time.monotonic()
        doc = items.add(Item(id=id, name="v0"))
        initial.append(Write(id, start, time.monotonic(), doc.version))
    a, b = spawn(redis_url), spawn(redis_url)
    assert a.call("ready") and b.call("ready")
    # each id has one writer thread; every thread reads every id
    a.send(
        "soak",
        args={"owned": [[i] for i in ids[:threads]], "ids": ids, "seconds": seconds, "seed": 11},
    )
    b.send(
        "soak",
        args={"owned": [[i] for i in ids[threads:]], "ids": ids, "seconds": seconds, "seed": 12},
    )
    runs = [a.receive(), b.receive()]
    stats = [a.call("stats"), b.call("stats")]
    assert [r["errors"] for r in runs] == [[], []]
    writes = initial + [w for r in runs for w in from_json(r["writes"], Write)]
    reads = [x for r in runs for x in from_json(r["reads"], Read)]
    verdict = check(writes, reads)
    hits = sum(s["hits"] for s in stats)
    l1 = sum(s["l1_hits"] for s in stats)
    print(
        f"\nsoak: 2 processes x {threads} threads, {len(ids)} hot ids, {seconds:g} s: "
        f"{verdict.reads} cached reads ({hits} cache hits, {l1} from L1), "
        f"{verdict.writes - len(ids)} writes, {len(verdict.stale)} stale, "
        f"{len(verdict.unexplained)} unexplained"
    )
    assert verdict.reads > 0 and verdict.writes > len(ids)
    assert verdict.unexplained == []
    assert verdict.stale == []  # the documented bound is 0 while Redis is reachable


def test_soak_with_redis_paused_no_stale_read(
    spawn: Any, redis_server: RedisServer, items: em.Repository[Item]
) -> None:
    """The soak while Redis is stopped (SIGSTOP) again and again for 0.02 to 1.5 s: reads
    and writes go on, and no read is stale, during the pauses or after them.
    ``ESMAPPER_SOAK_PAUSE_SEED`` picks the pauses (default 1)."""
    seconds = float(os.environ.get("ESMAPPER_SOAK_SECONDS") or 8)
    threads = int(os.environ.get("ESMAPPER_SOAK_THREADS") or 3)
    rng = random.Random(int(os.environ.get("ESMAPPER_SOAK_PAUSE_SEED") or 1))
    ids = [f"p{i}" for i in range(2 * threads)]
    owned = [[i] for i in ids]  # each id has one writer thread; every thread reads every id
    initial = []
    for id in ids:
        start = time.monotonic()
        doc = items.add(Item(id=id, name="v0"))
        initial.append(Write(id, start, time.monotonic(), doc.version))
    a, b = spawn(redis_server.url), spawn(redis_server.url)
    assert a.call("ready") and b.call("ready")
    seeds = (rng.randrange(1000), rng.randrange(1000))
    a.send(
        "soak",
        args={"owned": owned[:threads], "ids": ids, "seconds": seconds, "seed": seeds[0]},
    )
    b.send(
        "soak",
        args={"owned": owned[threads:], "ids": ids, "seconds": seconds, "seed": seeds[1]},
    )
    assert redis_server.pid is not None
    stop_at = time.monotonic() + seconds - 2  # the last 2 s: reads after the last pause
    paused = pauses = 0.0
    while time.monotonic() < stop_at:
        time.sleep(rng.uniform(0.05, 0.5))  # running between the pauses
        pause = rng.uniform(0.02, 1.5)
        os.kill(redis_server.pid, signal.SIGSTOP)
        try:
            time.sleep(pause)
        finally:
            os.kill(redis_server.pid, signal.SIGCONT)
        paused += pause
        pauses += 1
    runs = [a.receive(), b.receive()]
    stats = [a.call("stats"), b.call("stats")]
    assert [r["errors"] for r in runs] == [[], []]
    writes = initial + [w for r in runs for w in from_json(r["writes"], Write)]
    reads = [x for r in runs for x in from_json(r["reads"], Read)]
    verdict = check(writes, reads)
    print(
        f"\nsoak with Redis paused {pauses:g} times ({paused:.1f} s of {seconds:g} s): "
        f"{verdict.reads} cached reads ({sum(s['hits'] for s in stats)} cache hits, "
        f"{sum(s['l1_hits'] for s in stats)} from L1), {verdict.writes - len(ids)} writes, "
        f"{len(verdict.stale)} stale, {len(verdict.unexplained)} unexplained"
    )
    assert verdict.reads > 0 and verdict.writes > len(ids)
    assert verdict.unexplained == []
    assert verdict.stale == []
