"""The plugins every test session loads (pytest-django among them, for the Django tests)
give the other tests no fixture they did not ask for that could change their teardown: the
root conftest replaces pytest-django's autouse fixture that takes ``monkeypatch`` by its name,
and a pytest-django renaming it would silently bring the patch-ordering back."""

from __future__ import annotations

import pytest


def test_no_autouse_fixture_takes_monkeypatch(request: pytest.FixtureRequest) -> None:
    assert "monkeypatch" not in request.fixturenames
