"""The cache hooks of a repository subclass (issue 30, item 3): ``invalidate_cache_for``
sees the documents (value and original) and the change type of every write path,
``invalidate_cache_by_query`` every ``patch_all`` and ``remove_all``, ``add_to_cache``
the documents a cached read fetched; a person cached by email
(``add_to_cache_with_keys``) is read without a search and dropped when it changes."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest

import esmapper as em
from esmapper import _cache_hooks, signals
from esmapper.cache import InMemoryCache
from esmapper.patches import ActionPatch, JsonPatch, PartialPatch, ScriptPatch
from esmapper.signals import ChangeType
from tests.integration.conftest import MakeMapper

from .cache_hooks import Person, PersonRepository

ADDED, SAVED, REMOVED = ChangeType.ADDED, ChangeType.SAVED, ChangeType.REMOVED


@pytest.fixture
def cache() -> InMemoryCache:
    return InMemoryCache()


@pytest.fixture
def mapper(make_mapper: MakeMapper, cache: InMemoryCache) -> em.Mapper:
    mapper = make_mapper(Person, configure=True, cache=cache)
    mapper.register(Person, repository=PersonRepository)
    return mapper


@pytest.fixture
def people(mapper: em.Mapper) -> PersonRepository:
    repo = mapper.repository(Person)
    assert isinstance(repo, PersonRepository)
    return repo


@pytest.fixture
def searches() -> Iterator[list[Any]]:
    """The searches sent for Person (``before_query``)."""
    sent: list[Any] = []

    def receiver(sender: Any, **kwargs: Any) -> None:
        sent.append(kwargs)

    signals.before_query.connect(receiver, sender=Person)
    yield sent
    signals.before_query.disconnect(receiver, sender=Person)


def _ann(people: PersonRepository) -> Person:
    return people.add(Person(id="ann", name="Ann", email="ann@example.com", dept="eng"))


# -- invalidate_cache_for: every write path ---------------------------------------------


def test_add_save_remove_pass_value_original_and_change_type(people: PersonRepository) -> None:
    ann = _ann(people)
    assert people.of("invalidate") == [("invalidate", ADDED, [("ann@example.com", None)])]
    people.calls.clear()
    loaded = people.get("ann")
    assert loaded is not None
    loaded.email = "ann@new.example.com"
    people.save(loaded)
    assert people.of("invalidate") == [
        ("invalidate", SAVED, [("ann@new.example.com", "ann@example.com")])
    ]
    people.calls.clear()
    people.remove(loaded)
    assert people.of("invalidate") == [
        ("invalidate", REMOVED, [("ann@new.example.com", "ann@new.example.com")])
    ]
    assert ann.id == "ann"


def test_a_constructed_document_saved_has_no_original(people: PersonRepository) -> None:
    _ann(people)
    people.calls.clear()
    people.save(Person(id="ann", name="Ann", email="ann@other.example.com"))
    assert people.of("invalidate") == [("invalidate", SAVED, [("ann@other.example.com", None)])]


def test_remove_by_id_loads_the_document_for_the_hook(people: PersonRepository) -> None:
    _ann(people)
    people.calls.clear()
    people.remove("ann")
    [(_, change, pairs)] = people.of("invalidate")
    assert change is REMOVED and pairs == [("ann@example.com", "ann@example.com")]
    assert people.get("ann") is None


def test_client_side_patches_pass_the_patched_document_and_the_stored_one(
    people: PersonRepository,
) -> None:
    _ann(people)
    people.calls.clear()
    people.patch("ann", ActionPatch(lambda p: setattr(p, "email", "a1@example.com")))
    people.patch("ann", JsonPatch([{"op": "replace", "path": "/email", "value": "a2@x.com"}]))
    assert people.of("invalidate") == [
        ("invalidate", SAVED, [("a1@example.com", "ann@example.com")]),
        ("invalidate", SAVED, [("a2@x.com", "a1@example.com")]),
    ]


def test_partial_and_script_patches_by_id_pass_the_stored_document(
    people: PersonRepository, cache: InMemoryCache, searches: list[Any]
) -> None:
    """A partial or script patch by id is read and written at the version read when the
    repository has invalidate_cache_for: the key made of the old email goes."""
    _ann(people)
    assert people.get_by_email("ann@example.com", consistency="immediate") is not None
    assert cache.peek("email:ann@example.com") is not None
    people.calls.clear()
    people.patch("ann", PartialPatch({"email": "p@example.com"}))
    assert people.of("invalidate") == [
        ("invalidate", SAVED, [("p@example.com", "ann@example.com")])
    ]
    assert cache.peek("email:ann@example.com") is None  # not served stale any more
    people.calls.clear()
    people.patch(["ann"], ScriptPatch("ctx._source.visits += 1"))
    assert people.of("invalidate") == [("invalidate", SAVED, [(None, "p@example.com")])]
    found = people.get("ann", cache=True)
    assert found is not None and found.email == "p@example.com" and found.visits == 1
    with pytest.raises(em.DocumentNotFoundError):
        people.patch("nobody", PartialPatch({"visits": 2}))


def test_patch_all_passes_each_scanned_document_merged_and_calls_the_query_hook(
    people: PersonRepository,
) -> None:
    _ann(people)
    people.add(Person(id="bob", name="Bob", email="bob@example.com", dept="ops"))
    people.calls.clear()
    changed = people.patch_all(
        "dept:eng", PartialPatch({"email": "team@example.com"}), consistency="immediate"
    )
    assert changed == 1
    assert people.of("invalidate") == [
        ("invalidate", SAVED, [("team@example.com", "ann@example.com")])
    ]
    assert people.of("by_query") == [("by_query", SAVED, "dept:eng")]


def test_a_script_patch_all_passes_each_document(people: PersonRepository) -> None:
    """With invalidate_cache_for, patch_all(ScriptPatch) writes per document (as with
    cache=True), never by query: the hook sees each stored document."""
    _ann(people)
    people.calls.clear()
    script = ScriptPatch("ctx._source.email = 'x@example.com'")
    assert people.patch_all("dept:eng", script, consistency="immediate") == 1
    assert people.of("invalidate") == [("invalidate", SAVED, [(None, "ann@example.com")])]
    assert people.of("by_query") == [("by_query", SAVED, "dept:eng")]


def test_remove_all_passes_each_document(people: PersonRepository, cache: InMemoryCache) -> None:
    """remove_all scans and removes per document: the key made of a removed person's
    email goes (a delete-by-query left it serving her)."""
    _ann(people)
    people.add(Person(id="bob", name="Bob", email="bob@example.com", dept="eng"))
    assert people.get_by_email("ann@example.com", consistency="immediate") is not None
    people.calls.clear()
    assert people.remove_all("name:Ann", consistency="immediate") == 1
    assert people.of("invalidate") == [
        ("invalidate", REMOVED, [("ann@example.com", "ann@example.com")])
    ]
    assert people.of("by_query") == [("by_query", REMOVED, "name:Ann")]
    assert cache.peek("email:ann@example.com") is None
    assert people.get_by_email("ann@example.com") is None


def test_the_query_hook_runs_when_the_call_fails(people: PersonRepository) -> None:
    with pytest.raises(em.QueryValidationError):
        people.patch_all("nope:1", PartialPatch({"visits": 1}))
    assert people.of("by_query") == [("by_query", SAVED, "nope:1")]


def test_a_session_flush_passes_each_kind(mapper: em.Mapper, people: PersonRepository) -> None:
    _ann(people)
    people.calls.clear()
    with mapper.session() as session:
        loaded = session.get(Person, "ann")
        assert loaded is not None
        loaded.email = "ann2@example.com"
        session.add(Person(id="cy", name="Cy", email="cy@example.com"))
    with mapper.session() as session:
        gone = session.get(Person, "cy")
        session.remove(gone)
    calls = people.of("invalidate")
    assert ("invalidate", ADDED, [("cy@example.com", None)]) in calls
    assert ("invalidate", SAVED, [("ann2@example.com", "ann@example.com")]) in calls
    assert ("invalidate", REMOVED, [("cy@example.com", "cy@example.com")]) in calls
    assert len(calls) == 3


def test_a_failing_hook_is_logged_and_the_write_stands(
    people: PersonRepository, caplog: pytest.LogCaptureFixture
) -> None:
    people.fail = True
    with caplog.at_level(logging.ERROR, logger="esmapper.cache"):
        ann = _ann(people)
    assert ann.version is not None and people.get("ann") is not None
    assert "invalidate_cache_for failed" in caplog.text


def test_a_failure_making_the_hooks_documents_is_logged_and_the_save_settles(
    people: PersonRepository, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the hook is given is made after the write was sent: a failure there (a stored
    source the model cannot load) is logged, the save settles (its version taken), and a
    save after it is no conflict."""
    ann = _ann(people)

    def unloadable(pending: Any) -> Any:
        raise TypeError("a _source must be an object")

    monkeypatch.setattr(_cache_hooks, "_modified", unloadable)
    ann.email = "ann2@example.com"
    with caplog.at_level(logging.ERROR, logger="esmapper.cache"):
        people.save(ann)
    assert "could not be made" in caplog.text
    ann.visits = 2
    people.save(ann)  # at the version the first save settled
    found = people.get("ann", cache=False)
    assert found is not None and (found.email, found.visits) == ("ann2@example.com", 2)


