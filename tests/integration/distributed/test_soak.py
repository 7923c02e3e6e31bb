"""Soak: two processes x N threads reading (cached get) and writing (save, remove, add again)
a small hot set through one Redis; every read is checked against the writes of its moment.

``ESMAPPER_SOAK_SECONDS`` (default 4) and ``ESMAPPER_SOAK_THREADS`` (default 3 per process)
size it; the figures are printed (``pytest -s``) and go to the README's reliability section.
"""

from __future__ import annotations

import os
import time
from typing import Any

import esmapper as em

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
