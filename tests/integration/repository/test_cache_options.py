"""Per-call cache options and per-repository cache settings (issue 30, item 3):
``expires_in``/``expires_at`` (honoured by the cache's clock, injected here),
``read_cache`` (serve or skip what is cached), a repository's own cache client or none,
and bad values refused before anything is sent."""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

import pytest

import esmapper as em
from esmapper.cache import InMemoryCache
from tests.integration.conftest import MakeMapper

from .cache_hooks import Person, PersonRepository

UTC = dt.timezone.utc
EPOCH = 1_000_000.0  # the fake clocks' start (seconds)


class Timer:
    def __init__(self) -> None:
        self.now = EPOCH

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def timer() -> Timer:
    return Timer()


@pytest.fixture
def cache(timer: Timer) -> InMemoryCache:
    return InMemoryCache(timer=timer)


@pytest.fixture
def mapper(make_mapper: MakeMapper, cache: InMemoryCache, timer: Timer) -> em.Mapper:
    mapper = make_mapper(Person, configure=True, cache=cache)
    assert mapper.documents is not None
    mapper.documents.clock = timer  # expires_at= is measured on the same clock
    return mapper


@pytest.fixture
def people(mapper: em.Mapper) -> em.Repository[Person]:
    return mapper.repository(Person)


def _behind(mapper: em.Mapper, **source: Any) -> None:
    """Change the stored person ``ann`` behind the mapper's back (no invalidation)."""
    alias = mapper.spec(Person).alias
    mapper.client.update(index=alias, id="ann", doc=source, refresh=True)


def _ann(people: em.Repository[Person]) -> None:
    people.add(Person(id="ann", name="Ann", email="ann@example.com"))


def test_expires_in_caches_the_read_for_that_long(
    mapper: em.Mapper, people: em.Repository[Person], timer: Timer
) -> None:
    _ann(people)
    assert people.get("ann", expires_in=30).name == "Ann"  # (asks for caching)
    _behind(mapper, name="Changed")
    timer.now += 29
    assert people.get("ann", expires_in=30).name == "Ann"  # still cached
    timer.now += 2
    assert people.get("ann", expires_in=30).name == "Changed"  # expired: read again


def test_expires_in_takes_a_timedelta(
    mapper: em.Mapper, people: em.Repository[Person], timer: Timer
) -> None:
    _ann(people)
    people.get("ann", cache=True, expires_in=dt.timedelta(minutes=10))
    _behind(mapper, name="Changed")
    timer.now += 599
    assert people.get("ann", cache=True).name == "Ann"
    timer.now += 2
    assert people.get("ann", cache=True).name == "Changed"


def test_expires_at_is_an_instant(
    mapper: em.Mapper, people: em.Repository[Person], timer: Timer
) -> None:
    _ann(people)
    at = dt.datetime.fromtimestamp(EPOCH + 100, UTC)
    people.get("ann", expires_at=at)
    _behind(mapper, name="Changed")
    timer.now += 99
    assert people.get("ann", cache=True).name == "Ann"
    timer.now += 2
    assert people.get("ann", cache=True).name == "Changed"


def test_an_expires_at_already_past_caches_nothing(
    mapper: em.Mapper, people: em.Repository[Person], cache: InMemoryCache
) -> None:
    _ann(people)
    past = dt.datetime.fromtimestamp(EPOCH - 1, UTC)
    assert people.get("ann", expires_at=past).name == "Ann"
    _behind(mapper, name="Changed")
    assert people.get("ann", expires_at=past).name == "Changed"
    assert not isinstance(cache.peek(f"{mapper.spec(Person).alias}:ann"), dict)


def test_a_read_whose_expiry_passed_leaves_no_reservation_behind(
    mapper: em.Mapper, people: em.Repository[Person], cache: InMemoryCache
) -> None:
    """The key a read reserved and did not fill (its expires_at past) is released: the
    next cached read fills it (a marker left for a minute would keep every read of the
    id going to Elasticsearch)."""
    _ann(people)
    key = f"{mapper.spec(Person).alias}:ann"
    past = dt.datetime.fromtimestamp(EPOCH - 1, UTC)
    people.get("ann", expires_at=past)
    people.get_many(["ann"], expires_at=past)
    assert cache.peek(key) is None
    assert people.get("ann", cache=True).name == "Ann"
    assert isinstance(cache.peek(key), dict)