def test_a_failed_write_is_passed_too(people: PersonRepository) -> None:
    """Whatever the outcome: a write whose answer was lost may be stored."""
    _ann(people)
    people.calls.clear()
    with pytest.raises(em.DuplicateDocumentError):
        people.add(Person(id="ann", email="dup@example.com"))
    assert people.of("invalidate") == [("invalidate", ADDED, [("dup@example.com", None)])]


# -- add_to_cache and keys of one's own ---------------------------------------------------


def test_a_cached_get_passes_what_it_fetched_and_not_its_hits(people: PersonRepository) -> None:
    _ann(people)
    people.get("ann", cache=True, expires_in=90)
    people.get("ann", cache=True, expires_in=90)  # a hit: nothing fetched
    people.get("ann")  # not cached: no hook
    assert people.of("add") == [("add", ["ann@example.com"], 90.0, False)]


def test_get_many_passes_the_documents_it_filled(people: PersonRepository) -> None:
    _ann(people)
    people.add(Person(id="bob", email="bob@example.com"))
    people.get("ann", cache=True)
    people.calls.clear()
    found = people.get_many(["ann", "bob", "nobody"], cache=True)
    assert [p.id for p in found] == ["ann", "bob"]
    [(_, emails, expires_in, dirty)] = people.of("add")
    assert emails == ["bob@example.com"] and expires_in == 300.0 and dirty is False


