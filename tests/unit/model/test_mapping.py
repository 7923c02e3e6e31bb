"""The Elasticsearch mapping a model compiles: inferred and declared field types, traits."""

from __future__ import annotations

import json
from typing import Any, Optional

import pytest

import esmapper as em

from .models import Address, Employee, Everything, Note, Review

PROPERTIES = Everything.__esmapper__.mapping["properties"]
ADDRESS_PROPERTIES = {
    "street": {"type": "keyword"},
    "city": {"type": "keyword"},
    "zip_code": {"type": "long"},
}
REVIEW_PROPERTIES = {
    "author": {"type": "keyword"},
    "rating": {"type": "long"},
    "comment": {"type": "text"},
    "posted": {"type": "date"},
}


@pytest.mark.parametrize(
    ("attribute", "mapping"),
    [
        ("email", {"type": "keyword"}),  # str
        ("age", {"type": "long"}),  # int
        ("rating", {"type": "double"}),  # float
        ("active", {"type": "boolean"}),  # bool
        ("born", {"type": "date"}),  # datetime | None
        ("birthday", {"type": "date"}),  # date | None
        ("nickname", {"type": "keyword"}),  # str | None
        ("tags", {"type": "keyword"}),  # list[str]: ES fields are multi-valued
        ("scores", {"type": "long"}),  # list[int]
        ("meta", {"type": "object", "enabled": False}),  # dict: stored, not indexed
        ("color", {"type": "keyword"}),  # Enum with str values
        ("priority", {"type": "long"}),  # IntEnum
    ],
)
def test_a_bare_annotation_infers_the_mapping(attribute: str, mapping: dict[str, Any]) -> None:
    assert PROPERTIES[attribute] == mapping


def test_an_inner_doc_annotation_maps_to_an_object_with_its_properties() -> None:
    assert PROPERTIES["address"] == {"type": "object", "properties": ADDRESS_PROPERTIES}
    assert PROPERTIES["addresses"] == {"type": "object", "properties": ADDRESS_PROPERTIES}


def test_nested_is_declared_with_em_nested_and_takes_the_inner_doc_properties() -> None:
    assert PROPERTIES["reviews"] == {"type": "nested", "properties": REVIEW_PROPERTIES}


def test_an_inner_doc_compiles_its_own_properties_without_index_metadata() -> None:
    assert Address.__esmapper__.mapping == {"properties": ADDRESS_PROPERTIES}
    assert Review.__esmapper__.mapping == {"properties": REVIEW_PROPERTIES}
    assert Address.__esmapper__.index is None
    assert not Address.__esmapper__.is_document


def test_an_explicit_mapping_wins_over_inference() -> None:
    assert PROPERTIES["name"] == {"type": "text", "fields": {"keyword": {"type": "keyword"}}}
    assert PROPERTIES["small"] == {"type": "integer"}
    assert PROPERTIES["address"]["properties"]["city"] == {"type": "keyword"}


def test_an_explicit_object_with_an_inner_doc_annotation_gets_its_properties() -> None:
    class Holder(em.Document):
        home: Address | None = em.field(em.Object(), default=None)

    assert Holder.__esmapper__.mapping["properties"]["home"] == {
        "type": "object",
        "properties": ADDRESS_PROPERTIES,
    }
    assert Holder(home={"city": "Oslo"}).home == Address(city="Oslo")  # type: ignore[arg-type]


def test_the_trait_fields_are_mapped() -> None:
    assert PROPERTIES["id"] == {"type": "keyword"}
    assert PROPERTIES["created_utc"] == {"type": "date"}
    assert PROPERTIES["updated_utc"] == {"type": "date"}
    assert PROPERTIES["is_deleted"] == {"type": "boolean"}
    assert PROPERTIES["custom_fields"] == {"type": "object", "enabled": False}
    # slots are mapped by dynamic templates; idx.tenant keeps tenant= searches to a tenant
    assert PROPERTIES["idx"] == {
        "type": "object",
        "dynamic": True,
        "properties": {"tenant": {"type": "keyword"}},
    }


def test_version_is_metadata_not_a_mapped_or_stored_field() -> None:
    doc = Everything(version="1:5")
    assert doc.version == "1:5"
    assert "version" not in PROPERTIES
    assert "version" not in doc.to_source()
    assert "version" not in Employee.__esmapper__.mapping["properties"]


def test_a_document_mapping_is_not_dynamic() -> None:
    assert Everything.__esmapper__.mapping["dynamic"] is False
    # custom fields add one dynamic template per type, under idx only
    assert set(Everything.__esmapper__.mapping) == {"dynamic", "dynamic_templates", "properties"}
    templates = Everything.__esmapper__.mapping["dynamic_templates"]
    assert all(next(iter(t.values()))["path_match"].startswith("idx.") for t in templates)
    assert set(Employee.__esmapper__.mapping) == {"dynamic", "properties"}


def test_the_api_example_model_compiles_the_documented_mapping() -> None:
    assert Employee.__esmapper__.mapping == {
        "dynamic": False,
        "properties": {
            "id": {"type": "keyword"},
            "created_utc": {"type": "date"},
            "updated_utc": {"type": "date"},
            "is_deleted": {"type": "boolean"},
            "name": {"type": "text", "fields": {"keyword": {"type": "keyword"}}},
            "email": {"type": "keyword"},
            "age": {"type": "integer"},
            "company_id": {"type": "keyword"},
        },
    }


def test_a_model_without_traits_maps_only_id_and_its_own_fields() -> None:
    assert Note.__esmapper__.mapping["properties"] == {
        "id": {"type": "keyword"},
        "title": {"type": "keyword"},
        "price": {"type": "double"},
        "due": {"type": "date"},
    }


def test_the_mapping_is_plain_json() -> None:
    text = json.dumps(Everything.__esmapper__.mapping)
    assert json.loads(text) == Everything.__esmapper__.mapping


def test_optional_spellings_infer_the_same_mapping() -> None:
    class Spellings(em.Document):
        a: Optional[int] = None  # noqa: UP045 - the spelling under test
        b: int | None = None
        c: list[int | None] = em.field(factory=list)

    properties = Spellings.__esmapper__.mapping["properties"]
    assert properties["a"] == properties["b"] == properties["c"] == {"type": "long"}


def test_a_type_without_an_inferable_mapping_is_refused_naming_the_attribute() -> None:
    with pytest.raises(TypeError, match=r"'payload'.*em\.field"):

        class Blob(em.Document):
            payload: complex = 0j
