"""Session commits racing ``patch_all`` and ``remove_all``, on both write paths.

Two session workers run units of work (modify, remove, create) on their own ids while
another thread runs ``patch_all``/``remove_all`` rounds over a filter, and a reader fills
the cache. The model is cached (``Index.cache``: the batch path, per-document writes at
the scanned version) or not (the by-query path: ``_update_by_query`` for a ScriptPatch,
``_delete_by_query``; a PartialPatch and an ActionPatch always take the batch path).
Sessions never change the fields the filters select on, and patches never touch the
fields sessions write, so after the race every document has one right answer:

- ``lost``: a session commit that is not stored as committed, a patch round that did not
  reach a document it matched all along (or one a by-query round reported as updated),
  a matching document ``remove_all`` left behind;
- ``resurrected``: a document back after a confirmed removal or after a session saw it
  gone (no writer here re-creates an id);
- ``duplicated``: a patch applied more than once to a document, a document removed twice
  (by a session and by ``remove_all``), an id with two hits;
- ``stale``: a read through the cache that differs from the store.

All must be 0. Conflicting session commits are retried in a new session (the count of
units given up must be 0 too). The rounds are spread over the workers' progress. Run with
``-s`` to see the figures.
"""

from __future__ import annotations

import datetime as dt
import os
import random
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper import signals
from esmapper.patches import Patch
from tests.integration.conftest import MakeMapper

#: ``ESMAPPER_RACE_SEED`` / ``_UNITS`` / ``_ROUNDS`` / ``_WORKERS`` scale it for soak runs
SEED = int(os.environ.get("ESMAPPER_RACE_SEED", "11"))
WORKERS = int(os.environ.get("ESMAPPER_RACE_WORKERS", "2"))
UNITS = int(os.environ.get("ESMAPPER_RACE_UNITS", "40"))  # units of work per session worker
ROUNDS = int(os.environ.get("ESMAPPER_RACE_ROUNDS", "4"))  # patch_all / remove_all calls
MATCHED = 40  # documents the filters select (group "g")
OTHERS = 20  # documents they do not (group "h")
RETRIES = 50  # attempts of a unit of work that keeps conflicting


class CachedRacer(em.Document, em.SoftDeletes, em.Versioned):
    class Index:
        name = "race_cached"
        cache = dt.timedelta(minutes=5)
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    group: str = ""
    batch: int = 0
    n: int = 0
    name: str = ""
    p: int = 0
    tag: str = ""


class PlainRacer(em.Document, em.SoftDeletes, em.Versioned):
    class Index:
        name = "race_plain"
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    group: str = ""
    batch: int = 0
    n: int = 0
    name: str = ""
    p: int = 0
    tag: str = ""


Racer = CachedRacer | PlainRacer


@pytest.fixture
def raw(es_url: str) -> Iterator[Elasticsearch]:
    with Elasticsearch(es_url) as client:
        yield client


@pytest.fixture(params=["cached", "uncached"])
def model(request: pytest.FixtureRequest) -> type[Any]:
    return CachedRacer if request.param == "cached" else PlainRacer


@pytest.fixture
def mapper(make_mapper: MakeMapper, model: type[Any]) -> em.Mapper:
    return make_mapper(model, configure=True)