def test_searches_pass_their_page_as_a_dirty_read_unless_refreshed(
    people: PersonRepository,
) -> None:
    _ann(people)
    people.find("dept:eng", consistency="immediate", cache_key="eng")
    people.find("dept:eng", cache_key="eng2")
    people.find("dept:eng", cache_key="eng")  # served from the cache: nothing fetched
    people.find("dept:eng")  # not cached
    people.find("dept:eng", includes=["name"], cache_key="part")  # partial documents
    assert people.of("add") == [
        ("add", ["ann@example.com"], 300.0, False),
        ("add", ["ann@example.com"], 300.0, True),
    ]


def test_get_by_email_is_served_from_the_key_the_get_cached(
    people: PersonRepository, searches: list[Any]
) -> None:
    _ann(people)
    people.get("ann", cache=True)  # add_to_cache keys it by email
    found = people.get_by_email("ANN@example.com ")
    assert found is not None and found.id == "ann" and found.version is not None
    assert searches == []  # served from the key: no search
    found.name = "Ann B."
    people.save(found)  # a change drops both keys (and the id)
    again = people.get_by_email("ann@example.com", consistency="immediate")
    assert again is not None and again.name == "Ann B." and len(searches) == 1


def test_a_changed_email_drops_the_old_key(people: PersonRepository) -> None:
    _ann(people)
    people.get("ann", cache=True)
    loaded = people.get("ann")
    assert loaded is not None
    loaded.email = "ann@new.example.com"
    people.save(loaded, consistency="immediate")
    assert people.get_by_email("ann@example.com") is None
    moved = people.get_by_email("ann@new.example.com")
    assert moved is not None and moved.id == "ann"


