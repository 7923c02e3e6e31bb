"""FindResults: indexing, slicing and the end of paging, without a server."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import pytest

from esmapper.options import check_keywords
from esmapper.results import FindHit, FindResults, LazyHits


def page(*ids: str, has_more: bool = False) -> FindResults[str]:
    hits = [FindHit(i, None, 1.0, f"doc-{i}", [i]) for i in ids]
    return FindResults(hits=hits, total=len(ids), page=1, has_more=has_more)


def test_indexing_yields_documents_like_iteration() -> None:
    results = page("a", "b", "c")
    assert results[0] == "doc-a" and results[-1] == "doc-c"
    assert [results[i] for i in range(len(results))] == list(results)
    with pytest.raises(IndexError):
        results[3]


def test_slices_are_lists_of_documents() -> None:
    results = page("a", "b", "c", "d")
    assert results[1:3] == ["doc-b", "doc-c"]
    assert results[::2] == ["doc-a", "doc-c"]
    assert results[5:] == []


def test_a_hit_without_highlights_has_an_empty_dict() -> None:
    assert page("a").hits[0].highlight == {}


def test_next_page_without_more_is_false_and_sends_nothing() -> None:
    def fetch(current: FindResults[str]) -> FindResults[str] | None:
        raise AssertionError("must not fetch")

    results = FindResults(hits=[], total=5, page=1, has_more=False, limit=0, fetch_next=fetch)
    assert results.next_page() is False


def test_an_unknown_keyword_lists_the_calls_own_and_the_options() -> None:
    with pytest.raises(TypeError) as info:
        check_keywords("find", {"limt": 3, "sort": "age"}, ("limit", "sort"))
    message = str(info.value)
    assert message.startswith("find() got unknown keyword(s): limt;")
    assert "limit, sort" in message and "consistency" in message and "soft_deletes" in message
    check_keywords("find", {"limit": 3, "consistency": "wait"}, ("limit",))


def lazy_page(*ids: str, has_more: bool = False) -> tuple[FindResults[str], list[str]]:
    """A page whose hits are built from raw hits on first read; the list records each
    hit built (by id)."""
    built: list[str] = []

    def make(raw: Mapping[str, Any], document: str) -> FindHit[str]:
        built.append(raw["_id"])
        return FindHit(raw["_id"], "1:1", raw["_score"], document, raw.get("sort"))

    raw = [{"_id": i, "_score": 1.0, "sort": [i]} for i in ids]
    documents = [f"doc-{i}" for i in ids]
    lazy = LazyHits(documents, raw, make)
    return FindResults(hits=None, total=len(ids), page=1, has_more=has_more, lazy=lazy), built


def test_reading_documents_builds_no_hit() -> None:
    results, built = lazy_page("a", "b", "c")
    assert results.documents == ["doc-a", "doc-b", "doc-c"] == list(results)
    assert results[1] == "doc-b" and results[0:2] == ["doc-a", "doc-b"]
    assert len(results) == 3 and results
    with pytest.raises(IndexError):
        results[3]
    assert built == []


def test_hits_are_built_once_and_stay_the_same_objects() -> None:
    results, built = lazy_page("a", "b")
    hits = results.hits
    assert [(h.id, h.score, h.document, h.sort) for h in hits] == [
        ("a", 1.0, "doc-a", ["a"]),
        ("b", 1.0, "doc-b", ["b"]),
    ]
    assert results.hits is hits and built == ["a", "b"]
    hits[0].document = "replaced"  # what documents and iteration yield from then on
    assert results.documents == ["replaced", "doc-b"] == list(results) and results[0] == "replaced"


def test_the_documents_list_is_a_copy() -> None:
    results, _ = lazy_page("a", "b")
    results.documents.clear()
    assert results.documents == ["doc-a", "doc-b"] and len(results) == 2


def test_the_last_sort_builds_only_the_last_hit() -> None:
    results, built = lazy_page("a", "b", "c")
    assert results.search_after_token == page("c").search_after_token
    assert built == ["c"]
    empty, _ = lazy_page()
    assert empty.search_after_token is None and not empty and empty.hits == []


def test_replacing_documents_before_or_after_the_hits_are_built() -> None:
    results, built = lazy_page("a", "b")
    results._replace_documents(str.upper)
    assert results.documents == ["DOC-A", "DOC-B"] and built == []
    assert [h.document for h in results.hits] == ["DOC-A", "DOC-B"]
    results._replace_documents(str.lower)
    assert [h.document for h in results.hits] == ["doc-a", "doc-b"] == results.documents


def test_next_page_takes_the_following_page_unbuilt() -> None:
    following, built = lazy_page("c", "d")

    def fetch(current: FindResults[str]) -> FindResults[str] | None:
        assert current.documents == ["doc-a"]
        return following

    first, _ = lazy_page("a", has_more=True)
    first._fetch_next = fetch
    assert first.next_page() is True
    assert first.documents == ["doc-c", "doc-d"] and built == []
    assert [h.id for h in first.hits] == ["c", "d"] and built == ["c", "d"]


def test_the_repr_shows_the_hits() -> None:
    results, _ = lazy_page("a")
    assert repr(results) == (
        "FindResults(hits=[FindHit(id='a', version='1:1', score=1.0, document='doc-a', "
        "sort=['a'], index=None, highlight={})], total=1, page=1, has_more=False, "
        "aggregations=None, limit=10)"
    )


def test_two_threads_reading_the_hits_of_one_page_get_the_same_list() -> None:
    """The second reader waits for the first one's build instead of building its own (or,
    once the raw hits are dropped, finding nothing to build from)."""
    started, release = threading.Event(), threading.Event()
    built: list[str] = []

    def make(raw: Mapping[str, Any], document: str) -> FindHit[str]:
        built.append(raw["_id"])
        started.set()
        assert release.wait(5)
        return FindHit(raw["_id"], "1:1", 1.0, document, None)

    lazy = LazyHits(["doc-a"], [{"_id": "a"}], make)
    results = FindResults(hits=None, total=1, page=1, has_more=False, lazy=lazy)
    seen: list[list[FindHit[str]]] = []
    first = threading.Thread(target=lambda: seen.append(results.hits))
    first.start()
    assert started.wait(5)  # the first reader is building
    second = threading.Thread(target=lambda: seen.append(results.hits))
    second.start()
    second.join(0.2)  # the second reader waits (without the lock it would build again)
    release.set()
    first.join(5)
    second.join(5)
    assert len(seen) == 2 and seen[0] is seen[1]
    assert [h.id for h in seen[0]] == ["a"] and built == ["a"]
