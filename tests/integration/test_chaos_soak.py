"""Chaos soak: the write pipeline's invariants under injected faults.

Two mappers with the same ``index_prefix`` share one cache client (two processes sharing a
Redis), each behind its own :class:`FaultProxy`. A seeded random sequence of operations
(adds, saves, removals, patches by id and by query, ``remove_all``, session units of work,
cached reads, and reads racing a write from the other mapper) runs through either mapper,
with faults scripted on that mapper's proxy before each operation: 429/503 for the whole
request or for bulk items, a connection dropped before or after forwarding, a truncated
response, a read-back that cannot get through.

The test keeps a model of the expected store, updated from what each call reported: a call
that returned was applied exactly once, a typed error means "not applied" for the failed
items, and only an unknown outcome (:class:`OutcomeUnknownError`, a failure with
``is_unknown``) lets the test read the document back and adopt what is there (counted as
"uncertain, reported"). After every operation the server (raw client, refreshed, scanned)
is compared with the model, and every document is read through both mappers' caches:
lost, resurrected, applied twice, phantom, divergent and stale cache reads must all be 0.

Run with ``-s`` to see one summary line per seed; the figures are also written as JSON
to the test's tmp dir (``chaos-<seed>.json``).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import re
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from elastic_transport import TransportError
from elasticsearch import ApiError, Elasticsearch, NotFoundError

import esmapper as em
from esmapper import signals
from esmapper._soft_deletes import recently_deleted
from esmapper.cache import InMemoryCache, ReadMarker
from esmapper.testing.faults import FaultProxy

#: ``ESMAPPER_CHAOS_SEEDS=1,2,3`` / ``ESMAPPER_CHAOS_OPS=500`` run other seeds or longer soaks
SEEDS = tuple(int(s) for s in os.environ.get("ESMAPPER_CHAOS_SEEDS", "1,8,12").split(","))
OPS_PER_SEED = int(os.environ.get("ESMAPPER_CHAOS_OPS", "110"))
GROUPS = ("g0", "g1", "g2")
#: every request that writes documents (faults are scripted on these only: a read that
#: fails before anything was written is not what this soak is about)
WRITE_PATHS = r"/_bulk$|/_update_by_query$|/_delete_by_query$"


class Part(em.InnerDoc):
    label: str = ""
    qty: int = 0


class Widget(em.Document, em.HasDates, em.SoftDeletes, em.Versioned):
    class Index:
        name = "chaos_widgets"
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012
        cache = dt.timedelta(minutes=5)

    name: str = em.field(em.Keyword(), default="")
    group: str = em.field(em.Keyword(), default="")
    n: int = em.field(em.Integer(), default=0)
    tags: list[str] = em.field(factory=list)
    part: Part | None = None


class Note(em.Document):
    """Uncached, unversioned, plain: ScriptPatch ``patch_all`` is one update-by-query and
    ``remove_all`` one delete-by-query."""

    class Index:
        name = "chaos_notes"
        kind = "plain"
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    group: str = em.field(em.Keyword(), default="")
    n: int = em.field(em.Integer(), default=0)
    text: str = em.field(em.Keyword(), default="")


MODELS: dict[str, type] = {"w": Widget, "n": Note}
Key = tuple[str, str]  # ("w" | "n", id)


# -- content: what the model compares ------------------------------------------------------


def _part(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if isinstance(value, Part):
        return {"label": value.label, "qty": value.qty}
    return {"label": value.get("label", ""), "qty": value.get("qty", 0)}


def source_content(kind: str, source: dict[str, Any]) -> dict[str, Any]:
    if kind == "w":
        return {
            "name": source.get("name", ""),
            "group": source.get("group", ""),
            "n": source.get("n", 0),
            "tags": list(source.get("tags") or []),
            "part": _part(source.get("part")),
            "is_deleted": bool(source.get("is_deleted")),
        }
    return {
        "group": source.get("group", ""),
        "n": source.get("n", 0),
        "text": source.get("text", ""),
    }


def doc_content(doc: Any) -> dict[str, Any]:
    if isinstance(doc, Widget):
        return {
            "name": doc.name,
            "group": doc.group,
            "n": doc.n,
            "tags": list(doc.tags),
            "part": _part(doc.part),
            "is_deleted": bool(doc.is_deleted),
        }
    return {"group": doc.group, "n": doc.n, "text": doc.text}


def deep_merge(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


# -- the shared cache, with a hook to race a read's fill against a write ------------------


class RacingCache(InMemoryCache):
    """An InMemoryCache whose next read fill (a compare-and-set on a ReadMarker) first runs
    ``before_fill``: a write that lands between a read's GET and its cache fill."""

    before_fill: Callable[[], None] | None = None

    def compare_and_set(
        self, key: str, expected: Any, value: Any, ttl: float | None = None
    ) -> bool:
        hook = self.before_fill
        if hook is not None and isinstance(expected, ReadMarker):
            self.before_fill = None
            hook()
        return super().compare_and_set(key, expected, value, ttl)


