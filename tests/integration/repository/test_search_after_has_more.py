"""``has_more`` of ``search_after`` paging (issue 25, item 10): ``False`` on the last page,
even when that page is full."""

from __future__ import annotations

import pytest

import esmapper as em

from .models import Employee


@pytest.fixture
def staff(employees: em.Repository[Employee]) -> list[Employee]:
    return employees.add(
        [Employee(id=f"p{i}", name=f"P{i}", age=30 + i) for i in range(3)], consistency="wait"
    )


def test_has_more_is_false_on_the_last_page_reached_with_search_after(
    employees: em.Repository[Employee], staff: list[Employee]
) -> None:
    # 3 documents, pages of 3 and then of 1: the last page is full
    first = employees.find(sort="age", limit=3, search_after=True)
    assert [d.id for d in first] == ["p0", "p1", "p2"]
    assert first.has_more is False  # before: True (a full page was taken for "more")
    assert not first.next_page()
    paged = employees.find(sort="age", limit=1, search_after=True)
    seen = [d.id for d in paged]
    while paged.has_more:
        assert paged.next_page()
        seen.extend(d.id for d in paged)
    assert seen == ["p0", "p1", "p2"] and paged.has_more is False
    snap = employees.find(sort="age", limit=3, snapshot=True)
    assert len(snap) == 3 and snap.has_more is False
    two = employees.find(sort="age", limit=2, search_after=True)
    assert two.has_more is True and [d.id for d in two] == ["p0", "p1"]
    assert two.next_page() and [d.id for d in two] == ["p2"] and two.has_more is False
