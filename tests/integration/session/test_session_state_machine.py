"""A Hypothesis state machine: a Session against a model of the store, with a second writer.

One session (the system under test) and a second writer (another Mapper on the same
indexes, writing immediately) work on a handful of ids, for a model read through the cache
(the two mappers share the cache client, as processes share Redis) and one that is not.
The machine keeps a model of the store (fields and an abstract version per id) and of the
session (the object held for each id, the values the store last confirmed for it, its
pending create/removal, which fields a partial load brought), and predicts every call
exactly:

- a flush sends removals, then creates, then saves of changed documents; a removal or save
  at a stale version is a 409 (VersionConflictError) that leaves the store at the other
  writer's value and the document pending; a create of a stored id is a
  DuplicateDocumentError; a removal that finds nothing completes; a new object confirmed
  for a held id replaces the held one;
- ``get``/``get_many``/``find`` serve held objects (with their local changes, filtered by
  the soft-delete mode) and adopt what they load; a partially loaded object is completed
  by ``get``/``get_many`` and a whole-document ``find``: unchanged fields take the stored
  values, local changes stay, and the version moves on only when there were none;
- ``rollback`` restores the last confirmed values and cancels pending creates/removals;
  closing the session and opening the next one starts from an empty identity map.

After every step the store (raw client) must equal the model, every held object must hold
the expected values and version, and ``new``/``deleted``/``dirty`` and the identity map must
be what the model says (so no id is both mapped and confirmed removed).

``ESMAPPER_SM_EXAMPLES`` / ``ESMAPPER_SM_STEPS`` scale it up for soak runs (the examples
are derandomized, so a CI run is repeatable); ``ESMAPPER_SM_RANDOM=1`` draws new ones. Run
with ``-s`` to see the figures.
"""

from __future__ import annotations

import datetime as dt
import itertools
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pytest
from elasticsearch import Elasticsearch
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

import esmapper as em
from esmapper.testing.cleanup import delete_prefixed

EXAMPLES = int(os.environ.get("ESMAPPER_SM_EXAMPLES", "60"))
STEPS = int(os.environ.get("ESMAPPER_SM_STEPS", "40"))

IDS = ("a", "b")
FIELDS = ("name", "n", "is_deleted")
DEFAULTS: dict[str, Any] = {"name": "", "n": 0, "is_deleted": False}
VALUES: dict[str, st.SearchStrategy[Any]] = {
    "name": st.sampled_from(["p", "q"]),
    "n": st.integers(1, 3),  # never the default: a field clobbered by a default shows
    "is_deleted": st.booleans(),
}
MODES = st.sampled_from(["active", "all", "deleted"])


class Item(em.Document, em.SoftDeletes, em.Versioned):
    class Index:
        name = "sm_items"
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    name: str = ""
    n: int = 0


class CachedItem(em.Document, em.SoftDeletes, em.Versioned):
    """The same, cached by id (both writers' mappers share the cache client)."""

    class Index:
        name = "sm_cached_items"
        cache = dt.timedelta(minutes=5)
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    name: str = ""
    n: int = 0


@dataclass
class Stored:
    """What the store holds for an id; ``gen`` stands for its version."""

    fields: dict[str, Any]
    gen: int


@dataclass
class Held:
    """The object the session maps for an id, as the model expects it."""

    obj: Any
    orig: dict[str, Any]  # what the store last confirmed, for the loaded fields
    local: dict[str, Any]  # the values the object holds now
    base: int  # the gen its version refers to
    loaded: set[str] | None = None  # partial load: the fields it brought (None: whole)
    assigned: set[str] = field(default_factory=set)  # assigned since a partial load
    removing: bool = False

    def changes(self) -> dict[str, Any]:
        """What a save writes (nothing: the object is clean)."""
        if self.loaded is None:
            return {k: v for k, v in self.local.items() if v != self.orig[k]}
        out = {k: self.local[k] for k in self.assigned}
        out.update({k: self.local[k] for k in self.loaded if self.local[k] != self.orig[k]})
        return out


