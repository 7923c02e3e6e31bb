"""The cached get's hit path (issue 28): a hit kept in process is served by the path worked
out once per read (``ByIdRead.kept``: ``DocumentCache.reader`` over ``InMemoryCache.hits``
or a ``HybridCache``'s L1), and gives what the whole path gives; everything else (a miss,
an expired or invalidated entry, a bad id, a refused option) still takes the whole path."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest

import esmapper as em
from esmapper import _features, _reading, ids
from esmapper._services import DEFAULT_CACHE_TTL
from esmapper.cache import InMemoryCache
from esmapper.errors import IdTooLongError, InvalidIdTermError, QueryValidationError
from esmapper.model.state import state_of

UTC = dt.timezone.utc


class Address(em.InnerDoc):
    city: str = em.field(em.Keyword(), default="")
    zip_code: str = em.field(em.Keyword(), default="")


class Employee(em.Document, em.HasDates, em.SoftDeletes, em.Versioned):
    """The bench's model (bench/bench_models.py): 12 fields, an embedded object, a list,
    soft deletes, versioned."""

    class Index:
        name = "cached_get_employees"

    name: str = em.field(em.Text(fields={"keyword": em.Keyword()}), default="")
    email: str = em.field(em.Keyword(), default="")
    age: int = em.field(em.Integer(), default=0)
    company_id: str = em.field(em.Keyword(), default="")
    hired_utc: dt.datetime | None = None
    tags: list[str] = em.field(em.Keyword(), factory=list)
    address: Address | None = None


class FakeTimer:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _employee(id: str) -> Employee:
    return Employee(
        id=id,
        name="Ada",
        email="ada@example.com",
        age=36,
        company_id="c1",
        hired_utc=dt.datetime(2020, 1, 2, 3, 4, 5, tzinfo=UTC),
        tags=["a", "b"],
        address=Address(city="London", zip_code="N1"),
    )


@pytest.fixture
def timer() -> FakeTimer:
    return FakeTimer()


@pytest.fixture
def cache(timer: FakeTimer) -> InMemoryCache:
    return InMemoryCache(timer=timer)


@pytest.fixture
def mapper(es_url: str, index_prefix: str, cache: InMemoryCache) -> Iterator[em.Mapper]:
    with em.Mapper(es_url, models=[Employee], index_prefix=index_prefix, cache=cache) as m:
        m.configure_indexes()
        yield m


@pytest.fixture
def repo(mapper: em.Mapper) -> em.Repository[Employee]:
    repo = mapper.repository(Employee)
    repo.add([_employee("e1"), _employee("e2")])
    for _ in range(2):  # a miss (filled), then a hit (its document kept for copies)
        repo.get("e1", cache=True)
    return repo


@pytest.fixture
def whole_path_only(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What reaches the whole path (its check_id and its cache lookup), by id."""
    reached: list[str] = []
    check = ids.check_id

    def counted(id: Any, **kwargs: Any) -> Any:
        reached.append(id)
        return check(id, **kwargs)

    monkeypatch.setattr(_reading, "check_id", counted)
    return reached


def _values(doc: Employee) -> tuple[Any, ...]:
    state = state_of(doc)
    assert state is not None
    return (
        type(doc),
        doc.to_source(),
        doc.id,
        doc.version,
        state.original,
        state.index,
        state.version,
        state.condition,
        state.partial,
        state.session,
    )


def test_a_hit_takes_the_path_worked_out_once(
    repo: em.Repository[Employee], cache: InMemoryCache, whole_path_only: list[str]
) -> None:
    hits = cache.stats.hits
    assert repo.get("e1", cache=True).name == "Ada"
    assert whole_path_only == []  # no check_id, no DocumentCache.read
    assert cache.stats.hits == hits + 1 and cache.stats.misses == 1  # (the first read's)


def test_a_hit_gives_what_the_whole_path_gives(repo: em.Repository[Employee]) -> None:
    fast = repo.get("e1", cache=True)
    read = repo._one_keyword_read("cache", True)
    whole = repo._read_by_id("e1", read)  # DocumentCache.read: the same kept entry
    fetched = repo.get("e1", cache=False)  # a real-time GET, hydrated
    assert fast is not None and whole is not None and fetched is not None
    assert _values(fast) == _values(whole) == _values(fetched)


def test_every_hit_is_a_new_independent_document(repo: em.Repository[Employee]) -> None:
    first, second = repo.get("e1", cache=True), repo.get("e1", cache=True)
    assert first is not None and second is not None
    assert first is not second and state_of(first) is not state_of(second)
    assert first.tags is not second.tags and first.address is not second.address
    first.tags.append("mutated")
    first.address.city = "Paris"  # type: ignore[union-attr]
    first.name = "changed"
    again = repo.get("e1", cache=True)
    assert again is not None
    assert (again.name, again.tags, again.address) == (
        "Ada",
        ["a", "b"],
        Address(city="London", zip_code="N1"),
    )