def test_a_search_whose_expiry_passed_calls_no_add_to_cache(
    make_mapper: MakeMapper, cache: InMemoryCache, timer: Timer, caplog: pytest.LogCaptureFixture
) -> None:
    """A cached search given an expires_at already past caches nothing: the hook is not
    called with a negative lifetime (which add_to_cache_with_keys would refuse)."""
    mapper = make_mapper(Person, configure=True, cache=cache)
    mapper.register(Person, repository=PersonRepository)
    assert mapper.documents is not None
    mapper.documents.clock = timer
    people = mapper.repository(Person)
    assert isinstance(people, PersonRepository)
    _ann(people)
    past = dt.datetime.fromtimestamp(EPOCH - 1, UTC)
    with caplog.at_level(logging.ERROR, logger="esmapper.cache"):
        found = people.find("name:Ann", expires_at=past, consistency="immediate")
    assert found[0].email == "ann@example.com"
    assert people.of("add") == [] and "failed" not in caplog.text
    assert cache.peek("email:ann@example.com") is None


def test_cache_false_wins_over_an_expiry(mapper: em.Mapper, people: em.Repository[Person]) -> None:
    _ann(people)
    people.get("ann", cache=False, expires_in=60)
    _behind(mapper, name="Changed")
    assert people.get("ann", cache=True).name == "Changed"


def test_read_cache_false_reads_elasticsearch_and_replaces_the_entry(
    mapper: em.Mapper, people: em.Repository[Person]
) -> None:
    _ann(people)
    people.get("ann", cache=True)
    _behind(mapper, name="Changed")
    assert people.get("ann", cache=True).name == "Ann"  # the entry
    assert people.get("ann", cache=True, read_cache=False).name == "Changed"
    _behind(mapper, name="Later")
    assert people.get("ann", cache=True).name == "Changed"  # the entry it replaced
    [found] = people.get_many(["ann"], cache=True, read_cache=False)
    assert found.name == "Later"


def test_read_cache_true_serves_an_entry_but_stores_none(
    mapper: em.Mapper, people: em.Repository[Person], cache: InMemoryCache
) -> None:
    _ann(people)
    key = f"{mapper.spec(Person).alias}:ann"
    assert people.get("ann", read_cache=True).name == "Ann"  # a miss: read through
    assert cache.peek(key) is None  # stored nothing
    people.get("ann", cache=True)
    _behind(mapper, name="Changed")
    assert people.get("ann", read_cache=True).name == "Ann"  # served
    assert people.get("ann").name == "Changed"  # not cached by default: not served
    assert [p.name for p in people.get_many(["ann"], read_cache=True)] == ["Ann"]


def test_a_search_cache_key_takes_the_expiry_and_read_cache(
    mapper: em.Mapper, people: em.Repository[Person], timer: Timer
) -> None:
    _ann(people)
    first = people.find("name:Ann", cache_key="anns", consistency="immediate", expires_in=20)
    assert [p.name for p in first] == ["Ann"]
    _behind(mapper, name="Ann", email="new@example.com")
    assert people.find("name:Ann", cache_key="anns")[0].email == "ann@example.com"
    fresh = people.find("name:Ann", cache_key="anns", read_cache=False)
    assert fresh[0].email == "new@example.com"
    _behind(mapper, name="Ann", email="newer@example.com")
    timer.now += 301  # the page read_cache=False stored lives the default 300 s
    assert people.find("name:Ann", cache_key="anns")[0].email == "newer@example.com"


def test_set_cache_client_keeps_the_model_in_its_own_cache(
    make_mapper: MakeMapper, cache: InMemoryCache
) -> None:
    own = InMemoryCache()

    class OwnCache(em.Repository[Person]):
        def __init__(self, mapper: em.Mapper, model: type[Person]) -> None:
            super().__init__(mapper, model)
            self.set_cache_client(own)

    mapper = make_mapper(Person, configure=True, cache=cache)
    mapper.register(Person, repository=OwnCache)
    people = mapper.repository(Person)
    _ann(people)
    people.get("ann", cache=True)
    people.find("name:Ann", cache_key="anns", consistency="immediate")
    assert len(own) == 2 and len(cache) == 0
    with mapper.session() as session:  # a flush invalidates in the model's own cache
        found = session.get(Person, "ann")
        assert found is not None
        found.name = "Ann B."
    assert len(own) == 1  # the id's entry went (the key stays: no hook drops it)
    assert people.get("ann", cache=True).name == "Ann B."
    people.invalidate_cache("anns")
    assert len(own) == 1
    with pytest.raises(TypeError, match="takes a CacheClient"):
        people.set_cache_client(object())  # type: ignore[arg-type]