class Race:
    """What the threads did, and the counts of what went wrong (guarded by ``lock``)."""

    def __init__(self, mapper: em.Mapper, model: type[Any]) -> None:
        self.mapper = mapper
        self.model = model
        self.repo: em.Repository[Any] = mapper.repository(model)
        self.lock = threading.Lock()
        self.progress = threading.Condition(self.lock)
        self.units_done = 0
        self.done = threading.Event()
        self.errors: list[BaseException] = []
        #: the last (n, name) a session committed for an id (seeded values included)
        self.committed: dict[str, tuple[int, str]] = {}
        self.created: set[str] = set()
        #: ids whose removal a session had confirmed -> the ``p`` it removed
        self.session_removed: dict[str, int] = {}
        #: ids a round of remove_all confirmed, one entry per confirmation
        self.round_removed: list[str | None] = []
        self.seen_gone: set[str] = set()
        self.counts: Counter[str] = Counter()
        self.removing: dict[str, dict[str, int]] = {}  # per thread: id -> p being removed

    # -- the store before the race -----------------------------------------------------

    def seed(self) -> list[str]:
        docs = [
            self.model(id=f"g{i}", group="g", batch=i % ROUNDS, n=0, name="seed")
            for i in range(MATCHED)
        ] + [self.model(id=f"h{i}", group="h", n=0, name="seed") for i in range(OTHERS)]
        self.repo.add(docs, consistency="wait")
        self.committed = {d.id: (0, "seed") for d in docs}
        return [d.id for d in docs]

    # -- notifications: who confirmed which removal -------------------------------------

    def heard(self, sender: Any, message: signals.EntityChanged, **kwargs: Any) -> None:
        if message.change_type is not em.ChangeType.REMOVED:
            return
        thread = threading.current_thread().name
        with self.lock:
            if thread.startswith("session"):
                assert message.id is not None
                self.session_removed[message.id] = self.removing[thread][message.id]
            elif thread == "rounds":
                self.round_removed.append(message.id)

    # -- threads -------------------------------------------------------------------------

    def run(self, rounds: Callable[[int], None], ids: list[str]) -> None:
        threads = [
            threading.Thread(target=self.guard(self.worker, w, ids), name=f"session-{w}")
            for w in range(WORKERS)
        ]
        threads.append(threading.Thread(target=self.guard(self.rounds, rounds), name="rounds"))
        threads.append(threading.Thread(target=self.guard(self.reader, ids), name="reader"))
        with signals.entity_changed.connected_to(self.heard, sender=self.model):
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(120)
                assert not thread.is_alive(), f"{thread.name} did not finish"
        if self.errors:
            raise self.errors[0]

    def guard(self, target: Callable[..., None], *args: Any) -> Callable[[], None]:
        def run() -> None:
            try:
                target(*args)
            except BaseException as exc:
                with self.lock:
                    self.errors.append(exc)
                self.done.set()
                with self.progress:
                    self.progress.notify_all()

        return run

    def worker(self, w: int, ids: list[str]) -> None:
        rnd = random.Random(SEED * 100 + w)
        self.removing[f"session-{w}"] = {}
        mine = [i for k, i in enumerate(ids) if k % WORKERS == w]
        for unit in range(UNITS):
            if self.errors:
                return
            alive = [i for i in mine if i not in self.seen_gone and i not in self.session_removed]
            kind = rnd.choices(["modify", "remove", "create"], weights=[6, 2, 2])[0]
            if kind == "create" or not alive:
                self.create(f"w{w}-c{unit}", rnd.randint(1, 10**6), f"w{w}u{unit}")
                mine.append(f"w{w}-c{unit}")
            else:
                self.unit(rnd.choice(alive), kind, rnd.randint(1, 10**6), f"w{w}u{unit}")
            with self.progress:
                self.units_done += 1
                self.progress.notify_all()
        with self.lock:
            self.counts["units"] += UNITS

    def create(self, id: str, n: int, name: str) -> None:
        with self.mapper.session() as s:
            s.add(self.model(id=id, group="h", n=n, name=name))
        with self.lock:
            self.committed[id] = (n, name)
            self.created.add(id)
            self.counts["commits"] += 1

    def unit(self, id: str, kind: str, n: int, name: str) -> None:
        """Modify or remove ``id`` in a unit of work, retried while it conflicts."""
        for _attempt in range(RETRIES):
            try:
                with self.mapper.session() as s:
                    doc = s.get(self.model, id)
                    if doc is None:
                        with self.lock:
                            self.seen_gone.add(id)
                        return
                    if id in self.seen_gone:
                        self.count("resurrected", id)
                    if kind == "remove":
                        self.removing[threading.current_thread().name][id] = doc.p
                        s.remove(doc)
                    else:
                        doc.n, doc.name = n, name
            except em.VersionConflictError:
                with self.lock:
                    self.counts["conflicts"] += 1
                continue
            with self.lock:
                self.counts["commits"] += 1
                if kind == "modify":
                    self.committed[id] = (n, name)
            return
        self.count("gave up", id)

    def rounds(self, call: Callable[[int], None]) -> None:
        total = WORKERS * UNITS
        for k in range(ROUNDS):

            def due(k: int = k) -> bool:  # spread the rounds over the workers' units
                return self.units_done >= k * total // ROUNDS or bool(self.errors)

            with self.progress:
                self.progress.wait_for(due)
            if self.errors:
                return
            call(k)
        self.done.set()

    def reader(self, ids: list[str]) -> None:
        """Reads through the cache while the others write (fills racing invalidations)."""
        rnd = random.Random(SEED)
        while not self.done.is_set():
            self.repo.get(rnd.choice(ids), cache=True, soft_deletes="all")
            with self.lock:
                self.counts["cached reads"] += 1

    def count(self, what: str, id: str | None) -> None:
        with self.lock:
            self.counts[what] += 1
            self.counts[f"{what}: {id}"] += 1

    # -- after the race ------------------------------------------------------------------

    def stored(self, raw: Elasticsearch) -> dict[str, dict[str, Any]]:
        alias = self.repo.spec.alias
        raw.indices.refresh(index=alias)
        hits = raw.search(index=alias, size=1000, query={"match_all": {}})["hits"]["hits"]
        ids = Counter(h["_id"] for h in hits)
        for id, times in ids.items():
            if times > 1:
                self.count("duplicated", id)
        return {h["_id"]: h for h in hits}

    def check_sessions(self, stored: dict[str, dict[str, Any]], raw: Elasticsearch) -> None:
        """Session commits stored as committed; nothing back after it was gone; no stale
        cache entry."""
        for id, hit in stored.items():
            source = hit["_source"]
            if id in self.session_removed or id in self.seen_gone:
                self.count("resurrected", id)
            elif (source["n"], source["name"]) != self.committed.get(id):
                self.count("lost", id)
        for id in self.created:
            if id not in stored and id not in self.session_removed:
                self.count("lost", id)
        alias = self.repo.spec.alias
        for id in self.committed:
            cached = self.repo.get(id, cache=True, soft_deletes="all")
            truth = raw.options(ignore_status=404).get(index=alias, id=id)
            if not truth.body.get("found"):
                expected = None
            else:
                version = f"{truth['_primary_term']}:{truth['_seq_no']}"
                expected = (truth["_source"], version)
            seen = None if cached is None else (cached.to_source(), cached.version)
            if seen != expected:
                self.count("stale", id)

    def assert_clean(self, label: str) -> None:
        figures = {k: v for k, v in sorted(self.counts.items()) if ":" not in k}
        print(f"{label}: {figures}")
        bad = {
            k: v
            for k, v in self.counts.items()
            if k.split(":")[0] in ("lost", "resurrected", "duplicated", "stale", "gave up")
        }
        assert bad == {}