def test_add_to_cache_with_keys_refuses_bad_entries(people: PersonRepository) -> None:
    ann = _ann(people)
    with pytest.raises(TypeError, match="non-empty string"):
        people.add_to_cache_with_keys({"": ann})
    with pytest.raises(TypeError, match="caches Person documents"):
        people.add_to_cache_with_keys({"k": "ann"})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="not stored yet"):
        people.add_to_cache_with_keys({"k": Person(id="new")})
    part = people.find_one("id:ann", includes=["name"], consistency="immediate")
    assert part is not None
    with pytest.raises(ValueError, match="loaded in part"):
        people.add_to_cache_with_keys({"k": part})
    with pytest.raises(ValueError, match="expires_in"):
        people.add_to_cache_with_keys({"k": ann}, expires_in=0)


def test_keys_of_several_documents_are_a_page(
    people: PersonRepository, searches: list[Any]
) -> None:
    ann = _ann(people)
    bob = people.add(Person(id="bob", email="bob@example.com", dept="eng"))
    people.add_to_cache_with_keys({"list:dept:eng": [ann, bob]})
    page = people.find("dept:eng", cache_key="list:dept:eng")
    assert [p.id for p in page] == ["ann", "bob"] and page.total == 2 and searches == []
    script = ScriptPatch("ctx._source.visits += 1")
    assert people.patch_all("dept:eng", script, consistency="immediate") == 2  # (scans)
    searched = len(searches)
    page = people.find("dept:eng", cache_key="list:dept:eng", consistency="immediate")
    assert len(searches) == searched + 1 and {p.visits for p in page} == {1}


def test_register_refuses_what_is_no_repository_or_comes_too_late(
    make_mapper: MakeMapper,
) -> None:
    mapper = make_mapper(Person)
    with pytest.raises(TypeError, match=r"subclass of em\.Repository"):
        mapper.register(Person, repository=dict)  # type: ignore[arg-type]
    mapper.repository(Person)
    with pytest.raises(ValueError, match="already has its repository"):
        mapper.register(Person, repository=PersonRepository)
    assert Person not in mapper.services.custom_keys


def test_a_repository_without_hooks_costs_no_lookup(make_mapper: MakeMapper) -> None:
    class Plain(em.Repository[Person]):
        def by_name(self, name: str) -> Person | None:
            return self.find_one(f"name:{name}")

    mapper = make_mapper(Person, configure=True)
    mapper.register(Person, repository=Plain)
    assert isinstance(mapper.repository(Person), Plain)
    assert Person not in mapper.services.custom_keys


def test_a_repository_keying_reads_only_loads_nothing_for_its_writes(
    make_mapper: MakeMapper, cache: InMemoryCache, searches: list[Any]
) -> None:
    """A subclass overriding add_to_cache alone: remove(id) loads nothing (no mget, so no
    read to key either), a patch by id is one update (no search)."""

    class KeysReads(em.Repository[Person]):
        loads: list[list[str]] = []  # noqa: RUF012

        def add_to_cache(self, documents: list[Person], **_: Any) -> None:
            pass

        def get_many(self, ids: Any, **options: Any) -> list[Person]:
            self.loads.append(list(ids))
            return super().get_many(ids, **options)

    mapper = make_mapper(Person, configure=True, cache=cache)
    mapper.register(Person, repository=KeysReads)
    people = mapper.repository(Person)
    assert Person in mapper.services.custom_keys
    assert Person not in mapper.services.write_hooks
    people.add(Person(id="ann", email="ann@example.com"))
    people.patch("ann", PartialPatch({"visits": 1}), cache=True)
    people.remove("ann", cache=True)
    assert KeysReads.loads == [] and searches == []
    assert people.get("ann", cache=False) is None


