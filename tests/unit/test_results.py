"""FindResults: indexing, slicing and the end of paging, without a server."""

from __future__ import annotations

import pytest

from esmapper.options import check_keywords
from esmapper.results import FindHit, FindResults


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