PATCHES: dict[str, Callable[[int], Patch]] = {
    "script": lambda k: em.ScriptPatch("ctx._source.p += 1"),
    "partial": lambda k: em.PartialPatch({"p": k + 1, "tag": f"r{k}"}),
    "action": lambda k: em.ActionPatch(lambda d: setattr(d, "p", d.p + 1)),
}


@pytest.mark.parametrize("patch", list(PATCHES))
def test_session_commits_racing_patch_all_lose_and_duplicate_nothing(
    mapper: em.Mapper, model: type[Any], raw: Elasticsearch, patch: str
) -> None:
    race = Race(mapper, model)
    ids = race.seed()
    reported: list[int] = []  # per round: documents the call says it patched

    def patch_round(k: int) -> None:
        try:
            reported.append(race.repo.patch_all("group:g", PATCHES[patch](k)))
        except em.VersionConflictError as exc:
            # only _update_by_query cannot retry what it skipped: it reports the counts
            assert model is PlainRacer and patch == "script", exc
            found = re.match(r"(\d+) version conflicts, (\d+) updated", exc.reason or "")
            assert found is not None, exc.reason
            reported.append(int(found.group(2)))
            race.counts["conflicts reported by the by-query patch"] += int(found.group(1))
        race.counts["patch rounds"] += 1

    race.run(patch_round, ids)
    stored = race.stored(raw)
    race.check_sessions(stored, raw)
    by_query = model is PlainRacer and patch == "script"
    applied = sum(h["_source"]["p"] for h in stored.values())
    for id, hit in stored.items():
        source = hit["_source"]
        if source["group"] == "h":
            if source["p"] != 0 or source["tag"] != "":
                race.count("duplicated", id)  # a patch reached what it does not match
        elif not by_query and source["p"] < ROUNDS:
            race.count("lost", id)
        elif source["p"] > ROUNDS:
            race.count("duplicated", id)
    if patch != "partial":  # every increment reported is stored, and no more
        applied += sum(race.session_removed.values())
        if applied < sum(reported):
            race.count("lost", "(increments reported)")
        elif applied > sum(reported):
            race.count("duplicated", "(increments reported)")
    race.counts["documents patched (reported)"] = sum(reported)
    race.assert_clean(f"patch_all {patch} on {model.__name__}")


def test_session_commits_racing_remove_all_lose_and_resurrect_nothing(
    mapper: em.Mapper, model: type[Any], raw: Elasticsearch
) -> None:
    race = Race(mapper, model)
    ids = race.seed()
    reported: list[int] = []

    def remove_round(k: int) -> None:
        reported.append(race.repo.remove_all(f"group:g AND batch:{k}"))
        race.counts["remove rounds"] += 1

    race.run(remove_round, ids)
    stored = race.stored(raw)
    race.check_sessions(stored, raw)
    matched = {i for i in ids if i.startswith("g")}
    for id in stored.keys() & matched:
        race.count("lost", id)  # remove_all left a matching document behind
    by_session = race.session_removed.keys() & matched
    if model is CachedRacer:  # the batch path confirms each id
        assert all(i is not None for i in race.round_removed)
        rounds = Counter(race.round_removed)
        for removed, times in rounds.items():
            if times > 1 or removed in by_session:
                race.count("duplicated", removed)
        assert sum(reported) == len(race.round_removed)
    if sum(reported) + len(by_session) < len(matched):
        race.count("lost", "(removals reported)")
    elif sum(reported) + len(by_session) > len(matched):
        race.count("duplicated", "(removals reported)")
    race.counts["removed by remove_all"] = sum(reported)
    race.counts["removed by sessions"] = len(race.session_removed)
    race.assert_clean(f"remove_all on {model.__name__}")