def test_union_original_and_modified() -> None:
    a, b = Person(id="a"), Person(id="b")
    docs = [em.ModifiedDocument(a, b), em.ModifiedDocument(a, None), em.ModifiedDocument(None, b)]
    assert em.union_original_and_modified(docs) == [a, b]
    assert em.union_original_and_modified([]) == []


def test_keys_stored_after_a_write_dropped_the_id_are_removed_again(
    make_mapper: MakeMapper, cache: InMemoryCache
) -> None:
    """A write landing between a get's fill and its hook's keys: the write removed the
    id's entry (and its hook ran before the keys existed), so the keys go again."""

    class Racing(PersonRepository):
        def add_to_cache(
            self, documents: list[Person], *, expires_in: float | None, dirty_read: bool
        ) -> None:
            super().add_to_cache(documents, expires_in=expires_in, dirty_read=dirty_read)
            # another process's save of the same person, its first step: the id removed
            self.services.invalidate_ids(self.info, [d.id for d in documents])

    mapper = make_mapper(Person, configure=True, cache=cache)
    mapper.register(Person, repository=Racing)
    people = mapper.repository(Person)
    people.add(Person(id="ann", email="ann@example.com"))
    people.get("ann", cache=True)
    assert cache.peek("email:ann@example.com") is None
    people.get("ann", cache=True)  # no race this time: the key stays
    assert cache.peek("email:ann@example.com") is None  # (Racing always races)
    plain = make_mapper(Person, cache=InMemoryCache())
    plain.register(Person, repository=PersonRepository)
    plain.repository(Person).get("ann", cache=True)
    assert plain.cache is not None and plain.cache.get("email:ann@example.com") is not None


def test_a_search_racing_a_write_does_not_store_its_page(
    people: PersonRepository, cache: InMemoryCache
) -> None:
    """The key is reserved before the search: a hook dropping it meanwhile (a write
    whose answer came while the search ran) refuses the page that search read."""
    _ann(people)

    def meanwhile(sender: Any, **kwargs: Any) -> None:
        people.invalidate_cache("list:eng")

    signals.after_query.connect(meanwhile, sender=Person)
    try:
        found = people.find("dept:eng", cache_key="list:eng", consistency="immediate")
    finally:
        signals.after_query.disconnect(meanwhile, sender=Person)
    assert [p.id for p in found] == ["ann"] and cache.peek("list:eng") is None
    people.find("dept:eng", cache_key="list:eng")  # no race: stored
    assert cache.peek("list:eng") is not None


class Member(em.Document, em.SoftDeletes, em.Versioned):
    class Index:
        name = "hooked_members"

    email: str = em.field(em.Keyword(), default="")


class MemberRepository(em.Repository[Member]):
    """Keeps members under their email, from what the cached reads fetched."""

    def add_to_cache(
        self, documents: list[Member], *, expires_in: float | None, dirty_read: bool
    ) -> None:
        keyed = {f"member:{m.email}": m for m in documents}
        self.add_to_cache_with_keys(keyed, expires_in=expires_in)

    def by_email(self, email: str) -> Member | None:
        return self.find_one(f'email:"{email}"', cache_key=f"member:{email}")


def test_a_soft_deleted_document_a_read_fetched_is_not_keyed(
    make_mapper: MakeMapper, cache: InMemoryCache
) -> None:
    """add_to_cache is given what a read under the repository's defaults shows: a
    soft-deleted member fetched (hidden by the read, or shown by soft_deletes="all") is
    not served by a key to the searches that hide her."""
    mapper = make_mapper(Member, configure=True, cache=cache)
    mapper.register(Member, repository=MemberRepository)
    members = mapper.repository(Member)
    assert isinstance(members, MemberRepository)
    members.add(Member(id="bo", email="bo@example.com", is_deleted=True))
    assert members.get_many(["bo"], cache=True) == []
    assert members.get("bo", cache=True, soft_deletes="all") is not None
    assert members.find("email:*", cache=True, soft_deletes="all", consistency="immediate")
    assert cache.peek("member:bo@example.com") is None
    assert members.by_email("bo@example.com") is None
