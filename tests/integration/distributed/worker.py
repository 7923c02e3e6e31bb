"""An application process for the multi-process tests: ``python -m
tests.integration.distributed.worker ES_URL REDIS_URL INDEX_PREFIX``.

It builds a :class:`~esmapper.Mapper` sharing Redis (``redis=``) and answers JSON commands,
one per line on stdin, with one JSON line on stdout (see :func:`handle`). The test process
drives two of them, so "after A's save returned, B reads" is an order, not a race.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import sys
import threading
import time
from typing import Any

import esmapper as em
from esmapper import signals
from esmapper.distributed import HybridCache
from tests.integration.repository.cache_hooks import Person, PersonRepository


class Item(em.Document, em.Versioned):
    class Index:
        name = "shared_items"
        cache = dt.timedelta(minutes=5)
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    name: str = ""


class Worker:
    def __init__(self, es_url: str, redis_url: str, prefix: str) -> None:
        self.mapper = em.Mapper(
            es_url,
            models=[Item],
            index_prefix=prefix,
            redis=redis_url,
            redis_options={"retry_max": 0.5},
        )
        self.repo = self.mapper.repository(Item)
        self.messages: list[dict[str, Any]] = []
        self.searches = 0

    def handle(self, command: dict[str, Any]) -> Any:
        op = command["op"]
        if op == "ready":  # the subscription is up (so L1 is in use)
            deadline = time.monotonic() + 30
            link = self.mapper._redis[2]  # type: ignore[index]
            while not link.lease_valid() and time.monotonic() < deadline:
                time.sleep(0.01)
            return link.lease_valid()
        if op == "get":
            doc = self.repo.get(command["id"])
            return None if doc is None else {"name": doc.name, "version": doc.version}
        if op == "save":
            doc = self.repo.get(command["id"], cache=False)
            if doc is None:
                doc = self.repo.add(Item(id=command["id"], name=command["name"]))
            else:
                doc.name = command["name"]
                self.repo.save(doc)
            return {"version": doc.version}
        if op == "add":
            doc = self.repo.add(Item(id=command["id"], name=command["name"]))
            return {"version": doc.version}
        if op == "remove":
            self.repo.remove(command["id"])
            return None
        if op == "listen":
            self.mapper.bus.subscribe(Item, self._record)  # type: ignore[attr-defined]
            return None
        if op == "messages":
            return list(self.messages)
        if op == "stats":
            cache = self.mapper.cache
            assert isinstance(cache, HybridCache)
            return {"hits": cache.stats.hits, "l1_hits": cache.l1_stats.hits}
        if op == "soak":
            return soak(self.repo, **command["args"])
        if op.startswith("person_"):
            return self._people(op, command)
        raise ValueError(op)

    def _people(self, op: str, command: dict[str, Any]) -> Any:
        """The people cached by email (the cache hooks' repository subclass): ``hooked``
        registers it; ``by_email`` finds one (and says whether a search was sent),
        ``get`` reads one by id (cached: its add_to_cache hook keys it by email),
        ``email`` changes one's email (a save), ``patch`` by a partial patch."""
        if op == "person_hooked":
            self.mapper.register(Person, repository=PersonRepository)
            self.searches = 0
            signals.before_query.connect(self._searched, sender=Person, weak=False)
            return None
        people = self.mapper.repository(Person)
        assert isinstance(people, PersonRepository)
        if op == "person_by_email":
            before = self.searches
            found = people.get_by_email(command["email"], consistency="immediate")
            email = None if found is None else found.email
            return {"email": email, "searched": self.searches > before}
        if op == "person_get":
            doc = people.get(command["id"], cache=True)
            return None if doc is None else doc.email
        if op == "person_email":
            doc = people.get(command["id"], cache=False)
            assert doc is not None
            doc.email = command["email"]
            people.save(doc)
            return None
        if op == "person_patch":
            people.patch(command["id"], em.PartialPatch({"email": command["email"]}))
            return None
        raise ValueError(op)

    def _searched(self, sender: Any, **kwargs: Any) -> None:
        self.searches += 1

    def _record(self, message: em.EntityChanged) -> None:
        self.messages.append(
            {"id": message.id, "type": message.type, "change": int(message.change_type),
             "origin": message.origin}
        )  # fmt: skip


def soak(
    repo: em.Repository[Item],
    *,
    owned: list[list[str]],
    ids: list[str],
    seconds: float,
    seed: int,
    write_ratio: float = 0.3,
) -> dict[str, Any]:
    """One thread per list in ``owned``: each reads any id of ``ids`` (cached get) and
    writes (save, or remove then add again) only the ids it owns, for ``seconds``.
    Returns the reads and writes with their times, and the errors."""
    reads: list[list[Any]] = []
    writes: list[list[Any]] = []
    errors: list[str] = []
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def run(mine: list[str], rng: random.Random) -> None:
        docs = {i: repo.get(i, cache=False) for i in mine}
        my_reads, my_writes = [], []
        while time.monotonic() < stop_at:
            try:
                if mine and rng.random() < write_ratio:
                    id = rng.choice(mine)
                    doc = docs[id]
                    start = time.monotonic()
                    if doc is None:
                        doc = repo.add(Item(id=id, name="again"))
                        version: str | None = doc.version
                    elif rng.random() < 0.2:
                        repo.remove(doc)
                        doc, version = None, None
                    else:
                        doc.name = f"n{rng.random():.6f}"
                        repo.save(doc)
                        version = doc.version
                    my_writes.append([id, start, time.monotonic(), version])
                    docs[id] = doc
                else:
                    id = rng.choice(ids)
                    start = time.monotonic()
                    got = repo.get(id)
                    my_reads.append([id, start, time.monotonic(), got and got.version])
            except Exception as exc:  # a failed write or read is a finding, not a crash
                errors.append(f"{type(exc).__name__}: {exc}")
        with lock:
            reads.extend(my_reads)
            writes.extend(my_writes)

    threads = [
        threading.Thread(target=run, args=(mine, random.Random(seed * 1000 + n)))
        for n, mine in enumerate(owned)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {"reads": reads, "writes": writes, "errors": errors}


def main(argv: list[str]) -> int:
    worker = Worker(*argv)
    print(json.dumps({"ok": True}), flush=True)
    for line in sys.stdin:
        command = json.loads(line)
        if command["op"] == "quit":
            break
        try:
            result = {"ok": True, "result": worker.handle(command)}
        except Exception as exc:
            result = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        print(json.dumps(result), flush=True)
    worker.mapper.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
