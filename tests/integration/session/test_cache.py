"""The document cache: hits, invalidation on every write path, the read-after-write race."""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Iterator
from typing import Any

import pytest

import esmapper as em
from esmapper.cache import InMemoryCache


class Cached(em.Document, em.SoftDeletes, em.Versioned):
    class Index:
        name = "cached"
        cache = dt.timedelta(minutes=1)

    name: str = ""
    age: int = 0


class Place(em.InnerDoc):
    city: str = ""
    tags: list[str] = em.field(factory=list)


class Profile(em.Document, em.HasDates, em.SoftDeletes, em.Versioned):
    """Mutable values of every kind: each cache hit must get its own."""

    class Index:
        name = "cached_profiles"
        cache = dt.timedelta(minutes=1)

    name: str = ""
    tags: list[str] = em.field(factory=list)
    place: Place | None = None
    places: list[Place] = em.field(factory=list)
    extra: dict[str, Any] = em.field(factory=dict)
    seen: dt.datetime | None = None


def _profile(id: str) -> Profile:
    return Profile(
        id=id,
        name="Ada",
        tags=["a", "b"],
        place=Place(city="London", tags=["home"]),
        places=[Place(city="Turin")],
        extra={"deep": {"list": [1, 2]}},
        seen=dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc),
    )


@pytest.fixture
def cache() -> InMemoryCache:
    return InMemoryCache()


@pytest.fixture
def repo(es_url: str, index_prefix: str, cache: InMemoryCache) -> Iterator[em.Repository[Cached]]:
    with em.Mapper(es_url, models=[Cached], index_prefix=index_prefix, cache=cache) as m:
        m.configure_indexes()
        yield m.repository(Cached)


def test_get_is_served_from_the_cache(repo: em.Repository[Cached], cache: InMemoryCache) -> None:
    repo.add(Cached(id="c", name="first"))
    assert repo.get("c").name == "first"
    hits = cache.stats.hits
    again = repo.get("c")
    assert again.name == "first" and cache.stats.hits == hits + 1
    again.name = "mutated locally"
    assert repo.get("c").name == "first"  # each hit hydrates a fresh object
    assert repo.get("c", cache=False).name == "first"


@pytest.fixture
def profiles(
    es_url: str, index_prefix: str, cache: InMemoryCache
) -> Iterator[em.Repository[Profile]]:
    with em.Mapper(es_url, models=[Profile], index_prefix=index_prefix, cache=cache) as m:
        m.configure_indexes()
        yield m.repository(Profile)


def test_every_cache_hit_is_a_document_of_its_own(profiles: em.Repository[Profile]) -> None:
    stored = profiles.add(_profile("p")).to_source()
    hits = [profiles.get("p") for _ in range(4)]  # the first fills the cache
    assert len({id(d) for d in hits}) == 4 and all(d == hits[0] for d in hits)
    first, second = hits[1], hits[2]
    first.tags.append("mine")
    first.place.tags.append("mine")
    first.places[0].city = "Paris"
    first.extra["deep"]["list"].append(3)
    second.name = "renamed"
    second.place = None
    for doc in (profiles.get("p"), profiles.get("p", cache=False), hits[3]):
        assert doc.to_source() == stored
    assert first.tags == ["a", "b", "mine"] and second.name == "renamed"  # theirs, still


def test_an_array_of_arrays_stored_by_another_writer_is_not_shared_by_cache_hits(
    profiles: em.Repository[Profile],
) -> None:
    # Elasticsearch keeps ``[["a", "b"], "c"]`` in a keyword field as it does ``["a", "b", "c"]``
    source = {**_profile("n").to_source(), "tags": [["a", "b"], "c"]}
    profiles.mapper.client.index(index=profiles.spec.alias, id="n", document=source)
    hits = [profiles.get("n") for _ in range(3)]  # the first fills the cache
    for doc in hits:
        inner: Any = doc.tags[0]  # declared list[str]: the stored value is an array
        inner.append("mine")
    again = profiles.get("n")
    assert again.tags == [["a", "b"], "c"] == profiles.get("n", cache=False).tags


def test_cache_hits_save_at_their_version_and_a_stale_hit_conflicts(
    profiles: em.Repository[Profile],
) -> None:
    profiles.add(_profile("v"))
    profiles.get("v")
    mine, theirs = profiles.get("v"), profiles.get("v")
    assert mine.version == theirs.version
    mine.tags.append("first")
    profiles.save(mine)
    theirs.tags.append("second")
    with pytest.raises(em.VersionConflictError):
        profiles.save(theirs)  # read at the same version: stale now
    again = profiles.get("v")
    assert again.tags == ["a", "b", "first"] and again.version == mine.version
    again.tags.append("second")
    profiles.save(again)
    assert profiles.get("v").tags == ["a", "b", "first", "second"]


def test_a_session_sees_in_place_changes_of_a_cache_hit(profiles: em.Repository[Profile]) -> None:
    profiles.add(_profile("s"))
    profiles.get("s")  # cached
    with profiles.mapper.session() as session:
        doc = session.get(Profile, "s")
        tags = doc.tags  # handed out: the session watches the document
        session.flush()
        tags.append("late")
        doc.place.city = "Bath"
        session.flush()
    again = profiles.get("s")
    assert again.tags == ["a", "b", "late"] and again.place.city == "Bath"


def test_soft_deleted_cache_hits_follow_the_mode_of_each_read(
    profiles: em.Repository[Profile],
) -> None:
    doc = profiles.add(_profile("d"))
    doc.is_deleted = True
    profiles.save(doc)
    for _ in range(3):  # filled by the first read, served by the next ones
        assert profiles.get("d") is None
        deleted = profiles.get("d", soft_deletes="deleted")
        assert deleted is not None and deleted.is_deleted
        assert profiles.get("d", soft_deletes="all").is_deleted
    deleted.is_deleted = False  # restored through one hit: the others are unchanged
    profiles.save(deleted)
    assert profiles.get("d").is_deleted is False
    assert profiles.get("d", soft_deletes="deleted") is None


