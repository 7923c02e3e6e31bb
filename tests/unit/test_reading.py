"""By-id reads served by the document cache (``Repository.get``): what a call under its
options works out once (:meth:`~esmapper._reading.Reading._by_id_read`), and what stays per call.

Nothing goes over the network: the mappers point at a closed port (port 9, discard); the
cache is filled by hand with the hit a GET would have answered, so every read here is a
cache hit (a miss would fail on the closed port).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import attrs
import pytest

import esmapper as em
from esmapper import _limits
from esmapper import _reading as reading_module
from esmapper._features import Visibility
from esmapper.cache import DocumentCache
from esmapper.model.state import state_of
from esmapper.options import Options


class Card(em.Document, em.SoftDeletes, em.Versioned):
    class Index:
        name = "card"
        cache = True  # cached by default: a get with no keyword reads the cache

    title: str = em.field(em.Keyword(), default="")
    tags: list[str] = em.field(em.Keyword(), factory=list)


@pytest.fixture
def mapper() -> Iterator[em.Mapper]:
    with em.Mapper(
        "http://127.0.0.1:9", models=[Card], index_prefix="unit_", cache=em.InMemoryCache()
    ) as m:
        yield m


def _cache(mapper: em.Mapper, id: str, *, deleted: bool = False) -> None:
    """Put in the cache the hit a GET of ``id`` would answer."""
    services, info = mapper.services, Card.__esmapper__
    source = {"title": f"t-{id}", "tags": ["a", "b"], "is_deleted": deleted}
    hit = {"_id": id, "_index": "unit_card-v1", "_source": source, "_seq_no": 3, "_primary_term": 1}
    _found, token = services.cache_lookup(info, id)
    services.cache_fill(info, id, hit, token, dt.timedelta(minutes=5))
    assert services.cache_lookup(info, id)[0] is hit


def _counting(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[Any]:
    calls: list[Any] = []
    real = getattr(module, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_a_get_without_keywords_builds_no_options_and_enters_no_limits(
    mapper: em.Mapper, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = mapper.repository(Card)
    _cache(mapper, "c1")
    merges = _counting(monkeypatch, Options, "merge")
    limits = _counting(monkeypatch, _limits, "applied")
    for _ in range(3):
        card = repo.get("c1")
        assert card is not None and card.title == "t-c1"
    assert merges == [] and limits == []


def test_what_options_imply_is_worked_out_once_per_options(
    mapper: em.Mapper, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = mapper.repository(Card)
    _cache(mapper, "c1")
    rules = _counting(monkeypatch, reading_module, "visibility")
    for _ in range(3):
        assert repo.get("c1") is not None
        assert repo.get("c1", cache=True) is not None
        assert repo.get("c1", soft_deletes="all") is not None
    assert len(rules) == 3  # the defaults, cache=True, soft_deletes="all": once each
    # equal options, one entry
    assert repo._by_id_read(repo.defaults) is repo._by_id_read(Options())


def _limits_seen(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The call limits each GET a by-id read sends runs under, in order (the GET answers
    the hit a real one would: the document exists)."""
    seen: list[_limits.CallLimits] = []

    def spying(client: Any, spec: Any, id: str, **_kwargs: Any) -> dict[str, Any]:
        seen.append(_limits.current())
        source = {"title": f"t-{id}", "tags": [], "is_deleted": False}
        return {
            "_id": id,
            "_index": "unit_card-v1",
            "_source": source,
            "_seq_no": 1,
            "_primary_term": 1,
        }

    monkeypatch.setattr(reading_module, "get_document", spying)
    return seen


