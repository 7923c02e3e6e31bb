"""configure_indexes against mappings as Elasticsearch echoes them (normalised: no
``"type": "object"`` beside ``properties``, defaults left out, ``dynamic`` as a string,
``copy_to`` as a list): a second run finds the mapping there and sends nothing."""

from __future__ import annotations

from typing import Any

import pytest

import esmapper as em
from esmapper.testing.cluster import ClusterProxy
from tests.integration.conftest import MakeMapper


class Address(em.InnerDoc):
    city: str = ""
    zip: str = em.field(em.Keyword(index=True, doc_values=True), default="")


class Skill(em.InnerDoc):
    name: str = ""


class Person(em.Document):
    class Index:
        name = "people"
        dynamic = False

    name: str = em.field(em.Text(norms=True, fields={"raw": em.Keyword(store=False)}), default="")
    address: Address | None = None
    skills: list[Skill] = em.field(em.Nested(Skill), factory=list)
    born: str | None = em.field(
        em.Date(format="strict_date_optional_time||epoch_millis"), default=None
    )
    everything: str = em.field(em.Text(copy_to="all"), default="")
    all: str = em.field(em.Text(), default="")
    extra: Any = None


def test_a_second_configure_sends_no_mapping(
    cluster: ClusterProxy, make_mapper: MakeMapper
) -> None:
    mapper = make_mapper(Person, url=cluster.url)
    assert [s.action for s in mapper.configure_indexes()] == ["created"]
    cluster.reset_counts()
    assert [s.action for s in mapper.configure_indexes(force=True)] == ["unchanged"]
    assert cluster.count(r"/_mapping$", method="PUT") == 0


def test_a_new_field_is_still_sent(cluster: ClusterProxy, make_mapper: MakeMapper) -> None:
    make_mapper(Person, url=cluster.url, configure=True)

    class Grown(Person):
        class Index:
            name = "people"
            dynamic = False

        nickname: str = ""

    grown = make_mapper(Grown, url=cluster.url)
    cluster.reset_counts()
    assert [s.action for s in grown.configure_indexes()] == ["mapping_updated"]
    assert cluster.count(r"/_mapping$", method="PUT") == 1
    cluster.reset_counts()
    assert [s.action for s in grown.configure_indexes(force=True)] == ["unchanged"]
    assert cluster.count(r"/_mapping$", method="PUT") == 0


@pytest.mark.parametrize("dynamic", [True, "strict"])
def test_dynamic_is_compared_as_echoed(
    cluster: ClusterProxy, make_mapper: MakeMapper, dynamic: object
) -> None:
    Loose = type(
        "Loose",
        (em.Document,),
        {
            "Index": type("Index", (), {"name": "loose", "dynamic": dynamic}),
            "__annotations__": {"address": Address | None},
            "address": None,
        },
    )
    mapper = make_mapper(Loose, url=cluster.url, configure=True)
    cluster.reset_counts()
    assert [s.action for s in mapper.configure_indexes(force=True)] == ["unchanged"]
    assert cluster.count(r"/_mapping$", method="PUT") == 0


class Tenanted(em.Document, em.HasCustomFields):
    """Custom fields: an ``idx`` object mapped dynamically, and dynamic templates."""

    class Index:
        name = "tenanted"
        tenant_field = "company"

    company: str = em.field(em.Keyword(), default="")
    address: Address | None = None


def test_custom_field_models_configure_once(cluster: ClusterProxy, make_mapper: MakeMapper) -> None:
    mapper = make_mapper(Tenanted, url=cluster.url, configure=True)
    mapper.custom_fields(Tenanted).add_field("acme", "Level", "int")
    mapper.repository(Tenanted).add(
        Tenanted(company="acme", custom_fields={"Level": 5}), consistency="immediate"
    )  # a slot under idx is now mapped dynamically
    cluster.reset_counts()
    assert {s.action for s in mapper.configure_indexes(force=True)} == {"unchanged"}
    assert cluster.count(r"/_mapping$", method="PUT") == 0