# -- figures -------------------------------------------------------------------------------


@attrs.define
class Figures:
    seed: int
    operations: Counter[str] = attrs.Factory(Counter)
    faults_scripted: Counter[str] = attrs.Factory(Counter)
    faults_consumed: Counter[str] = attrs.Factory(Counter)
    outcomes: Counter[str] = attrs.Factory(Counter)
    checks: int = 0
    documents_checked: int = 0
    cache_reads_checked: int = 0
    uncertain_reported: int = 0
    lost: int = 0
    resurrected: int = 0
    applied_twice: int = 0
    phantom: int = 0
    divergent: int = 0
    stale_cache_reads: int = 0
    seconds: float = 0.0
    problems: list[str] = attrs.Factory(list)

    def zeros(self) -> dict[str, int]:
        return {
            "lost": self.lost,
            "resurrected": self.resurrected,
            "applied_twice": self.applied_twice,
            "phantom": self.phantom,
            "divergent": self.divergent,
            "stale_cache_reads": self.stale_cache_reads,
        }

    def summary(self) -> str:
        return (
            f"chaos seed={self.seed} ops={sum(self.operations.values())} "
            f"faults={sum(self.faults_consumed.values())} {dict(self.faults_consumed)} "
            f"docs_checked={self.documents_checked} cache_reads={self.cache_reads_checked} "
            f"uncertain={self.uncertain_reported} zeros={self.zeros()} "
            f"time={self.seconds:.1f}s"
        )


# -- the soak ------------------------------------------------------------------------------


