"""Redis stopped for a moment (SIGSTOP: connections accepted, nothing answered) while one
process writes and another holds a copy in its L1, and a process stopped for a moment while
others write: after either resumes, no process serves a copy older than a write that
returned (issue 25, items 4 and 5)."""

from __future__ import annotations

import os
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import esmapper as em
from esmapper.distributed import HybridCache, RedisLink
from esmapper.testing import RedisServer

from .conftest import wait_leased, wait_ready
from .worker import Item


@contextmanager
def stopped(pid: int) -> Iterator[None]:
    """The process ``pid`` stopped (SIGSTOP) inside the block, continued after it."""
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def test_saves_while_redis_is_stopped_are_not_served_stale_after_it_resumes(
    spawn: Any, redis_server: RedisServer, items: em.Repository[Item]
) -> None:
    ids = ["k0", "k1", "k2"]
    for id in ids:
        items.add(Item(id=id, name="v0"))
    a, b = spawn(redis_server.url), spawn(redis_server.url)
    assert a.call("ready") and b.call("ready")
    for id in ids:
        assert b.call("get", id=id)["name"] == "v0"
        assert b.call("get", id=id)["name"] == "v0"  # B holds it in its L1 (and Redis)
    assert redis_server.pid is not None
    with stopped(redis_server.pid):
        # one save per document: the first goes out on an open connection (Redis runs it
        # when it resumes), the others find a connection that cannot even be opened
        saved = {id: a.call("save", id=id, name="v1")["version"] for id in ids}
        time.sleep(1.5)  # the pause the issue reports (every save returned before it ends)
    expected = {id: {"name": "v1", "version": saved[id]} for id in ids}
    # B reads right after Redis resumes, and keeps reading while it settles
    stale = []
    for _ in range(100):
        for id in ids:
            got = b.call("get", id=id)
            if got != expected[id]:
                stale.append((id, got))
    assert stale == []
    assert b.call("ready")  # the cache is in use again
    assert [b.call("get", id=id) for id in ids] == [expected[id] for id in ids]


def test_a_stopped_process_handles_what_redis_delivered_to_it_meanwhile(
    spawn: Any, redis_url: str, items: em.Repository[Item]
) -> None:
    """B stopped for longer than its listener's liveness limit (2 s): on resume it handles
    the notifications Redis had already delivered to it, and serves no stale copy."""
    items.add(Item(id="k", name="v0"))
    a, b = spawn(redis_url), spawn(redis_url)
    assert a.call("ready") and b.call("ready")
    a.call("listen")
    b.call("listen")
    assert b.call("get", id="k")["name"] == "v0"
    assert b.call("get", id="k")["name"] == "v0"  # in B's L1
    with stopped(b.proc.pid):
        saved = a.call("save", id="k", name="v1")  # waits at most `lease` for B's ack
        a.call("add", id="m", name="one")
        a.call("save", id="m", name="two")
        a.call("remove", id="m")
        time.sleep(2.5)  # longer than the listener's 2 s liveness limit
    assert b.call("get", id="k") == {"name": "v1", "version": saved["version"]}
    expected = [("k", 1), ("m", 0), ("m", 1), ("m", 2)]
    deadline = time.monotonic() + 10
    remote = b.call("messages")
    while len(remote) < len(expected) and time.monotonic() < deadline:
        time.sleep(0.05)
        remote = b.call("messages")
    assert [(m["id"], m["change"]) for m in remote] == expected
    assert {m["origin"] for m in remote} == {"remote"}


def test_a_change_held_up_by_a_short_redis_pause_reaches_the_other_process(
    redis_server: RedisServer,
) -> None:
    """Redis stopped for less than the lease while A sets a key B holds in L1, on a
    connection A must open first (so nothing of the change is sent before Redis answers):
    A sends the change again while it waits, so B drops its copy (one process stands for
    two here: two links, two subscriptions)."""
    namespace = f"t-{uuid.uuid4().hex[:8]}"
    links = [RedisLink(redis_server.url, namespace=namespace) for _ in range(2)]
    try:
        a, b = (HybridCache(link) for link in links)
        assert all(wait_ready(link) and wait_leased(link) for link in links)
        a.set("k", "v0")
        assert b.get("k") == "v0" and b.get("k") == "v0"
        assert b.l1_stats.hits == 1  # B holds it in its L1
        links[0].client.connection_pool.disconnect()  # A's next request opens a connection
        assert redis_server.pid is not None
        writer = threading.Thread(target=a.set, args=("k", "v1"))
        with stopped(redis_server.pid):
            writer.start()
            time.sleep(0.3)  # under the lease (0.5 s), over the socket timeout (0.25 s)
        writer.join()
        assert [b.get("k") for _ in range(50)] == ["v1"] * 50
    finally:
        for link in links:
            link.close()