@dataclass
class New:
    obj: Any
    fields: dict[str, Any]


def visible(deleted: bool, mode: str) -> bool:
    return mode == "all" or deleted == (mode == "deleted")


def key(doc: Any) -> str:
    """The id of a document the session or the store holds (never ``None`` there)."""
    assert isinstance(doc.id, str)
    return doc.id


def values_of(doc: Any) -> dict[str, Any]:
    return {"name": doc.name, "n": doc.n, "is_deleted": doc.is_deleted}


class SessionMachine(RuleBasedStateMachine):
    model: ClassVar[type[Any]]
    url: ClassVar[str]
    raw: ClassVar[Elasticsearch]
    prefix: ClassVar[str]
    serial: ClassVar[Iterator[int]]
    steps: ClassVar[list[int]]

    def __init__(self) -> None:
        super().__init__()
        prefix = f"{self.prefix}{next(self.serial)}-"
        cache = em.InMemoryCache()
        self.mapper = em.Mapper(self.url, models=[self.model], index_prefix=prefix, cache=cache)
        self.mapper.configure_indexes()
        self.other = em.Mapper(self.url, models=[self.model], index_prefix=prefix, cache=cache)
        self.theirs = self.other.repository(self.model)
        self.alias = self.mapper.spec(self.model).alias
        self.session = self.mapper.session()
        self.store: dict[str, Stored] = {}
        self.held: dict[str, Held] = {}
        self.new: list[New] = []
        self.gens = itertools.count(1)
        self.steps.append(0)

    def teardown(self) -> None:
        self.session.close()
        delete_prefixed(self.raw, self.mapper.index_prefix)
        self.other.close()
        self.mapper.close()

    # -- model helpers -----------------------------------------------------------------

    def held_ids(self) -> list[str]:
        return sorted(self.held)

    def adopt(self, doc: Any, *, partial: bool = False) -> None:
        stored = self.store[key(doc)]
        if partial:
            orig = {"name": stored.fields["name"]}
            local = {**DEFAULTS, **orig}
            self.held[key(doc)] = Held(doc, orig, local, stored.gen, loaded={"name"})
        else:
            fields = dict(stored.fields)
            self.held[key(doc)] = Held(doc, fields, dict(fields), stored.gen)

    def complete(self, id: str) -> Held | None:
        """A partially loaded object read whole: unchanged fields take the stored values,
        local changes stay; the version moves on only when there are none. Gone from the
        store: ``None``, and a clean object leaves the session."""
        held = self.held[id]
        changes = held.changes()
        stored = self.store.get(id)
        if stored is None:
            if not changes:
                del self.held[id]
            return None
        held.orig = dict(stored.fields)
        held.local = {**stored.fields, **changes}
        held.loaded = None
        held.assigned = set()
        if not changes:
            held.base = stored.gen
        return held

    def expect_read(self, id: str, mode: str) -> Held | Stored | None:
        """What get(id, mode) returns: a held object, a stored document it will adopt, or
        nothing."""
        held = self.held.get(id)
        if held is not None:
            if held.loaded is not None:
                completed = self.complete(id)
                if completed is None:
                    return None
                held = completed
            return held if visible(held.local["is_deleted"], mode) else None
        stored = self.store.get(id)
        if stored is None or not visible(stored.fields["is_deleted"], mode):
            return None
        return stored

    def check_read(self, id: str, expected: Held | Stored | None, got: Any) -> None:
        if expected is None:
            assert got is None, f"{id}: expected nothing, got {got!r}"
            return
        assert got is not None, f"{id}: expected a document"
        if isinstance(expected, Held):
            assert got is expected.obj, f"{id}: not the held object"
        else:
            assert got.id == id and values_of(got) == expected.fields
            self.adopt(got)

    # -- setup -------------------------------------------------------------------------

    @initialize(ids=st.sets(st.sampled_from(IDS)), n=VALUES["n"])
    def seed(self, ids: set[str], n: int) -> None:
        for id in sorted(ids):
            self.theirs.add(self.model(id=id, name="p", n=n))
            self.store[id] = Stored({"name": "p", "n": n, "is_deleted": False}, next(self.gens))

    # -- the session -------------------------------------------------------------------

    @rule(id=st.sampled_from(IDS), name=VALUES["name"], n=VALUES["n"])
    def add_new(self, id: str, name: str, n: int) -> None:
        doc = self.model(id=id, name=name, n=n)
        self.session.add(doc)
        self.new.append(New(doc, {"name": name, "n": n, "is_deleted": False}))

    @rule(id=st.sampled_from(IDS))
    def add_loaded(self, id: str) -> None:
        """``add`` a document a repository loaded: it joins the identity map, unless the
        session maps another object for the id."""
        doc = self.mapper.repository(self.model).get(id, soft_deletes="all")
        if doc is None:
            assert id not in self.store
            return
        if id in self.held:
            with pytest.raises(em.EsmapperError, match="already in this session"):
                self.session.add(doc)
            return
        self.session.add(doc)
        self.adopt(doc)

    @rule(id=st.sampled_from(IDS), mode=MODES)
    def get(self, id: str, mode: em.SoftDeleteMode) -> None:
        expected = self.expect_read(id, mode)
        self.check_read(id, expected, self.session.get(self.model, id, soft_deletes=mode))

    @rule(ids=st.lists(st.sampled_from(IDS), min_size=1, max_size=3), mode=MODES)
    def get_many(self, ids: list[str], mode: em.SoftDeleteMode) -> None:
        wanted = list(dict.fromkeys(ids))
        expected = {id: self.expect_read(id, mode) for id in wanted}
        got = self.session.get_many(self.model, ids, soft_deletes=mode)
        present = [id for id in wanted if expected[id] is not None]
        assert [d.id for d in got] == present
        for doc in got:
            self.check_read(key(doc), expected[key(doc)], doc)

    @rule(mode=MODES)
    def find(self, mode: em.SoftDeleteMode) -> None:
        self.check_find(mode, partial=False)

    @rule(mode=MODES)
    def find_partial(self, mode: em.SoftDeleteMode) -> None:
        """``find`` with ``includes``: the objects it adopts are loaded in part."""
        self.check_find(mode, partial=True)

    def check_find(self, mode: em.SoftDeleteMode, *, partial: bool) -> None:
        kwargs: dict[str, Any] = {"includes": ["name"]} if partial else {}
        results = self.session.find(
            self.model,
            None,
            soft_deletes=mode,
            consistency="immediate",
            limit=50,
            **kwargs,
        )
        expected = sorted(
            id for id, s in self.store.items() if visible(s.fields["is_deleted"], mode)
        )
        assert sorted(map(key, results.documents)) == expected
        for doc in results.documents:
            held = self.held.get(key(doc))
            if held is None:
                self.adopt(doc, partial=partial)
                continue
            assert doc is held.obj
            if held.loaded is not None and not partial:
                self.complete(key(doc))

    @precondition(lambda self: self.held)
    @rule(data=st.data(), names=st.lists(st.sampled_from(FIELDS), min_size=1, max_size=3))
    def modify(self, data: st.DataObject, names: list[str]) -> None:
        """Assign fields of a held object (a partial one records them as assigned)."""
        held = self.held[data.draw(st.sampled_from(self.held_ids()), label="id")]
        for name in names:
            value = data.draw(VALUES[name], label=name)
            setattr(held.obj, name, value)
            held.local[name] = value
            if held.loaded is not None:
                held.assigned.add(name)

    @precondition(lambda self: self.held)
    @rule(data=st.data())
    def remove(self, data: st.DataObject) -> None:
        held = self.held[data.draw(st.sampled_from(self.held_ids()), label="id")]
        self.session.remove(held.obj)
        held.removing = True

    @precondition(lambda self: self.held)
    @rule(data=st.data())
    def remove_another_object(self, data: st.DataObject) -> None:
        """``remove`` a repository-loaded object for a held id: refused, one object per id
        (it deleted the document and dropped the held object from the identity map, which
        stayed dirty, conflicting at every flush)."""
        id = data.draw(st.sampled_from(self.held_ids()), label="id")
        doc = self.mapper.repository(self.model).get(id, soft_deletes="all")
        if doc is None:
            assert id not in self.store
            return
        with pytest.raises(em.EsmapperError, match="already in this session"):
            self.session.remove(doc)

    @precondition(lambda self: self.new)
    @rule(data=st.data())
    def remove_new(self, data: st.DataObject) -> None:
        pending = self.new.pop(data.draw(st.integers(0, len(self.new) - 1), label="which"))
        self.session.remove(pending.obj)

    @precondition(lambda self: self.held)
    @rule(data=st.data())
    def expunge(self, data: st.DataObject) -> None:
        held = self.held.pop(data.draw(st.sampled_from(self.held_ids()), label="id"))
        self.session.expunge(held.obj)
        assert held.obj not in self.session

    @rule()
    def rollback(self) -> None:
        self.session.rollback()
        self.new.clear()
        for held in self.held.values():
            held.removing = False
            if held.loaded is None:
                held.local = dict(held.orig)
            else:
                held.local = {**DEFAULTS, **held.orig}
            held.assigned = set()

    @rule()
    def reopen(self) -> None:
        """Close the session (what is pending is dropped) and start the next one."""
        self.session.close()
        self.session = self.mapper.session()
        self.held.clear()
        self.new.clear()

    @rule(commit=st.booleans())
    def flush(self, commit: bool) -> None:
        failures, error = self.predict_flush()
        try:
            self.session.commit() if commit else self.session.flush()
        except em.EsmapperError as exc:
            assert error is not None, f"unexpected {exc!r}"
            assert type(exc) is error, f"expected {error.__name__}, got {exc!r}"
            got = sorted((f.id, f.status) for f in exc.failures)  # type: ignore[attr-defined]
            assert got == sorted((id, 409) for id in failures)
        else:
            assert error is None, f"expected {error.__name__} for {failures}"

    def predict_flush(self) -> tuple[list[str], type[em.EsmapperError] | None]:
        """Apply what a flush does to the model; returns the ids that fail and the error."""
        kinds: set[str] = set()
        failures: list[str] = []
        before = dict(self.held)
        for id, held in list(before.items()):  # removals first
            if not held.removing:
                continue
            stored = self.store.get(id)
            if stored is None:  # nothing to delete: the removal is complete
                del self.held[id]
            elif stored.gen == held.base:
                del self.store[id]
                del self.held[id]
            else:
                kinds.add("delete")
                failures.append(id)
        for pending in list(self.new):  # then creates, in the order they were added
            id = key(pending.obj)
            if id in self.store:
                kinds.add("create")
                failures.append(id)
                continue
            gen = next(self.gens)
            self.store[id] = Stored(dict(pending.fields), gen)
            self.new.remove(pending)
            fields = dict(pending.fields)
            self.held[id] = Held(pending.obj, fields, dict(fields), gen)  # replaces a held one
        for id, held in before.items():  # then saves of changed documents
            changes = held.changes()
            if held.removing or not changes:
                continue
            stored = self.store.get(id)
            if stored is None or stored.gen != held.base or self.held.get(id) is not held:
                kinds.add("index" if held.loaded is None else "update")
                failures.append(id)
                continue
            if held.loaded is None:
                stored.fields = dict(held.local)
                stored.gen = next(self.gens)
                held.orig = dict(held.local)
            else:  # a partial update (a no-op keeps the version)
                merged = {**stored.fields, **changes}
                if merged != stored.fields:
                    stored.fields = merged
                    stored.gen = next(self.gens)
                held.orig = {**held.orig, **changes}
                held.loaded |= changes.keys()
                held.assigned = set()
            held.base = stored.gen
        if not failures:
            return [], None
        if len(kinds) > 1:
            return failures, em.BulkWriteError
        if kinds == {"create"}:
            return failures, em.DuplicateDocumentError
        return failures, em.VersionConflictError

    # -- the second writer -------------------------------------------------------------

    @rule(id=st.sampled_from(IDS), name=VALUES["name"], n=VALUES["n"])
    def other_create(self, id: str, name: str, n: int) -> None:
        doc = self.model(id=id, name=name, n=n)
        if id in self.store:
            with pytest.raises(em.DuplicateDocumentError):
                self.theirs.add(doc)
            return
        self.theirs.add(doc)
        self.store[id] = Stored({"name": name, "n": n, "is_deleted": False}, next(self.gens))

    @rule(id=st.sampled_from(IDS), data=st.data(), name=st.sampled_from(FIELDS))
    def other_patch(self, id: str, data: st.DataObject, name: str) -> None:
        value = data.draw(VALUES[name], label="value")
        stored = self.store.get(id)
        if stored is None:
            with pytest.raises(em.DocumentNotFoundError):
                self.theirs.patch(id, em.PartialPatch({name: value}))
            return
        self.theirs.patch(id, em.PartialPatch({name: value}))
        if stored.fields[name] != value:  # detect_noop: an equal value writes nothing
            stored.fields[name] = value
            stored.gen = next(self.gens)

    @rule(id=st.sampled_from(IDS), n=VALUES["n"])
    def other_save(self, id: str, n: int) -> None:
        doc = self.theirs.get(id, soft_deletes="all")
        if doc is None:
            assert id not in self.store
            return
        doc.n = n
        self.theirs.save(doc)
        self.store[id].fields["n"] = n
        self.store[id].gen = next(self.gens)

    @rule(id=st.sampled_from(IDS))
    def other_delete(self, id: str) -> None:
        self.theirs.remove(id)
        self.store.pop(id, None)

    # -- invariants --------------------------------------------------------------------

    @invariant()
    def count_steps(self) -> None:
        self.steps[-1] += 1

    @invariant()
    def store_and_session_match_the_model(self) -> None:
        docs = self.raw.mget(index=self.alias, ids=list(IDS))["docs"]
        found = {d["_id"]: d for d in docs if d.get("found")}
        actual = {i: {k: d["_source"][k] for k in FIELDS} for i, d in found.items()}
        assert actual == {i: s.fields for i, s in self.store.items()}
        versions = {i: f"{d['_primary_term']}:{d['_seq_no']}" for i, d in found.items()}
        session = self.session
        for doc_id, held in self.held.items():
            assert values_of(held.obj) == held.local, doc_id
            stored = self.store.get(doc_id)
            if stored is not None and stored.gen == held.base:
                assert held.obj.version == versions[doc_id], f"{doc_id}: version not written back"
            else:
                assert held.obj.version != versions.get(doc_id), f"{doc_id}: should be stale"
        new_objects = [p.obj for p in self.new]
        assert [id(d) for d in session.new] == [id(d) for d in new_objects]
        mapped = [d for d in session if all(d is not n for n in new_objects)]
        assert sorted(map(id, mapped)) == sorted(id(h.obj) for h in self.held.values())
        assert sorted(map(key, session.deleted)) == sorted(
            i for i, h in self.held.items() if h.removing
        )
        assert all(any(d is h.obj for h in self.held.values()) for d in session.deleted)
        assert sorted(map(key, session.dirty)) == sorted(
            i for i, h in self.held.items() if not h.removing and h.changes()
        )


@pytest.mark.parametrize("model", [Item, CachedItem], ids=["uncached", "cached"])
def test_a_session_against_a_model_of_the_store(
    es_url: str, es_client: Elasticsearch, index_prefix: str, model: type[Any]
) -> None:
    SessionMachine.model = model
    SessionMachine.url = es_url
    SessionMachine.raw = es_client
    SessionMachine.prefix = index_prefix
    SessionMachine.serial = itertools.count()
    SessionMachine.steps = []
    run_state_machine_as_test(
        SessionMachine,
        settings=settings(
            max_examples=EXAMPLES,
            stateful_step_count=STEPS,
            deadline=None,
            derandomize=os.environ.get("ESMAPPER_SM_RANDOM") is None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
    steps = SessionMachine.steps
    print(f"state machine ({model.__name__}): {len(steps)} examples, {sum(steps)} steps")