class Soak:
    def __init__(
        self,
        rng: random.Random,
        es: Elasticsearch,
        mappers: list[em.Mapper],
        proxies: list[FaultProxy],
        cache: RacingCache,
        figures: Figures,
    ) -> None:
        self.rng = rng
        self.es = es
        self.mappers = mappers
        self.proxies = proxies
        self.cache = cache
        self.f = figures
        self.docs: dict[Key, dict[str, Any]] = {}  # present on the server
        self.removed: set[Key] = set()  # hard-deleted (never re-added since)
        self.held: dict[str, Widget] = {}  # documents read earlier (maybe stale now)
        self.serial = 0
        self.alias = {k: mappers[0].spec(m).alias for k, m in MODELS.items()}
        self.step = ""
        #: the last calls and what they reported (for the failure message)
        self.trail: deque[str] = deque(maxlen=12)
        #: armed by an operation: the other mapper writes one of the documents first
        self.interfere_with: em.Mapper | None = None
        self.current: tuple[FaultProxy, int] = (proxies[0], 0)

    # -- model updates ------------------------------------------------------------------

    def put(self, key: Key, content: dict[str, Any]) -> None:
        self.docs[key] = content
        self.removed.discard(key)

    def drop(self, key: Key) -> None:
        if self.docs.pop(key, None) is not None:
            self.removed.add(key)

    def adopt(self, key: Key) -> None:
        """An unknown outcome: take what the server holds (read back, raw client)."""
        self.f.uncertain_reported += 1
        self._sync(key)

    def _sync(self, key: Key) -> None:
        try:
            raw = self.es.get(index=self.alias[key[0]], id=key[1])
        except NotFoundError:
            self.drop(key)
            return
        self.put(key, source_content(key[0], raw["_source"]))

    def new_id(self, kind: str) -> str:
        self.serial += 1
        return f"{kind}{self.serial:04d}"

    def pick(self, kind: str, *, deleted: bool | None = None) -> str | None:
        ids = sorted(
            k[1]
            for k, c in self.docs.items()
            if k[0] == kind and (deleted is None or c.get("is_deleted", False) == deleted)
        )
        return self.rng.choice(ids) if ids else None

    def pick_any(self, kind: str) -> str | None:
        """A present id, or now and then a removed or never-stored one."""
        roll = self.rng.random()
        gone = sorted(k[1] for k in self.removed if k[0] == kind)
        if roll < 0.08 and gone:
            return self.rng.choice(gone)
        if roll < 0.1:
            return f"{kind}9999"
        return self.pick(kind)

    # -- faults -------------------------------------------------------------------------

    def script_faults(self, proxy: FaultProxy) -> str:
        rng = self.rng
        label = rng.choice(
            ["none"] * 5
            + ["status429", "status503", "items429", "items503"]
            + ["drop_before", "drop_after", "drop_after", "truncate", "truncate"]
            + ["readback_down", "drop_after+429", "truncate+drop_before"]
        )
        times = rng.choice([1, 1, 2, 3])
        skip = rng.choice([0, 0, 0, 1])
        if label.startswith("status"):
            proxy.reply_status(int(label[-3:]), times=times, path=WRITE_PATHS, skip=skip)
        elif label.startswith("items"):
            items: Any = rng.choice([1, 2, [1], lambda pos, _line: pos % 2 == 1])
            proxy.fail_bulk_items(items, status=int(label[-3:]), times=times, skip=skip)
        elif label == "drop_before":
            proxy.drop_connection(times=times, path=WRITE_PATHS, skip=skip)
        elif label == "drop_after":
            proxy.drop_connection(after_forwarding=True, times=times, path=WRITE_PATHS, skip=skip)
        elif label == "truncate":
            proxy.truncate_response(times=times, path=WRITE_PATHS, skip=skip)
        elif label == "readback_down":  # the answer is lost and the read-back fails too
            proxy.drop_connection(after_forwarding=True, path=WRITE_PATHS, skip=skip)
            proxy.drop_connection(times=12, path=r"/_mget$")
        elif label == "drop_after+429":
            proxy.drop_connection(after_forwarding=True, path=WRITE_PATHS, skip=skip)
            proxy.reply_status(429, times=3, path=WRITE_PATHS)
        elif label == "truncate+drop_before":
            proxy.truncate_response(path=WRITE_PATHS, skip=skip)
            proxy.drop_connection(times=2, path=WRITE_PATHS)
        self.f.faults_scripted[label] += 1
        return label

    # -- one step -----------------------------------------------------------------------

    OPS = (
        ("add", 10),
        ("add_note", 5),
        ("save", 10),
        ("save_stale", 3),
        ("save_note", 3),
        ("remove", 4),
        ("remove_note", 2),
        ("patch_partial", 8),
        ("patch_script", 8),
        ("patch_note", 3),
        ("patch_all_partial", 4),
        ("patch_all_script", 4),
        ("patch_all_notes", 4),
        ("remove_all", 3),
        ("remove_all_notes", 3),
        ("session", 8),
        ("get", 4),
        ("racing_get", 4),
    )

    #: operations that write documents through ``documents_changing`` (a concurrent write
    #: from the other mapper can land between their read and their write)
    INTERFERED = frozenset({"save", "remove", "remove_all", "session"})

    def on_changing(self, sender: Any, documents: list[Any], **_kwargs: Any) -> None:
        """``documents_changing`` receiver: when armed, the other mapper bumps one of the
        documents about to be written (after they were read, before they are sent)."""
        other = self.interfere_with
        if other is None:
            return
        self.interfere_with = None
        stored = sorted(
            m.value.id for m in documents if m.value.id and ("w", m.value.id) in self.docs
        )
        if not stored:
            return
        id_ = self.rng.choice(stored)
        self.f.operations["concurrent_write"] += 1
        exc = self.call(
            lambda: other.repository(Widget).patch(id_, em.ScriptPatch("ctx._source.n += 1"))
        )
        self.settle_ids([("w", id_)], exc, self.bump)

    def run(self, count: int) -> None:
        names = [n for n, _ in self.OPS]
        weights = [w for _, w in self.OPS]
        for _ in range(8):  # a starting population, written without faults
            self.op_add(self.mappers[0])
        self.verify()
        for number in range(count):
            which = self.rng.randrange(2)
            mapper, proxy = self.mappers[which], self.proxies[which]
            op = self.rng.choices(names, weights)[0]
            before = len(proxy.requests)
            self.current = (proxy, before)
            label = self.script_faults(proxy)
            if op in self.INTERFERED and self.rng.random() < 0.3:
                self.interfere_with = self.mappers[1 - which]
                label += "+concurrent"
            self.step = f"#{number} {op} via mapper {'AB'[which]} faults={label}"
            try:
                getattr(self, f"op_{op}")(mapper)
            finally:
                self.interfere_with = None
                proxy.clear_faults()
                for record in proxy.requests[before:]:
                    if record.fault is not None:
                        self.f.faults_consumed[record.fault] += 1
            self.f.operations[op] += 1
            self.verify()

    # -- settling what a call reported ---------------------------------------------------

    def settle_docs(
        self, writes: list[tuple[Any, Key, str, dict[str, Any] | None]], exc: BaseException | None
    ) -> None:
        """``writes``: ``(doc, key, kind, content after)`` (``kind`` add/save/remove)."""
        if exc is None:
            self.f.outcomes["ok"] += 1
            for _doc, key, kind, content in writes:
                if kind == "remove":
                    self.drop(key)
                else:
                    assert content is not None
                    self.put(key, content)
            return
        self.f.outcomes[type(exc).__name__] += 1
        if isinstance(exc, TransportError):  # a read failed before anything was written
            return
        if not isinstance(exc, em.BulkWriteError | em.DocumentError):
            raise exc
        succeeded = {id(d) for d in exc.succeeded}
        failures = {id(f.document): f for f in exc.failures}
        for doc, key, kind, content in writes:
            failure = failures.get(id(doc))
            if id(doc) in succeeded:
                if kind == "remove":
                    self.drop(key)
                else:
                    assert content is not None
                    self.put(key, content)
            elif failure is not None:
                if failure.is_unknown:
                    self.adopt(key)
                # any other failure: not applied
            elif isinstance(exc, em.OutcomeUnknownError):
                self.adopt(key)
            elif kind == "remove" and not failures:
                pass  # e.g. a single-item error: not applied
            elif kind == "remove":
                self.drop(key)  # neither confirmed nor failed: already gone (404)

    def settle_ids(
        self,
        keys: list[Key],
        exc: BaseException | None,
        apply: Callable[[Key], None],
        *,
        unknown_means_all: bool = False,
    ) -> None:
        """A write of ``keys`` by id or by query that names its failures by id."""
        if exc is None:
            self.f.outcomes["ok"] += 1
            for key in keys:
                apply(key)
            return
        self.f.outcomes[type(exc).__name__] += 1
        if isinstance(exc, ApiError | TransportError):  # refused, or a read failed first
            return
        if not isinstance(exc, em.EsmapperError):
            raise exc
        failures: dict[str | None, bool] = {}
        for f in getattr(exc, "failures", []) or []:
            failures[f.id] = f.is_unknown
        if not failures:
            unknown = isinstance(exc, em.OutcomeUnknownError)
            for id_ in exc.ids:
                failures[id_] = unknown
            if unknown and (unknown_means_all or not exc.ids):
                for key in keys:
                    failures[key[1]] = True
        for key in keys:
            if key[1] not in failures:
                apply(key)
            elif failures[key[1]]:
                self.adopt(key)

    def writes_sent(self) -> int:
        """Write requests that reached the current operation's proxy so far."""
        proxy, start = self.current
        return sum(1 for r in proxy.requests[start:] if re.search(WRITE_PATHS, r.path))

    def call(self, fn: Callable[[], Any]) -> BaseException | None:
        try:
            fn()
        except (em.EsmapperError, ApiError) as exc:
            self.trail.append(f"{self.step} -> {type(exc).__name__}: {exc}"[:300])
            return exc
        except TransportError as exc:
            # a read before any write failed (the read-back fault also hits the mget that
            # loads ids for removal receivers): fine if nothing was written, else a finding
            if self.writes_sent():
                raise
            self.trail.append(f"{self.step} -> read failed before any write: {exc}"[:300])
            return exc
        self.trail.append(f"{self.step} -> ok")
        return None

    # -- operations: documents -----------------------------------------------------------

    def new_widget(self, id_: str) -> Widget:
        rng = self.rng
        return Widget(
            id=id_,
            name=f"name{rng.randrange(100)}",
            group=rng.choice(GROUPS),
            n=rng.randrange(5),
            tags=[f"t{rng.randrange(9)}" for _ in range(rng.randrange(3))],
            part=rng.choice([None, Part(label=f"p{rng.randrange(9)}", qty=rng.randrange(9))]),
        )

    def op_add(self, mapper: em.Mapper) -> None:
        repo = mapper.repository(Widget)
        docs = []
        for _ in range(self.rng.choice([1, 1, 2, 3])):
            roll = self.rng.random()
            existing = self.pick("w") if roll < 0.1 else None
            gone = sorted(k[1] for k in self.removed if k[0] == "w")
            if existing is None and roll < 0.2 and gone:
                existing = self.rng.choice(gone)  # re-adding a removed id is allowed
            docs.append(self.new_widget(existing or self.new_id("w")))
        docs = list({d.id: d for d in docs}.values())
        ids_before = {d.id: d.id in {k[1] for k in self.docs if k[0] == "w"} for d in docs}
        exc = self.call(lambda: repo.add(docs if len(docs) > 1 else docs[0]))
        writes = [(d, ("w", d.id), "add", doc_content(d)) for d in docs]
        if exc is None:
            dup = [d.id for d in docs if ids_before[d.id]]
            if dup:
                self.f.problems.append(f"{self.step}: add of existing {dup} returned normally")
        self.settle_docs(writes, exc)

    def op_add_note(self, mapper: em.Mapper) -> None:
        repo = mapper.repository(Note)
        note = Note(id=self.new_id("n"), group=self.rng.choice(GROUPS), n=0, text=f"x{self.serial}")
        exc = self.call(lambda: repo.add(note))
        self.settle_docs([(note, ("n", note.id), "add", doc_content(note))], exc)

    def mutate(self, doc: Widget) -> None:
        rng = self.rng
        for _ in range(rng.randint(1, 2)):
            change = rng.randrange(6)
            if change == 0:
                doc.n += 1
            elif change == 1:
                doc.name = f"name{rng.randrange(100)}"
            elif change == 2:
                doc.tags.append(f"t{rng.randrange(9)}")  # in place
            elif change == 3:
                if doc.part is None:
                    doc.part = Part(label="new", qty=1)
                else:
                    doc.part.qty += 1  # in place, nested
            elif change == 4:
                doc.is_deleted = not doc.is_deleted  # soft delete / restore
            else:
                doc.group = rng.choice(GROUPS)

    def read(self, mapper: em.Mapper, id_: str) -> Widget | None:
        doc = mapper.repository(Widget).get(id_, soft_deletes="all")
        if doc is not None:
            self.held[id_] = mapper.repository(Widget).get(id_, soft_deletes="all")  # a copy
        return doc

    def op_save(self, mapper: em.Mapper) -> None:
        id_ = self.pick("w")
        if id_ is None:
            return
        doc = self.read(mapper, id_)
        if doc is None:
            self.f.problems.append(f"{self.step}: {id_} unreadable before save")
            return
        self.mutate(doc)
        exc = self.call(lambda: mapper.repository(Widget).save(doc))
        self.settle_docs([(doc, ("w", id_), "save", doc_content(doc))], exc)

    def op_save_stale(self, mapper: em.Mapper) -> None:
        ids = sorted(self.held)
        if not ids:
            return
        id_ = self.rng.choice(ids)
        doc = self.held.pop(id_)
        self.mutate(doc)
        exc = self.call(lambda: mapper.repository(Widget).save(doc))
        if exc is None and ("w", id_) not in self.docs:
            self.f.problems.append(f"{self.step}: save of removed {id_} returned normally")
        self.settle_docs([(doc, ("w", id_), "save", doc_content(doc))], exc)

    def op_save_note(self, mapper: em.Mapper) -> None:
        id_ = self.pick("n")
        if id_ is None:
            return
        repo = mapper.repository(Note)
        note = repo.get(id_)
        if note is None:
            self.f.problems.append(f"{self.step}: note {id_} unreadable before save")
            return
        note.text = f"s{self.rng.randrange(100)}"
        note.n += 1
        exc = self.call(lambda: repo.save(note))
        self.settle_docs([(note, ("n", id_), "save", doc_content(note))], exc)

    def op_remove(self, mapper: em.Mapper) -> None:
        repo = mapper.repository(Widget)
        roll = self.rng.random()
        if roll < 0.25 and self.held:  # maybe stale: a conflict
            id_ = self.rng.choice(sorted(self.held))
            target: Any = self.held.pop(id_)
        else:
            picked = self.pick_any("w")
            if picked is None:
                return
            id_ = picked
            if roll < 0.5:
                target = id_  # unconditional
            else:
                target = self.read(mapper, id_)
                if target is None:
                    target = id_
        exc = self.call(lambda: repo.remove(target))
        if isinstance(target, str):
            self.settle_ids([("w", id_)], exc, self.drop)
        else:
            self.settle_docs([(target, ("w", id_), "remove", None)], exc)

    def op_remove_note(self, mapper: em.Mapper) -> None:
        id_ = self.pick_any("n")
        if id_ is None:
            return
        exc = self.call(lambda: mapper.repository(Note).remove(id_))
        self.settle_ids([("n", id_)], exc, self.drop)

    # -- operations: patches ---------------------------------------------------------------

    def partial_body(self) -> dict[str, Any]:
        rng = self.rng
        choice = rng.randrange(5)
        if choice == 0:
            return {"name": f"p{rng.randrange(100)}"}
        if choice == 1:
            return {"tags": [f"t{rng.randrange(9)}" for _ in range(rng.randrange(3))]}
        if choice == 2:
            return {"part": {"qty": rng.randrange(50)}}  # deep merge into the InnerDoc
        if choice == 3:
            return {"is_deleted": rng.random() < 0.5}
        return {"group": rng.choice(GROUPS), "name": f"q{rng.randrange(100)}"}

    def merge_into(self, body: dict[str, Any]) -> Callable[[Key], None]:
        def apply(key: Key) -> None:
            if key in self.docs:
                merged = deep_merge(self.docs[key], body)
                self.put(key, source_content(key[0], merged))

        return apply

    def bump(self, key: Key) -> None:
        if key in self.docs:
            self.docs[key] = {**self.docs[key], "n": self.docs[key]["n"] + 1}

    def patch_ids(self, kind: str) -> list[str]:
        ids = [self.pick_any(kind) for _ in range(self.rng.choice([1, 1, 1, 2, 3]))]
        return list(dict.fromkeys(i for i in ids if i is not None))

    def op_patch_partial(self, mapper: em.Mapper) -> None:
        ids = self.patch_ids("w")
        if not ids:
            return
        body = self.partial_body()
        target: Any = ids[0] if len(ids) == 1 else ids
        exc = self.call(lambda: mapper.repository(Widget).patch(target, em.PartialPatch(body)))
        self.settle_ids([("w", i) for i in ids], exc, self.merge_into(body))

    def op_patch_script(self, mapper: em.Mapper) -> None:
        ids = self.patch_ids("w")
        if not ids:
            return
        target: Any = ids[0] if len(ids) == 1 else ids
        exc = self.call(
            lambda: mapper.repository(Widget).patch(target, em.ScriptPatch("ctx._source.n += 1"))
        )
        self.settle_ids([("w", i) for i in ids], exc, self.bump)

    def op_patch_note(self, mapper: em.Mapper) -> None:
        ids = self.patch_ids("n")
        if not ids:
            return
        target: Any = ids[0] if len(ids) == 1 else ids
        exc = self.call(
            lambda: mapper.repository(Note).patch(target, em.ScriptPatch("ctx._source.n += 1"))
        )
        self.settle_ids([("n", i) for i in ids], exc, self.bump)

    def matching(self, kind: str, group: str) -> list[Key]:
        return sorted(
            k
            for k, c in self.docs.items()
            if k[0] == kind and c["group"] == group and not c.get("is_deleted", False)
        )

    def op_patch_all_partial(self, mapper: em.Mapper) -> None:
        group = self.rng.choice(GROUPS)
        body = self.partial_body()
        keys = self.matching("w", group)
        exc = self.call(
            lambda: mapper.repository(Widget).patch_all(
                f"group:{group}", em.PartialPatch(body), consistency="immediate"
            )
        )
        self.settle_ids(keys, exc, self.merge_into(body))

    def op_patch_all_script(self, mapper: em.Mapper) -> None:
        group = self.rng.choice(GROUPS)
        keys = self.matching("w", group)
        exc = self.call(
            lambda: mapper.repository(Widget).patch_all(
                f"group:{group}", em.ScriptPatch("ctx._source.n += 1"), consistency="immediate"
            )
        )
        self.settle_ids(keys, exc, self.bump)

    def op_patch_all_notes(self, mapper: em.Mapper) -> None:
        group = self.rng.choice(GROUPS)
        keys = self.matching("n", group)
        exc = self.call(
            lambda: mapper.repository(Note).patch_all(
                f"group:{group}", em.ScriptPatch("ctx._source.n += 1"), consistency="immediate"
            )
        )
        # an update-by-query names no ids: an unknown outcome covers every match
        self.settle_ids(keys, exc, self.bump, unknown_means_all=True)

    def op_remove_all(self, mapper: em.Mapper) -> None:
        group = self.rng.choice(GROUPS)
        keys = self.matching("w", group)
        exc = self.call(
            lambda: mapper.repository(Widget).remove_all(f"group:{group}", consistency="immediate")
        )
        self.settle_ids(keys, exc, self.drop)

    def op_remove_all_notes(self, mapper: em.Mapper) -> None:
        group = self.rng.choice(GROUPS)
        keys = self.matching("n", group)
        exc = self.call(
            lambda: mapper.repository(Note).remove_all(f"group:{group}", consistency="immediate")
        )
        self.settle_ids(keys, exc, self.drop, unknown_means_all=True)

    # -- operations: sessions and reads ------------------------------------------------------

    def op_session(self, mapper: em.Mapper) -> None:
        writes: list[tuple[Any, Key, str, dict[str, Any] | None]] = []
        session = mapper.session()
        modified: list[Widget] = []
        chosen = {self.pick("w") for _ in range(self.rng.randint(1, 3))} - {None}
        for id_ in sorted(i for i in chosen if i is not None):
            doc = session.get(Widget, id_, soft_deletes="all")
            if doc is None:
                self.f.problems.append(f"{self.step}: {id_} unreadable in a session")
                continue
            if self.rng.random() < 0.25:
                session.remove(doc)
                writes.append((doc, ("w", id_), "remove", None))
            else:
                self.mutate(doc)
                modified.append(doc)
        added = self.new_widget(self.new_id("w"))
        session.add(added)
        if self.rng.random() < 0.5:
            note = Note(id=self.new_id("n"), group=self.rng.choice(GROUPS), text="session")
            session.add(note)
            writes.append((note, ("n", note.id), "add", doc_content(note)))
        exc = None
        try:
            with session:
                pass  # commit on exit
        except em.EsmapperError as error:
            exc = error
        self.trail.append(f"{self.step} -> {type(exc).__name__ if exc else 'ok'}: {exc}"[:300])
        # contents after the flush: what each document holds is what a success stored
        writes.append((added, ("w", added.id), "add", doc_content(added)))
        writes.extend((d, ("w", d.id), "save", doc_content(d)) for d in modified)
        self.settle_docs(writes, exc)

    def op_get(self, mapper: em.Mapper) -> None:
        id_ = self.pick_any("w")
        if id_ is not None:
            self.check_cached(mapper, ("w", id_), self.raw(("w", id_)))

    def op_racing_get(self, mapper: em.Mapper) -> None:
        """A read's GET, then a write through the other mapper, then the read's fill."""
        id_ = self.pick("w")
        if id_ is None:
            return
        other = self.mappers[1 - self.mappers.index(mapper)]
        mapper.repository(Widget).invalidate_cache(id_)
        key: Key = ("w", id_)

        def write() -> None:
            if self.rng.random() < 0.5:
                exc = self.call(
                    lambda: other.repository(Widget).patch(
                        id_, em.ScriptPatch("ctx._source.n += 1")
                    )
                )
                self.settle_ids([key], exc, self.bump)
            else:
                body = self.partial_body()
                exc = self.call(lambda: other.repository(Widget).patch(id_, em.PartialPatch(body)))
                self.settle_ids([key], exc, self.merge_into(body))

        self.cache.before_fill = write
        try:
            mapper.repository(Widget).get(id_, soft_deletes="all")
        finally:
            self.cache.before_fill = None

    # -- verification -----------------------------------------------------------------------

    def raw(self, key: Key) -> dict[str, Any] | None:
        try:
            return dict(self.es.get(index=self.alias[key[0]], id=key[1]).body)
        except NotFoundError:
            return None

    def check_cached(self, mapper: em.Mapper, key: Key, hit: dict[str, Any] | None) -> None:
        self.f.cache_reads_checked += 1
        doc = mapper.repository(Widget).get(key[1], soft_deletes="all")
        if hit is None:
            stale = doc is not None
        else:
            version = f"{hit['_primary_term']}:{hit['_seq_no']}"
            stale = (
                doc is None
                or doc.version != version
                or doc_content(doc) != source_content("w", hit["_source"])
            )
        if stale:
            self.f.stale_cache_reads += 1
            self.f.problems.append(
                f"{self.step}: stale cache read of {key[1]} via mapper "
                f"{'AB'[self.mappers.index(mapper)]}: got "
                f"{None if doc is None else (doc.version, doc_content(doc))}, server "
                f"{None if hit is None else (hit['_primary_term'], hit['_seq_no'], hit['_source'])}"
            )

    def verify(self) -> None:
        self.f.checks += 1
        aliases = list(self.alias.values())
        self.es.indices.refresh(index=aliases)
        server: dict[Key, dict[str, Any]] = {}
        for kind, alias in self.alias.items():
            resp = self.es.search(
                index=alias, size=10_000, query={"match_all": {}}, seq_no_primary_term=True
            )
            for hit in resp["hits"]["hits"]:
                server[(kind, hit["_id"])] = hit
        problems: list[str] = []
        for key, expected in sorted(self.docs.items()):
            self.f.documents_checked += 1
            hit = server.get(key)
            if hit is None:
                self.f.lost += 1
                problems.append(f"lost {key}: expected {expected}")
                continue
            got = source_content(key[0], hit["_source"])
            if got["n"] > expected["n"]:
                self.f.applied_twice += 1
                problems.append(f"applied twice {key}: n={got['n']} expected {expected}")
            elif got != expected:
                self.f.divergent += 1
                problems.append(f"divergent {key}: server {got} expected {expected}")
        for key in sorted(server.keys() - self.docs.keys()):
            if key in self.removed:
                self.f.resurrected += 1
                problems.append(f"resurrected {key}: {server[key]['_source']}")
            else:
                self.f.phantom += 1
                problems.append(f"phantom {key}: {server[key]['_source']}")
        if problems:
            self.f.problems.extend(f"{self.step}: {p}" for p in problems)
            self.f.problems.append("  after: " + "\n    ".join(self.trail))
            for key in set(server) | set(self.docs):  # resync: count each bug once
                self._sync(key)
        # every cached entry, read through each mapper, must be what the server holds (a
        # key that is not cached reads through to the server: nothing to check there)
        widget_keys = sorted({k for k in [*self.docs, *self.removed] if k[0] == "w"})
        alias = self.alias["w"]
        for key in widget_keys:
            entry = self.cache.peek(f"{alias}:{key[1]}")
            if entry is None or isinstance(entry, ReadMarker):
                continue
            for mapper in self.mappers:
                self.check_cached(mapper, key, server.get(key))
        # then fill the cache (one mget) so the next operation has entries to leave stale
        filler = self.mappers[self.f.checks % 2].repository(Widget)
        filler.get_many([k[1] for k in widget_keys], soft_deletes="all")


