"""Mappings compared as Elasticsearch echoes them (esmapper.indexes._echo)."""

from __future__ import annotations

from typing import Any

import esmapper as em
from esmapper.indexes._echo import covers, echoed


class Address(em.InnerDoc):
    city: str = ""


class Person(em.Document):
    class Index:
        name = "people"
        dynamic = "strict"

    name: str = em.field(em.Text(fields={"raw": em.Keyword(index=True)}), default="")
    address: Address | None = None
    visits: list[Address] = em.field(em.Nested(Address), factory=list)


#: What Elasticsearch 8/9 answers to GET /people-v1/_mapping for Person.
PERSON_ECHOED: dict[str, Any] = {
    "dynamic": "strict",
    "properties": {
        "id": {"type": "keyword"},
        "address": {"properties": {"city": {"type": "keyword"}}},
        "name": {"type": "text", "fields": {"raw": {"type": "keyword"}}},
        "visits": {"type": "nested", "properties": {"city": {"type": "keyword"}}},
    },
}


def test_a_model_mapping_is_echoed_as_elasticsearch_writes_it() -> None:
    mapping = Person.__esmapper__.mapping  # type: ignore[attr-defined]
    assert mapping["properties"]["address"]["type"] == "object"
    assert echoed(mapping) == PERSON_ECHOED
    assert covers(PERSON_ECHOED, mapping)


def test_objects_keep_their_type_without_properties_and_nested_always() -> None:
    assert echoed({"properties": {"a": {"type": "object", "properties": {}}}}) == {
        "properties": {"a": {"type": "object"}}
    }
    assert echoed({"properties": {"a": {"type": "object", "enabled": False}}}) == {
        "properties": {"a": {"type": "object", "enabled": False}}
    }
    assert echoed({"properties": {"n": {"type": "nested", "include_in_parent": False}}}) == {
        "properties": {"n": {"type": "nested"}}
    }
    assert echoed({"properties": {"o": {"dynamic": False, "enabled": "true"}}}) == {
        "properties": {"o": {"type": "object", "dynamic": "false"}}
    }


def test_defaults_are_left_out_and_values_parsed() -> None:
    wanted = {
        "_routing": {"required": False},
        "_source": {"enabled": True},
        "properties": {
            "k": {"type": "keyword", "index": "true", "doc_values": True, "store": False},
            "t": {"type": "text", "norms": True, "index_options": "positions", "copy_to": "all"},
            "d": {"type": "date", "format": "strict_date_optional_time||epoch_millis"},
            "n": {"type": "date_nanos", "format": "strict_date_optional_time_nanos||epoch_millis"},
            "b": {"type": "binary", "doc_values": False},
            "c": {"type": "long", "coerce": True, "meta": {}},
            "s": {"type": "text", "analyzer": "english", "search_analyzer": "english"},
            "i": {"type": "keyword", "ignore_above": "256", "fields": {}},
        },
    }
    assert echoed(wanted) == {
        "properties": {
            "k": {"type": "keyword"},
            "t": {"type": "text", "copy_to": ["all"]},
            "d": {"type": "date"},
            "n": {"type": "date_nanos"},
            "b": {"type": "binary"},
            "c": {"type": "long"},
            "s": {"type": "text", "analyzer": "english"},
            "i": {"type": "keyword", "ignore_above": 256},
        }
    }
    kept = {"properties": {"k": {"type": "keyword", "index": False, "doc_values": False}}}
    assert echoed(kept) == kept
    binary = {"properties": {"b": {"type": "binary", "doc_values": True}}}
    assert echoed(binary) == binary  # binary has no doc values by default


def test_dynamic_templates_as_echoed() -> None:
    template = {"path_match": ["idx.a-*"], "match_mapping_type": "*", "mapping": {"a": 1}}
    assert echoed({"dynamic_templates": [{"x": template}]}) == {
        "dynamic_templates": [{"x": {"path_match": "idx.a-*", "mapping": {"a": 1}}}]
    }


def test_what_elasticsearch_added_is_covered() -> None:
    stored = {
        "dynamic": "strict",
        "properties": {
            **PERSON_ECHOED["properties"],
            "learned": {"type": "long"},
            "vector": {"type": "dense_vector", "dims": 3, "index": True},
        },
    }
    wanted = {
        "dynamic": "strict",
        "properties": {**PERSON_ECHOED["properties"], "vector": {"type": "dense_vector"}},
    }
    assert covers(stored, wanted)


def test_a_real_difference_is_not_covered() -> None:
    mapping = Person.__esmapper__.mapping  # type: ignore[attr-defined]
    props = PERSON_ECHOED["properties"]

    def stored(**changes: Any) -> dict[str, Any]:
        return {**PERSON_ECHOED, "properties": {**props, **changes}}

    assert not covers({"properties": props}, mapping)  # dynamic not set yet
    assert not covers(stored(name={"type": "keyword"}), mapping)  # type changed
    assert not covers(stored(visits=props["address"]), mapping)  # object, model: nested
    assert not covers(stored(address={**props["visits"]}), mapping)  # nested, model: object
    assert not covers(stored(address={"type": "object"}), mapping)  # city missing
    # a parameter the model leaves at its default is set otherwise on the server
    indexed_off = {"type": "text", "index": False, "fields": props["name"]["fields"]}
    assert not covers(stored(name=indexed_off), mapping)
    raw_off = {"type": "text", "fields": {"raw": {"type": "keyword", "doc_values": False}}}
    assert not covers(stored(name=raw_off), mapping)
    disabled = {**props["address"], "enabled": False}
    assert not covers(stored(address=disabled), mapping)
    # and the other way: the model sets a parameter the server does not have
    wanted = {"properties": {"k": {"type": "keyword", "index": False}}}
    assert not covers({"properties": {"k": {"type": "keyword"}}}, wanted)
    assert covers({"properties": {"k": {"type": "keyword", "index": False}}}, wanted)


def test_a_join_fields_relations_as_a_cluster_echoes_them() -> None:
    # the join mapper keeps a parent's children in a hash set and always writes
    # eager_global_ordinals: any order of several children, one child as a string
    wanted = {
        "properties": {
            "relation": {"type": "join", "relations": {"shop": ["clerk", "item", "owner"]}}
        }
    }
    stored = {
        "properties": {
            "relation": {
                "type": "join",
                "eager_global_ordinals": True,
                "relations": {"shop": ["owner", "clerk", "item"]},
            }
        }
    }
    assert covers(stored, wanted)
    one = {"properties": {"relation": {"type": "join", "relations": {"shop": ["clerk"]}}}}
    assert echoed(one) == {
        "properties": {"relation": {"type": "join", "relations": {"shop": "clerk"}}}
    }
    fewer = {"properties": {"relation": {"type": "join", "relations": {"shop": ["clerk"]}}}}
    assert not covers(fewer, wanted)  # a child added: PUT _mapping
