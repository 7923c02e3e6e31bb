"""Custom-field types and model options, without a server."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from elasticsearch.dsl import Q

import esmapper as em
from esmapper.custom_fields.catalog import TenantFields
from esmapper.custom_fields.search import translate_query
from esmapper.custom_fields.types import NOT_INDEXED, standard_field_types, value_checker

INT = {"type": "integer"}


@pytest.mark.parametrize(
    ("mapping", "value", "indexed"),
    [
        (INT, 5, 5),
        (INT, "5", 5),
        (INT, 5.0, 5),
        (INT, 5.5, NOT_INDEXED),
        (INT, True, NOT_INDEXED),
        (INT, 2**31, NOT_INDEXED),
        (INT, "not-a-number", NOT_INDEXED),
        ({"type": "long"}, 2**40, 2**40),
        ({"type": "double"}, "2.5", 2.5),
        ({"type": "double"}, float("nan"), NOT_INDEXED),
        ({"type": "boolean"}, "true", True),
        ({"type": "boolean"}, "yes", NOT_INDEXED),
        ({"type": "date"}, "2024-02-03", "2024-02-03T00:00:00Z"),
        (
            {"type": "date"},
            dt.datetime(2024, 2, 3, 4, 5, tzinfo=dt.timezone.utc),
            "2024-02-03T04:05:00Z",
        ),
        ({"type": "date"}, 1700000000, NOT_INDEXED),
        ({"type": "date"}, "soon", NOT_INDEXED),
        ({"type": "keyword"}, 12, "12"),
        ({"type": "keyword"}, "x" * 40_000, NOT_INDEXED),
        ({"type": "text"}, False, "false"),
        ({"type": "keyword"}, {"a": 1}, NOT_INDEXED),
        (INT, [1, 2], [1, 2]),
        (INT, [1, "x"], NOT_INDEXED),
        (INT, None, NOT_INDEXED),
        ({"type": "ip"}, "10.0.0.1", "10.0.0.1"),  # not checked here: the type's business
    ],
)
def test_what_a_slot_indexes(mapping: dict[str, Any], value: Any, indexed: Any) -> None:
    assert value_checker(mapping)(value) == indexed


def test_the_standard_types_and_their_templates() -> None:
    types = {t.type: t.mapping().to_dict() for t in standard_field_types()}
    assert types["string"] == {
        "type": "text",
        "fields": {"keyword": {"type": "keyword", "ignore_above": 256}},
    }
    assert {k: v["type"] for k, v in types.items()} == {
        "string": "text", "keyword": "keyword", "int": "integer", "long": "long",
        "float": "float", "double": "double", "bool": "boolean", "date": "date",
    }  # fmt: skip


class _Bad:
    type = "Bad-Name"

    def mapping(self) -> Any:
        return em.Integer()

    def process_value(self, doc: Any, value: Any, definition: Any) -> em.ProcessResult:
        return em.ProcessResult(value)


class _NoMapping:
    type = "nomap"

    def mapping(self) -> Any:
        return {"type": "integer"}

    def process_value(self, doc: Any, value: Any, definition: Any) -> em.ProcessResult:
        return em.ProcessResult(value)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"tenant_field": "nope"}, "tenant_field 'nope' is not an attribute"),
        ({"custom_field_types": [_Bad()]}, "a type name is lowercase"),
        ({"custom_field_types": [_NoMapping()]}, "must return an elasticsearch.dsl field"),
        (
            {"custom_field_types": [*standard_field_types(), *standard_field_types()]},
            "two types are called",
        ),
        ({"custom_field_types": [], "auto_create_custom_fields": True}, "no 'string' type"),
        ({"auto_create_custom_fields": "yes"}, "must be True or False"),
    ],
)
def test_bad_custom_field_options_raise_at_class_creation(
    options: dict[str, Any], message: str
) -> None:
    index = type("Index", (), options)
    with pytest.raises(em.IndexConfigurationError, match=message):
        type("Bad", (em.Document, em.HasCustomFields), {"Index": index, "__annotations__": {}})


def test_tenant_options_need_has_custom_fields() -> None:
    index = type("Index", (), {"tenant_field": "id"})
    with pytest.raises(em.IndexConfigurationError, match=r"need em\.HasCustomFields"):
        type("Plain", (em.Document,), {"Index": index, "__annotations__": {}})


class Person(em.Document, em.HasCustomFields):
    class Index:
        tenant_field = "org"

    org: str | None = None
    name: str = ""


def _fields(*definitions: tuple[str, str, int]) -> TenantFields:
    return TenantFields(
        Person.__esmapper__,
        "acme",
        [
            em.CustomFieldDefinition(name=n, index_type=t, index_slot=s, tenant_key="acme")
            for n, t, s in definitions
        ],
    )


def test_tenant_key_and_mapping() -> None:
    assert Person(org="acme").tenant_key() == "acme"
    assert Person().tenant_key() == ""
    mapping = Person.__esmapper__.mapping
    assert mapping["properties"]["idx"]["dynamic"] is True
    assert {next(iter(t)) for t in mapping["dynamic_templates"]} >= {"idx_int", "idx_string"}


def test_the_tenant_catalog_resolves_logical_names_case_insensitively() -> None:
    catalog = _fields(
        ("Level", "int", 1), ("Department", "string", 2), ("Name", "int", 3)
    ).catalog()
    assert catalog.resolve("LEVEL").path == "idx.int-1"
    assert catalog.resolve("department").type == "text"
    assert catalog.resolve("department").keyword == "idx.string-2.keyword"
    assert catalog.resolve("Department.keyword").path == "idx.string-2.keyword"
    assert catalog.resolve("name").path == "name"  # the model's field wins
    with pytest.raises(KeyError):
        catalog.resolve("unknown")
    assert "level" in catalog.names()


def test_q_objects_are_translated() -> None:
    fields = _fields(("Level", "int", 1), ("Department", "string", 1))
    query = (
        Q("range", Level={"gte": 3})
        & Q("exists", field="department")
        & Q("multi_match", query="x", fields=["Department^2", "name"])
        & ~Q("term", name="x")
    )
    body = translate_query(query, Person.__esmapper__.catalog, fields.catalog()).to_dict()
    text = str(body)
    assert "'idx.int-1'" in text and "'idx.string-1^2'" in text
    assert "'field': 'idx.string-1'" in text and "'name'" in text
    assert "Level" not in text and "department" not in text


class Composite(em.Document, em.HasCustomFields):
    class Index:
        tenant_field = "org"  # ignored for filtering: tenant_key() is overridden

    org: str = ""
    kind: str = ""

    def tenant_key(self) -> str:
        return f"{self.org}-{self.kind}"


def test_the_tenant_filter_uses_the_tenant_field_unless_tenant_key_is_overridden() -> None:
    from esmapper.custom_fields.catalog import tenant_path
    from esmapper.custom_fields.search import tenant_clause

    assert tenant_path(Person.__esmapper__) == "org"
    assert tenant_clause(Person.__esmapper__, "acme") == {"term": {"org": "acme"}}
    assert tenant_path(Composite.__esmapper__) == "idx.tenant"
    assert _fields().stores_tenant is False
    composite = TenantFields(Composite.__esmapper__, "a-b", [])
    assert composite.stores_tenant is True