# -- the bugs the soak found, pinned down one by one ---------------------------------------


@pytest.fixture
def pair(
    es_url: str, index_prefix: str, proxies: list[FaultProxy]
) -> Iterator[tuple[em.Mapper, FaultProxy]]:
    with em.Mapper(
        proxies[0].url,
        models=[Widget, Note],
        index_prefix=index_prefix,
        cache=RacingCache(),
        max_retries=1,
        sleep=lambda _seconds: None,
    ) as mapper:
        mapper.configure_indexes()
        yield mapper, proxies[0]


def test_delete_by_query_whose_answer_was_lost_and_rerun_refused_is_unknown(
    pair: tuple[em.Mapper, FaultProxy], es_client: Elasticsearch
) -> None:
    """The first delete-by-query was applied but its answer lost; the re-run got a 429:
    raising that 429 would say "nothing was deleted"."""
    mapper, proxy = pair
    notes = mapper.repository(Note)
    notes.add([Note(id="a", group="g"), Note(id="b", group="g")], consistency="immediate")
    proxy.drop_connection(after_forwarding=True, path=WRITE_PATHS)
    proxy.reply_status(429, times=3, path=WRITE_PATHS)
    with pytest.raises(em.OutcomeUnknownError):
        notes.remove_all("group:g", consistency="immediate")
    es_client.indices.refresh(index=mapper.spec(Note).alias)
    assert es_client.count(index=mapper.spec(Note).alias)["count"] == 0