def test_a_bad_id_still_raises_with_the_cache_warm(
    repo: em.Repository[Employee], cache: InMemoryCache
) -> None:
    """The hit path skips check_id: an entry exists only under the key of an id that
    passed it. Every bad id still raises what check_id raises, and nothing is counted."""
    stats = (cache.stats.hits, cache.stats.misses)
    too_long = "x" * (ids.MAX_ID_BYTES + 1)
    with pytest.raises(IdTooLongError):
        repo.get(too_long, cache=True)
    with pytest.raises(InvalidIdTermError):
        repo.get("e\ud800", cache=True)
    with pytest.raises(ValueError, match="must not be empty"):
        repo.get("", cache=True)
    with pytest.raises(TypeError, match="must be a str"):
        repo.get(1, cache=True)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must be a str"):
        repo.get(None, cache=True)  # type: ignore[arg-type]
    assert (cache.stats.hits, cache.stats.misses) == stats


def test_an_id_of_a_str_subclass_takes_the_whole_path(
    repo: em.Repository[Employee], whole_path_only: list[str]
) -> None:
    class Key(str):
        pass

    found = repo.get(Key("e1"), cache=True)
    assert found is not None and found.id == "e1" and whole_path_only == ["e1"]


def test_an_expired_entry_misses(
    repo: em.Repository[Employee], cache: InMemoryCache, timer: FakeTimer
) -> None:
    misses = cache.stats.misses
    timer.now += DEFAULT_CACHE_TTL.total_seconds() + 1
    found = repo.get("e1", cache=True)
    assert found is not None and found.name == "Ada"
    assert cache.stats.misses == misses + 1  # read again from Elasticsearch


def test_a_write_invalidates_what_the_hit_path_serves(repo: em.Repository[Employee]) -> None:
    doc = repo.get("e1", cache=True)
    assert doc is not None
    version = doc.version
    doc.name = "Grace"
    repo.save(doc)
    again = repo.get("e1", cache=True)
    assert again is not None and again.name == "Grace" and again.version != version
    again.is_deleted = True  # a soft delete: the hit path applies the rules too
    repo.save(again)
    assert repo.get("e1", cache=True) is None
    shown = repo.get("e1", cache=True, soft_deletes="all")
    assert shown is not None and shown.is_deleted


def test_a_soft_deleted_hit_is_refused_by_the_rules(
    repo: em.Repository[Employee], whole_path_only: list[str]
) -> None:
    doc = repo.get("e2")
    assert doc is not None
    doc.is_deleted = True
    repo.save(doc)
    for _ in range(2):
        assert repo.get("e2", cache=True) is None
        found = repo.get("e2", cache=True, soft_deletes="deleted")
        assert found is not None and found.is_deleted
    whole_path_only.clear()
    assert repo.get("e2", cache=True) is None  # a hit, refused on the hit path
    assert whole_path_only == []


def test_keywords_still_resolve_and_refuse(repo: em.Repository[Employee]) -> None:
    found = repo.get("e1", cache=True, timeout=5, retries=1)
    assert found is not None and found.name == "Ada"
    with pytest.raises(TypeError, match=r"get\(\) got unknown keyword\(s\): cahce;"):
        repo.get("e1", cahce=True)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"got unknown keyword\(s\): soft_delete;"):
        repo.get("e1", cache=True, soft_delete="all")  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="soft_deletes='gone'"):
        repo.get("e1", cache=True, soft_deletes="gone")  # type: ignore[arg-type]
    with pytest.raises(QueryValidationError, match="tenant"):
        repo.get("e1", cache=True, tenant="t1")  # no feature gives this model a tenant


def test_no_document_cache_no_hit_path(es_url: str, index_prefix: str) -> None:
    with em.Mapper(es_url, models=[Employee], index_prefix=index_prefix, cache=False) as m:
        m.configure_indexes()
        repo = m.repository(Employee)
        repo.add(_employee("e1"))
        assert repo._one_keyword_read("cache", True).kept is None
        found = repo.get("e1", cache=True)
        assert found is not None and found.name == "Ada"


class _ReadsTenant(_features.Feature):
    name = "cached_get_reads_tenant"
    call_options = ("tenant",)
    __slots__ = ()


def test_a_feature_registered_later_makes_the_read_stale(repo: em.Repository[Employee]) -> None:
    """The hit path was worked out under the registry's call options (their check passed
    then): a registration changes them, and the next get works its read out again."""
    read = repo._one_keyword_read("cache", True)
    assert read.kept is not None and read.current(repo.info, repo.services)
    _features.register(_ReadsTenant)
    try:
        assert not read.current(repo.info, repo.services)
        again = repo._one_keyword_read("cache", True)
        assert again is not read and again.kept is not None
        assert repo.get("e1", cache=True) is not None
    finally:
        _features.unregister(_ReadsTenant)
