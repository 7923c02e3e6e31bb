"""A text field with keyword_and_sort_fields() sorts case- and accent-insensitively: on its
``sort`` subfield, with the ``sort`` normalizer created with the index. The local server
accepts the normalizer but does not apply it: the order itself is a ``real_es`` test."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import esmapper as em
from tests.integration.conftest import MakeMapper


class Person(em.Document):
    class Index:
        name = "people"
        settings = {"number_of_shards": 1}  # noqa: RUF012

    name: str = em.field(em.Text(fields=em.keyword_and_sort_fields()), default="")


@pytest.fixture
def people(make_mapper: MakeMapper) -> em.Repository[Person]:
    repo = make_mapper(Person, configure=True).repository(Person)
    repo.add([Person(name=n) for n in ["émile", "Zoe", "adam", "Bob"]], consistency="wait")
    return repo


@pytest.fixture
def sent() -> Iterator[list[dict[str, Any]]]:
    bodies: list[dict[str, Any]] = []

    def record(sender: Any, query: em.QueryContext, **kwargs: Any) -> None:
        bodies.append(query.body)

    with em.signals.before_query.connected_to(record, sender=Person):
        yield bodies


def test_the_index_has_the_normalizer_and_sorts_go_to_the_sort_subfield(
    people: em.Repository[Person], sent: list[dict[str, Any]], index_prefix: str
) -> None:
    people.find(sort="-name")
    assert sent[-1]["sort"][0] == {"name.sort": {"order": "desc"}}
    assert people.count('name.keyword:"Zoe"') == 1  # exact match on the keyword subfield
    index = f"{index_prefix}people-v1"
    settings = people.mapper.client.indices.get_settings(index=index).body
    analysis = settings[index]["settings"]["index"]["analysis"]
    assert analysis["normalizer"]["sort"]["filter"] == ["lowercase", "asciifolding"]


@pytest.mark.real_es
def test_sorts_ignoring_case_and_accents(people: em.Repository[Person]) -> None:
    assert [p.name for p in people.find(sort="name")] == ["adam", "Bob", "émile", "Zoe"]
    assert [p.name for p in people.find(sort="-name")] == ["Zoe", "émile", "Bob", "adam"]