def test_disable_cache_turns_caching_off_for_the_model(
    mapper: em.Mapper, people: em.Repository[Person], cache: InMemoryCache
) -> None:
    _ann(people)
    people.get("ann", cache=True)
    people.disable_cache()
    _behind(mapper, name="Changed")
    assert people.get("ann", cache=True).name == "Changed"  # the old entry is not read
    assert people.find("name:Changed", cache_key="k", consistency="immediate")[0].id == "ann"
    assert cache.peek("k") is None


def test_a_write_with_the_cache_disabled_still_drops_what_another_mapper_cached(
    make_mapper: MakeMapper, cache: InMemoryCache
) -> None:
    """disable_cache in one mapper; another shares the cache client and caches the model:
    the first one's writes still remove the entries (nothing stale is served)."""
    off = make_mapper(Person, configure=True, cache=cache)
    on = make_mapper(Person, cache=cache)
    off.repository(Person).disable_cache()
    off.repository(Person).add(Person(id="ann", name="Ann"))
    assert on.repository(Person).get("ann", cache=True).name == "Ann"
    off.repository(Person).save(Person(id="ann", name="Saved"))
    assert on.repository(Person).get("ann", cache=True).name == "Saved"
    with off.session() as session:
        session.remove(Person(id="ann"))
    assert on.repository(Person).get("ann", cache=True) is None


def test_a_write_with_a_cache_client_of_its_own_drops_the_shared_entries_too(
    make_mapper: MakeMapper, cache: InMemoryCache
) -> None:
    """set_cache_client in one mapper; another caches the model in the mapper's client
    they share: a write through the first drops the entry there too."""
    own = InMemoryCache()
    mine = make_mapper(Person, configure=True, cache=cache)
    other = make_mapper(Person, cache=cache)
    mine.repository(Person).set_cache_client(own)
    mine.repository(Person).add(Person(id="ann", name="Ann"))
    assert other.repository(Person).get("ann", cache=True).name == "Ann"
    assert mine.repository(Person).get("ann", cache=True).name == "Ann"
    assert len(own) == 1 and len(cache) == 1
    mine.repository(Person).save(Person(id="ann", name="Saved"))
    assert len(own) == 0 and len(cache) == 0
    assert other.repository(Person).get("ann", cache=True).name == "Saved"
    mine.repository(Person).patch_all("name:Saved", em.ScriptPatch("ctx._source.visits = 3"))
    assert other.repository(Person).get("ann", cache=True).visits == 3


@pytest.mark.parametrize(
    ("keywords", "message"),
    [
        ({"expires_in": 0}, "expires_in=0 must be a positive"),
        ({"expires_in": -5}, "expires_in=-5 must be a positive"),
        ({"expires_in": "10"}, "expires_in='10' must be a number of seconds or a timedelta"),
        ({"expires_in": True}, "expires_in=True must be a number"),
        ({"expires_in": dt.timedelta(0)}, "must be a positive"),
        ({"expires_at": "2030-01-01"}, "must be a timezone-aware datetime"),
        ({"expires_at": dt.datetime(2030, 1, 1)}, "is a naive datetime"),
        (
            {"expires_in": 5, "expires_at": dt.datetime(2030, 1, 1, tzinfo=UTC)},
            "give one expiry, not both",
        ),
        ({"read_cache": "yes"}, "read_cache='yes' must be True"),
    ],
)
def test_bad_values_are_refused_before_anything_is_sent(
    make_mapper: MakeMapper, keywords: dict[str, Any], message: str
) -> None:
    # nothing listens there: a request sent would raise a connection error instead
    mapper = make_mapper(Person, url="http://127.0.0.1:9", cache=True)
    people = mapper.repository(Person)
    with pytest.raises(ValueError, match=message):
        people.get("ann", **keywords)
    with pytest.raises(ValueError, match=message):
        people.find("name:Ann", cache_key="k", **keywords)
    with pytest.raises(ValueError, match=message):
        people.save(Person(id="ann"), **keywords)
    with pytest.raises(ValueError, match=message):
        mapper.session(**keywords)
