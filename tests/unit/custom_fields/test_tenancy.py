"""The tenant rule's pure parts: cached search pages scoped by tenant, a session's tenant."""

from __future__ import annotations

from typing import Any

from esmapper._search import cached_page, page_entry
from esmapper.custom_fields._tenancy import session_tenant


class _Info:
    def __init__(self, custom: bool) -> None:
        self.custom_access: Any = object() if custom else None


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


def test_a_sessions_tenant_scopes_models_with_custom_fields_only() -> None:
    assert session_tenant(_Info(custom=True), "acme") == "acme"
    assert session_tenant(_Info(custom=False), "acme") is None
    assert session_tenant(_Info(custom=True), None) is None
