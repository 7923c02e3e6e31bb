"""EsmapperMiddleware with ``ATOMIC_REQUESTS``: Django's transaction wraps the view, not the
middlewares, so the database commits when the view returns, before the session's commit;
a flush in the view puts the esmapper writes inside the transaction (docs/django.md)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.test import Client

import esmapper as em

from .documents import Note
from .rows.models import Row
from .urls import Hooks

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def client() -> Iterator[Client]:
    yield Client(raise_request_exception=False)
    Hooks.between = staticmethod(lambda: None)


@pytest.fixture
def note(esmapper_django_mapper: em.Mapper) -> Iterator[em.Repository[Note]]:
    notes = esmapper_django_mapper.repository(Note)
    notes.add(Note(id="a1", text="first"), consistency="wait")

    def someone_else_saves() -> None:
        other = notes.get("a1", cache=False)
        other.text = "theirs"
        notes.save(other, consistency="wait")

    Hooks.between = staticmethod(someone_else_saves)
    yield notes


def test_the_database_commits_before_the_session(client: Client, note: em.Repository[Note]) -> None:
    """A conflict at the session's commit is a 409 after the database committed the row."""
    response = client.post("/rows/51/notes/a1?title=mine")
    assert response.status_code == 409
    assert Row.objects.get(pk=51).title == "mine"  # committed by ATOMIC_REQUESTS
    assert note.get("a1", cache=False).text == "theirs"


def test_a_flush_in_the_view_rolls_the_database_back_on_a_conflict(
    client: Client, note: em.Repository[Note]
) -> None:
    response = client.post("/rows/52/notes/a1?title=mine&flush=1")
    assert response.status_code == 409
    assert not Row.objects.filter(pk=52).exists()  # the view raised: rolled back
    assert note.get("a1", cache=False).text == "theirs"