@pytest.mark.parametrize(
    "write", ["save", "remove", "patch", "patch_all", "remove_all", "soft_delete"]
)
def test_every_write_kind_invalidates(repo: em.Repository[Cached], write: str) -> None:
    doc = repo.add(Cached(id="w", name="old"), consistency="wait")
    assert repo.get("w").name == "old"  # cached now
    if write == "save":
        doc.name = "new"
        repo.save(doc)
    elif write == "remove":
        repo.remove(doc)
    elif write == "patch":
        repo.patch("w", em.PartialPatch({"name": "new"}))
    elif write == "patch_all":
        repo.patch_all("id:w", em.PartialPatch({"name": "new"}), consistency="immediate")
    elif write == "remove_all":
        repo.remove_all("id:w", consistency="immediate")
    else:
        doc.is_deleted = True
        repo.save(doc)
    after = repo.get("w")
    if write in ("remove", "remove_all", "soft_delete"):
        assert after is None
    else:
        assert after.name == "new"


def test_a_conflict_drops_the_entry_so_a_retry_reads_the_store(
    repo: em.Repository[Cached], cache: InMemoryCache
) -> None:
    """A 409 means the cached copy may be the stale one: a get -> save retry loop must
    read the stored version, not spin on the cache for its whole lifetime."""
    repo.add(Cached(id="f", name="kept"))
    cached = repo.get("f")
    repo.mapper.client.index(  # another writer, behind the cache's back
        index=repo.spec.alias, id="f", document={**cached.to_source(), "name": "theirs"}
    )
    cached.name = "mine"
    with pytest.raises(em.VersionConflictError):
        repo.save(cached)
    fresh = repo.get("f")
    assert fresh.name == "theirs"
    fresh.name = "mine"
    repo.save(fresh)  # the retry succeeds
    assert repo.get("f").name == "mine"


def test_a_read_that_started_before_a_write_cannot_refill_the_old_version(
    repo: em.Repository[Cached],
) -> None:
    doc = repo.add(Cached(id="r", name="v1"))
    client = repo.mapper.client
    fetched = threading.Event()
    release = threading.Event()
    original_get = client.get

    def slow_get(*args: Any, **kwargs: Any) -> Any:
        response = original_get(*args, **kwargs)  # reads v1 ...
        fetched.set()
        release.wait(5)  # ... while a writer saves v2 and invalidates
        return response

    results: list[Any] = []
    client.get = slow_get  # type: ignore[method-assign]
    try:
        reader = threading.Thread(target=lambda: results.append(repo.get("r")))
        reader.start()
        assert fetched.wait(5)
        client.get = original_get  # type: ignore[method-assign]
        doc.name = "v2"
        repo.save(doc)
        release.set()
        reader.join(5)
    finally:
        client.get = original_get  # type: ignore[method-assign]
    assert results[0].name == "v1"  # the slow reader saw the old version...
    assert repo.get("r").name == "v2"  # ...but did not put it back into the cache


def test_soft_deleted_ids_are_hidden_from_searches_before_refresh(
    repo: em.Repository[Cached],
) -> None:
    docs = repo.add([Cached(id="h1"), Cached(id="h2")], consistency="wait")
    docs[0].is_deleted = True
    repo.save(docs[0])  # eventual: the search index has not seen it yet
    assert [d.id for d in repo.find()] == ["h2"]
    assert {d.id for d in repo.find(soft_deletes="all")} == {"h1", "h2"}


def test_custom_key_caches_query_results(repo: em.Repository[Cached], cache: InMemoryCache) -> None:
    repo.add(Cached(id="k", name="keyed"), consistency="wait")
    first = repo.find_one("name:keyed", cache_key="cached:by-name:keyed")
    repo.remove("k", consistency="wait")
    cached = repo.find_one("name:keyed", cache_key="cached:by-name:keyed")
    assert first.id == cached.id == "k"  # custom keys are not invalidated by writes
    repo.invalidate_cache("cached:by-name:keyed")
    assert repo.find_one("name:keyed", cache_key="cached:by-name:keyed") is None


def test_a_string_cache_is_a_deprecated_cache_key(
    repo: em.Repository[Cached], cache: InMemoryCache
) -> None:
    repo.add(Cached(id="d", name="dep"), consistency="wait")
    with pytest.warns(DeprecationWarning, match="cache_key='cached:dep'") as warned:
        first = repo.find_one("name:dep", cache="cached:dep")  # type: ignore[arg-type]
    assert warned[0].filename == __file__  # points at the caller's line
    repo.remove("d", consistency="wait")
    assert first is not None
    cached = repo.find_one("name:dep", cache_key="cached:dep")  # the same entry
    assert cached is not None and cached.id == "d"
    with pytest.warns(DeprecationWarning, match="cache_key='k'") as warned:
        options = em.Options(cache="k")  # type: ignore[arg-type]
    assert warned[0].filename == __file__
    assert (options.cache, options.cache_key) == (None, "k")


def test_bad_cache_options_are_refused_before_sending(repo: em.Repository[Cached]) -> None:
    with pytest.raises(ValueError, match="cache=1 must be True, False or None"):
        repo.get("x", cache=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="cache_key='' must be a non-empty string"):
        repo.find(cache_key="")
    with pytest.raises(TypeError, match=r"get\(\) got unknown keyword\(s\): cache_keys;"):
        repo.get("x", cache_keys="k")  # type: ignore[call-arg]