def test_delete_by_query_without_any_answer_is_unknown(
    pair: tuple[em.Mapper, FaultProxy],
) -> None:
    mapper, proxy = pair
    notes = mapper.repository(Note)
    notes.add(Note(id="a", group="g"), consistency="immediate")
    proxy.drop_connection(times=10, path=r"/_delete_by_query$")
    with pytest.raises(em.OutcomeUnknownError):
        notes.remove_all("group:g", consistency="immediate")
    assert notes.get("a") is not None


def test_restore_by_partial_patch_is_seen_by_patch_all(
    pair: tuple[em.Mapper, FaultProxy],
) -> None:
    """A PartialPatch that sets is_deleted is a restore: the id leaves the shared
    recently-deleted list, or by-query writes skip the restored document for 30 s."""
    mapper, _proxy = pair
    widgets = mapper.repository(Widget)
    widgets.add(Widget(id="a", group="g"))
    doc = widgets.get("a")
    assert doc is not None
    doc.is_deleted = True
    widgets.save(doc)
    widgets.patch("a", em.PartialPatch({"is_deleted": False}))
    assert recently_deleted(mapper.services, widgets.info) == []
    script = em.ScriptPatch("ctx._source.n += 1")
    assert widgets.patch_all("group:g", script, consistency="immediate") == 1
    widgets.patch("a", em.PartialPatch({"is_deleted": True}))
    assert recently_deleted(mapper.services, widgets.info) == ["a"]


