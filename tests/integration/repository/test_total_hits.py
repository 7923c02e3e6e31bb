"""How far a search counts its matches (``track_total_hits``): exactly on the first page,
on every page of ``page=`` paging and for ``count``; never again on later pages of
search-after or snapshot paging (their total is the first page's); ``total=N`` /
``total=False`` count less, and say so (``results.total_exact``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import esmapper as em
from esmapper.testing._rules import Exchange, Reply
from esmapper.testing.cluster import ClusterProxy
from tests.integration.conftest import MakeMapper

from .models import Employee


class _Searches:
    """Keeps the ``track_total_hits`` of every search sent through the proxy."""

    def __init__(self) -> None:
        self.tracked: list[Any] = []

    def before(self, exchange: Exchange) -> Reply | None:
        body = exchange.json()
        if exchange.path.endswith("/_search") and isinstance(body, dict):
            self.tracked.append(body.get("track_total_hits", "absent"))
        return None

    def after(self, exchange: Exchange, reply: Reply) -> Reply:
        return reply


@pytest.fixture
def searches(cluster: ClusterProxy) -> _Searches:
    rule = _Searches()
    cluster.add_rule(rule)
    return rule


@pytest.fixture
def staff(make_mapper: MakeMapper, cluster: ClusterProxy) -> Iterator[em.Repository[Employee]]:
    repo = make_mapper(Employee, url=cluster.url, configure=True).repository(Employee)
    repo.add(
        [Employee(id=f"p{i:02}", name=f"P{i}", age=20 + i) for i in range(12)],
        consistency="wait",
    )
    yield repo


@pytest.mark.parametrize("paging", [{"search_after": True}, {"snapshot": True}])
def test_later_search_after_pages_do_not_count_again(
    staff: em.Repository[Employee], searches: _Searches, paging: dict[str, Any]
) -> None:
    results = staff.find(sort="age", limit=5, **paging)
    seen = [d.id for d in results]
    assert (results.total, results.total_exact) == (12, True)
    while results.next_page():
        seen.extend(d.id for d in results)
        assert (results.total, results.total_exact) == (12, True)  # the first page's
    assert len(seen) == 12
    assert searches.tracked == [True, False, False]


def test_page_paging_and_count_count_every_match(
    staff: em.Repository[Employee], searches: _Searches
) -> None:
    results = staff.find(sort="age", limit=5, page=2)
    assert (results.total, results.total_exact, results.has_more) == (12, True, True)
    assert results.next_page() and results.has_more is False
    assert staff.count() == 12
    assert searches.tracked == [True, True, True]


def test_counting_less_is_a_choice_and_says_so(
    staff: em.Repository[Employee], searches: _Searches
) -> None:
    capped = staff.find(sort="age", limit=3, total=4)
    assert (capped.total, capped.total_exact, capped.has_more) == (4, False, True)
    # page paging counts no further than whether another page exists
    lazy = staff.find(sort="age", limit=5, page=2, total=False)
    assert (lazy.total, lazy.total_exact, lazy.has_more) == (11, False, True)
    assert lazy.next_page() and (lazy.total, lazy.total_exact, lazy.has_more) == (
        12, True, False,
    )  # fmt: skip
    deep = staff.find(sort="age", limit=5, search_after=True, total=False)
    assert (deep.total, deep.total_exact, deep.has_more) == (6, False, True)  # seen so far
    assert deep.next_page() and (deep.total, deep.total_exact) == (11, False)
    assert searches.tracked == [4, 11, 16, False, False]


def test_one_document_and_aggregations_do_not_count_every_match(
    staff: em.Repository[Employee], searches: _Searches
) -> None:
    first = staff.find_one(sort="age")
    assert first is not None and first.id == "p00"
    staff.aggregate(aggregations="avg:age")
    assert searches.tracked == [2, False]


def test_total_is_checked_before_sending(staff: em.Repository[Employee]) -> None:
    for bad in (-1, "all", 2.5):
        with pytest.raises(em.QueryValidationError, match="total="):
            staff.find(total=bad)  # type: ignore[arg-type]