def test_a_limit_of_the_defaults_still_applies_to_a_call_without_keywords(
    mapper: em.Mapper, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = mapper.repository(Card)
    seen = _limits_seen(monkeypatch)
    repo.defaults = Options(timeout=2.5)
    assert repo.get("m1") is not None  # misses: one GET each
    assert repo.get("m2", retries=1) is not None
    assert seen == [_limits.CallLimits(2.5, None), _limits.CallLimits(2.5, 1)]


def test_a_limit_given_as_none_means_the_default(
    mapper: em.Mapper, monkeypatch: pytest.MonkeyPatch
) -> None:
    # as every option's None: "the repository's (or session's) default"
    repo = mapper.repository(Card)
    seen = _limits_seen(monkeypatch)
    repo.defaults = Options(timeout=2.5, retries=3)
    repo.get("m1", timeout=None)
    repo.get("m2", retries=None, cache=True)
    repo.get("m3", cache=False)
    assert seen == [_limits.CallLimits(2.5, 3)] * 3


def test_a_cache_hit_sends_nothing_and_enters_no_limits(
    mapper: em.Mapper, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = mapper.repository(Card)
    seen = _limits_seen(monkeypatch)
    assert repo.get("m1", timeout=5) is not None  # the miss fills the cache
    limits = _counting(monkeypatch, _limits, "applied")
    for _ in range(2):
        card = repo.get("m1", timeout=5, retries=2)
        assert card is not None and card.title == "t-m1"
    assert limits == [] and seen == [_limits.CallLimits(5.0, None)]
    assert repo.get("m1", timeout=5, cache=False) is not None  # not cached: a GET
    assert seen[-1] == _limits.CallLimits(5.0, None) and len(seen) == 2


def test_repeated_keywords_are_checked_and_merged_once(
    mapper: em.Mapper, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = mapper.repository(Card)
    _cache(mapper, "c1")
    merges = _counting(monkeypatch, Options, "merge")
    for _ in range(3):
        assert repo.get("c1", cache=True) is not None
        assert repo.get("c1", soft_deletes="all", cache=True) is not None
    assert len(merges) == 2
    # new defaults: merged again into them
    repo.defaults = Options(soft_deletes="deleted")
    assert repo.get("c1", cache=True) is None  # "deleted" now: c1 is live
    assert len(merges) == 3


def test_a_keyword_spelled_with_another_type_is_not_taken_for_a_known_one(
    mapper: em.Mapper,
) -> None:
    repo = mapper.repository(Card)
    _cache(mapper, "c1")
    assert repo.get("c1", cache=True) is not None
    with pytest.raises(ValueError, match="cache=1"):
        repo.get("c1", cache=1)  # type: ignore[arg-type]  # 1 == True, but not a bool
    with pytest.raises(TypeError, match=r"^get\(\) got unknown keyword\(s\): cach;"):
        repo.get("c1", cach=True)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"^get\(\) got unknown keyword\(s\): cach;"):
        repo.get("c1", cach=True)  # type: ignore[call-arg]  # (never kept)
    with pytest.raises(ValueError, match="tenant"):
        repo.get("c1", tenant=["a"])  # type: ignore[arg-type]  # unhashable: refused


def test_the_rules_hold_on_a_cache_hit(mapper: em.Mapper) -> None:
    repo = mapper.repository(Card)
    _cache(mapper, "live")
    _cache(mapper, "gone", deleted=True)
    for _ in range(2):  # the first hit hydrates, the next copies: the same answers
        assert repo.get("gone") is None
        assert repo.get("gone", soft_deletes="deleted") is not None
        assert repo.get("gone", soft_deletes="all") is not None
        assert repo.get("live") is not None
        assert repo.get("live", soft_deletes="deleted") is None
        assert [c.id for c in repo.get_many(["live", "gone"])] == ["live"]


def test_a_cache_hit_is_a_new_document_each_time(mapper: em.Mapper) -> None:
    repo = mapper.repository(Card)
    _cache(mapper, "c1")
    first = repo.get("c1")
    assert first is not None
    first.title = "changed"
    first.tags.append("c")
    second = repo.get("c1")
    assert second is not None and second is not first
    assert (second.title, second.tags, second.version) == ("t-c1", ["a", "b"], first.version)
    state = state_of(second)
    assert state is not None and state.original == {
        "title": "t-c1",
        "tags": ["a", "b"],
        "is_deleted": False,
    }


def test_a_feature_attached_later_is_seen_by_the_next_read(
    mapper: em.Mapper, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = mapper.repository(Card)
    _cache(mapper, "c1")
    assert repo.get("c1") is not None
    info = Card.__esmapper__
    hidden = Visibility(lambda doc: doc.title != "t-c1", ("title",))
    points = attrs.evolve(info.points, visible=(*info.points.visible, lambda _o: hidden))
    monkeypatch.setattr(info, "points", points)
    assert repo.get("c1") is None
    assert repo._by_id_read(repo.defaults).points is points


def test_the_kept_entries_are_bounded(mapper: em.Mapper) -> None:
    repo = mapper.repository(Card)
    for n in range(reading_module._BY_ID_MAX + 5):
        repo._by_id_read(Options(timeout=n + 1))
    assert 0 < len(repo._by_id) <= reading_module._BY_ID_MAX


def test_a_document_cache_set_on_the_mapper_later_is_seen_by_the_next_read() -> None:
    with em.Mapper("http://127.0.0.1:9", models=[Card], index_prefix="unit_") as mapper:
        repo = mapper.repository(Card)
        opts = repo.defaults
        mapper.documents = None
        assert repo._by_id_read(opts).ttl is None  # no document cache: nothing cached
        mapper.documents = DocumentCache(em.InMemoryCache())
        assert repo._by_id_read(opts).ttl is not None  # Card's `cache = True` now applies
        mapper.documents = None
        assert repo._by_id_read(opts).ttl is None