def test_refreshed_by_query_writes_ignore_a_stale_recently_deleted_hint(
    pair: tuple[em.Mapper, FaultProxy], es_client: Elasticsearch
) -> None:
    """The recently-deleted list is a hint for unrefreshed searches; a restore whose
    outcome was unknown (or made by a process not sharing the cache) leaves it stale. A
    refreshed scan, and the re-lookup of a conflicting document, must not be hidden by it."""
    mapper, _proxy = pair
    widgets = mapper.repository(Widget)
    alias = mapper.spec(Widget).alias
    widgets.add([Widget(id="a", group="g"), Widget(id="b", group="g")])
    doc = widgets.get("a")
    assert doc is not None
    doc.is_deleted = True
    widgets.save(doc)  # remembered as recently deleted
    es_client.update(index=alias, id="a", doc={"is_deleted": False})  # restored elsewhere
    assert recently_deleted(mapper.services, widgets.info) == ["a"]
    script = em.ScriptPatch("ctx._source.n += 1")
    assert widgets.patch_all("group:g", script, consistency="immediate") == 2

    bumped: list[bool] = []

    def bump(_sender: Any, **_kwargs: Any) -> None:  # a concurrent write: a 409, a re-lookup
        if not bumped:
            bumped.append(True)
            es_client.update(index=alias, id="a", script={"source": "ctx._source.n += 1"})

    with signals.documents_changing.connected_to(bump, sender=Widget):
        assert widgets.remove_all("group:g", consistency="immediate") == 2
    es_client.indices.refresh(index=alias)
    assert es_client.count(index=alias)["count"] == 0


