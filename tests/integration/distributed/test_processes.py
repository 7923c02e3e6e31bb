"""Two real application processes sharing Redis: read-after-write across them, removals,
notifications, and Redis killed and restarted under load."""

from __future__ import annotations

import time
from typing import Any

import esmapper as em
from esmapper.testing import RedisServer
from tests.integration.repository.cache_hooks import Person

from .history import Read, Write, check, from_json
from .worker import Item


def wait_for(predicate: Any, timeout: float = 20.0) -> Any:
    """Poll ``predicate()`` until it is truthy or ``timeout`` passed; returns its last value
    (the assertion after it says what was expected)."""
    deadline = time.monotonic() + timeout
    value = predicate()
    while not value and time.monotonic() < deadline:
        time.sleep(0.05)
        value = predicate()
    return value


def test_a_save_in_a_is_never_served_stale_by_b(
    spawn: Any, redis_url: str, items: em.Repository[Item]
) -> None:
    items.add(Item(id="k", name="v0"))
    a, b = spawn(redis_url), spawn(redis_url)
    assert a.call("ready") and b.call("ready")
    for i in range(1, 31):
        before = b.call("get", id="k")
        assert b.call("get", id="k") == before  # cached in B (L1 and Redis) now
        saved = a.call("save", id="k", name=f"v{i}")
        assert b.call("get", id="k") == {"name": f"v{i}", "version": saved["version"]}
        assert a.call("get", id="k") == {"name": f"v{i}", "version": saved["version"]}
    assert b.call("stats")["l1_hits"] > 0  # the in-process copy was in use


def test_a_remove_in_b_is_seen_by_a(spawn: Any, redis_url: str, items: em.Repository[Item]) -> None:
    a, b = spawn(redis_url), spawn(redis_url)
    assert a.call("ready") and b.call("ready")
    for i in range(10):
        items.add(Item(id=f"r{i}", name="here"))
        assert a.call("get", id=f"r{i}")["name"] == "here"
        assert a.call("get", id=f"r{i}")["name"] == "here"  # cached in A
        b.call("remove", id=f"r{i}")
        assert a.call("get", id=f"r{i}") is None


def test_b_subscribers_receive_a_changes_once_with_their_origin(
    spawn: Any, redis_url: str, items: em.Repository[Item]
) -> None:
    a, b = spawn(redis_url), spawn(redis_url)
    assert a.call("ready") and b.call("ready")
    a.call("listen")
    b.call("listen")
    a.call("add", id="m", name="one")
    a.call("save", id="m", name="two")
    a.call("remove", id="m")
    expected = [("m", 0), ("m", 1), ("m", 2)]
    remote = wait_for(lambda: len(b.call("messages")) >= 3 and b.call("messages"))
    assert [(m["id"], m["change"]) for m in remote] == expected
    assert {m["origin"] for m in remote} == {"remote"} and {m["type"] for m in remote} == {"Item"}
    local = a.call("messages")
    assert [(m["id"], m["change"]) for m in local] == expected  # not delivered twice
    assert {m["origin"] for m in local} == {"local"}


def test_redis_killed_and_restarted_under_load(
    spawn: Any, redis_server: RedisServer, items: em.Repository[Item]
) -> None:
    """Both processes read and write the same documents while Redis is killed and started
    again: no write fails, no read is stale (see history.py for what "stale" means)."""
    ids = [f"h{i}" for i in range(4)]
    initial = []
    for id in ids:
        start = time.monotonic()
        doc = items.add(Item(id=id, name="v0"))
        initial.append(Write(id, start, time.monotonic(), doc.version))
    a, b = spawn(redis_server.url), spawn(redis_server.url)
    assert a.call("ready") and b.call("ready")
    a.send("soak", args={"owned": [["h0"], ["h1"], []], "ids": ids, "seconds": 6, "seed": 1})
    b.send("soak", args={"owned": [["h2"], ["h3"], []], "ids": ids, "seconds": 6, "seed": 2})

    def stored() -> dict[str, Any]:
        """What the store holds now (the test's repository has no cache)."""
        es = items.mapper.client
        return {
            d["_id"]: d.get("_seq_no") for d in es.mget(index=items.spec.alias, ids=ids)["docs"]
        }

    def writes_since(before: dict[str, Any]) -> int:
        return sum(seq != before.get(id) for id, seq in stored().items())

    # pacing on what the processes did, not on time: Redis goes down once both write, and
    # comes back once writes went on while it was down
    running = stored()
    assert wait_for(lambda: writes_since(running) >= 2), "the processes never wrote"
    redis_server.kill()
    down = stored()
    assert wait_for(lambda: writes_since(down) >= 2), "no write while Redis was down"
    redis_server.restart()
    runs = [a.receive(), b.receive()]
    assert [r["errors"] for r in runs] == [[], []]  # no failed write, no failed read
    writes = initial + [w for r in runs for w in from_json(r["writes"], Write)]
    reads = [x for r in runs for x in from_json(r["reads"], Read)]
    verdict = check(writes, reads)
    assert verdict.reads > 100 and verdict.writes > 20
    assert verdict.unexplained == []
    assert verdict.stale == []
    # and the cache works again after the restart
    assert a.call("ready") and b.call("ready")
    saved = a.call("save", id="h0", name="after")
    assert b.call("get", id="h0") == {"name": "after", "version": saved["version"]}
    assert b.call("get", id="h0") == {"name": "after", "version": saved["version"]}


def test_a_key_of_a_cache_hook_is_dropped_across_processes(
    spawn: Any, redis_url: str, es_url: str, index_prefix: str
) -> None:
    """Two processes with the repository subclass keeping people cached by email: a key
    one of them made (its search's page, its by-id read's add_to_cache) is served by the
    other without a search, and a change of the email in either drops it in both (the
    hook's removal goes through Redis and every process's L1)."""
    with em.Mapper(es_url, models=[Person], index_prefix=index_prefix, redis="") as m:
        m.configure_indexes()
        m.repository(Person).add(Person(id="ann", name="Ann", email="ann@example.com"))
    a, b = spawn(redis_url), spawn(redis_url)
    assert a.call("ready") and b.call("ready")
    a.call("person_hooked")
    b.call("person_hooked")
    # a's search stores the page under the key; b is served it without a search
    assert a.call("person_by_email", email="ann@example.com")["searched"]
    for _ in range(2):  # (the second from b's L1)
        assert b.call("person_by_email", email="ann@example.com") == {
            "email": "ann@example.com",
            "searched": False,
        }
    a.call("person_email", id="ann", email="ann@new.example.com")
    assert b.call("person_by_email", email="ann@example.com") == {
        "email": None,
        "searched": True,
    }
    # b's by-id read keys her by the new email (add_to_cache); a reads that key, then b
    # patches the email by id: a's copy goes too
    assert b.call("person_get", id="ann") == "ann@new.example.com"
    assert a.call("person_by_email", email="ann@new.example.com") == {
        "email": "ann@new.example.com",
        "searched": False,
    }
    b.call("person_patch", id="ann", email="ann@third.example.com")
    assert a.call("person_by_email", email="ann@new.example.com") == {
        "email": None,
        "searched": True,
    }
