"""The tenant rule's pure parts: cached search pages scoped by tenant."""

from __future__ import annotations

from esmapper._search_answers import cached_page, page_entry


def test_a_page_is_served_to_the_tenant_that_stored_it_only() -> None:
    page = {"hits": {"hits": [], "total": {"value": 0}}}
    acme = page_entry(page, "acme")
    assert cached_page(acme, "acme") is page
    assert cached_page(acme, "globex") is None
    assert cached_page(acme, None) is None
    untenanted = page_entry(page, None)
    assert untenanted is page  # stored as before: the response itself
    assert cached_page(untenanted, None) is page
    assert cached_page(untenanted, "acme") is None
    assert cached_page(None, "acme") is None and cached_page(None, None) is None