@pytest.fixture
def proxies(es_url: str) -> Iterator[list[FaultProxy]]:
    with FaultProxy(es_url, lifetime=300) as a, FaultProxy(es_url, lifetime=300) as b:
        yield [a, b]


@pytest.mark.parametrize("seed", SEEDS)
def test_chaos_soak(
    seed: int,
    es_client: Elasticsearch,
    index_prefix: str,
    proxies: list[FaultProxy],
    tmp_path: Path,
) -> None:
    started = time.monotonic()
    cache = RacingCache()
    figures = Figures(seed=seed)
    mappers = [
        em.Mapper(
            proxy.url,
            models=[Widget, Note],
            index_prefix=index_prefix,
            cache=cache,
            max_retries=1,
            sleep=lambda _seconds: None,
        )
        for proxy in proxies
    ]
    try:
        mappers[0].configure_indexes()
        soak = Soak(random.Random(seed), es_client, mappers, proxies, cache, figures)
        with signals.documents_changing.connected_to(soak.on_changing, sender=Widget):
            soak.run(OPS_PER_SEED)
    finally:
        for mapper in mappers:
            mapper.close()
    figures.seconds = time.monotonic() - started
    print(figures.summary())
    (tmp_path / f"chaos-{seed}.json").write_text(
        json.dumps(attrs.asdict(figures), indent=2, default=str)
    )
    assert figures.zeros() == dict.fromkeys(figures.zeros(), 0), "\n".join(figures.problems[:20])
    assert not figures.problems, "\n".join(figures.problems[:20])
    assert sum(figures.faults_consumed.values()) > 0
