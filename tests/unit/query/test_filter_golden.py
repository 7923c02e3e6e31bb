"""Golden table: filter expressions and the exact query bodies they compile to."""

from __future__ import annotations

from typing import Any

import pytest
from elasticsearch.dsl import Q

from esmapper.query import CompiledFilter, compile_filter

from .mapping import CATALOG, CATALOG_WITH_ID


def nested(path: str, query: dict[str, Any]) -> dict[str, Any]:
    return {"nested": {"path": path, "query": query}}


def must(*clauses: dict[str, Any]) -> dict[str, Any]:
    return {"bool": {"must": list(clauses)}}


def should(*clauses: dict[str, Any]) -> dict[str, Any]:
    return {"bool": {"should": list(clauses)}}


def must_not(*clauses: dict[str, Any]) -> dict[str, Any]:
    return {"bool": {"must_not": list(clauses)}}


def only_empty(field: str) -> dict[str, Any]:
    """Holds "" and no non-empty term: no value (a list ``["x", ""]`` has one)."""
    return {
        "bool": {
            "filter": [{"term": {field: ""}}],
            "must_not": [{"range": {field: {"gt": ""}}}],
        }
    }


HAS_EMAIL = {
    "bool": {"filter": [{"exists": {"field": "email"}}], "must_not": [only_empty("email")]}
}


def term(field: str, value: Any) -> dict[str, Any]:
    return {"term": {field: value}}


def match(field: str, value: str) -> dict[str, Any]:
    return {"match": {field: {"query": value, "operator": "and"}}}


GOLDEN: list[tuple[str, dict[str, Any]]] = [
    # -- equality per field type -------------------------------------------------------
    ("email:a@b.c", term("email", "a@b.c")),
    ("age:30", term("age", 30)),
    ("age:-3", term("age", -3)),
    ("visits:9223372036854775807", term("visits", 9223372036854775807)),
    ("score:2.5", term("score", 2.5)),
    ("score:1e3", term("score", 1000.0)),
    ("is_active:true", term("is_active", True)),
    ("is_active:FALSE", term("is_active", False)),
    ("created_utc:2026-01-31", term("created_utc", "2026-01-31")),
    ("created_utc:2026-01-31T10:00:00Z", term("created_utc", "2026-01-31T10:00:00Z")),
    ('created_utc:"2026-01-31T10:00:00+01:00"', term("created_utc", "2026-01-31T10:00:00+01:00")),
    ("created_utc:1767225600000", term("created_utc", "1767225600000")),
    ("name:john", match("name", "john")),
    ("name.keyword:John", term("name.keyword", "John")),
    ("address.city:Paris", term("address.city", "Paris")),
    ("address.street:main", match("address.street", "main")),
    # -- phrases --------------------------------------------------------------------------
    ('name:"John Smith"', {"match_phrase": {"name": "John Smith"}}),
    ('name:"John Smith"~2', {"match_phrase": {"name": {"query": "John Smith", "slop": 2}}}),
    ('email:"a b@c.d"', term("email", "a b@c.d")),
    ('age:"30"', term("age", 30)),
    ('name:"say \\"hi\\""', {"match_phrase": {"name": 'say "hi"'}}),
    # -- escaping ---------------------------------------------------------------------------
    ("email:a\\:b", term("email", "a:b")),
    ("email:John\\ Smith", term("email", "John Smith")),
    ("email:\\*", term("email", "*")),
    ("email:\\AND", term("email", "AND")),
    # -- ranges -----------------------------------------------------------------------------
    ("age:>=25", {"range": {"age": {"gte": 25}}}),
    ("age:>25", {"range": {"age": {"gt": 25}}}),
    ("age:<40", {"range": {"age": {"lt": 40}}}),
    ("age:<=40", {"range": {"age": {"lte": 40}}}),
    ("age:[25 TO 35]", {"range": {"age": {"gte": 25, "lte": 35}}}),
    ("age:{25 TO 35}", {"range": {"age": {"gt": 25, "lt": 35}}}),
    ("age:[25 TO 35}", {"range": {"age": {"gte": 25, "lt": 35}}}),
    ("age:[25 TO *]", {"range": {"age": {"gte": 25}}}),
    ("age:[* TO 35]", {"range": {"age": {"lte": 35}}}),
    ("age:[* TO *]", {"exists": {"field": "age"}}),
    ("age:[-5 TO 5]", {"range": {"age": {"gte": -5, "lte": 5}}}),
    ("score:[0.5 TO 1]", {"range": {"score": {"gte": 0.5, "lte": 1.0}}}),
    (
        "created_utc:[2026-01-01 TO now]",
        {"range": {"created_utc": {"gte": "2026-01-01", "lte": "now"}}},
    ),
    ("created_utc:>=now-1d/d", {"range": {"created_utc": {"gte": "now-1d/d"}}}),
    (
        "created_utc:[2026-01-01||+1M/M TO now+1h]",
        {"range": {"created_utc": {"gte": "2026-01-01||+1M/M", "lte": "now+1h"}}},
    ),
    ("email:[a TO m]", {"range": {"email": {"gte": "a", "lte": "m"}}}),
    ("name:[a TO m]", {"range": {"name.keyword": {"gte": "a", "lte": "m"}}}),
    ('name:["a b" TO c]', {"range": {"name.keyword": {"gte": "a b", "lte": "c"}}}),
    # -- wildcards, regexps, fuzziness ------------------------------------------------------
    ("email:jo*", {"wildcard": {"email": {"value": "jo*"}}}),
    ("email:j?n", {"wildcard": {"email": {"value": "j?n"}}}),
    ("email:a\\*b*", {"wildcard": {"email": {"value": "a\\*b*"}}}),
    ("name:John*", {"wildcard": {"name": {"value": "John*", "case_insensitive": True}}}),
    ("email:/jo.n/", {"regexp": {"email": {"value": "jo.n"}}}),
    ("name:/jo.n/", {"regexp": {"name": {"value": "jo.n", "case_insensitive": True}}}),
    ("email:jon~", {"fuzzy": {"email": {"value": "jon", "fuzziness": "AUTO"}}}),
    ("email:jon~1", {"fuzzy": {"email": {"value": "jon", "fuzziness": 1}}}),
    (
        "name:jon~2",
        {"match": {"name": {"query": "jon", "operator": "and", "fuzziness": 2}}},
    ),
    # -- exists / missing -------------------------------------------------------------------
    # a string field: "" is no value (the reference's null-or-empty)
    ("email:*", HAS_EMAIL),
    ("_exists_:email", HAS_EMAIL),
    ("_missing_:email", must_not(HAS_EMAIL)),
    ("NOT _exists_:email", must_not(HAS_EMAIL)),
    (
        "_exists_:name",  # text: "" is told apart on its keyword subfield
        {
            "bool": {
                "filter": [{"exists": {"field": "name"}}],
                "must_not": [only_empty("name.keyword")],
            }
        },
    ),
    ("_exists_:bio", {"exists": {"field": "bio"}}),  # text without keyword: cannot tell ""
    ("_missing_:age", must_not({"exists": {"field": "age"}})),
    ("_exists_:address", {"exists": {"field": "address"}}),
    ("_exists_:reviews", nested("reviews", {"match_all": {}})),
    ("_exists_:reviews.rating", nested("reviews", {"exists": {"field": "reviews.rating"}})),
    (
        "_missing_:reviews.rating",
        must_not(nested("reviews", {"exists": {"field": "reviews.rating"}})),
    ),
    ("reviews:*", nested("reviews", {"match_all": {}})),
    # -- ids --------------------------------------------------------------------------------
    ("id:abc", {"ids": {"values": ["abc"]}}),
    ("_id:abc", {"ids": {"values": ["abc"]}}),
    ('_id:"a b"', {"ids": {"values": ["a b"]}}),
    ("id:(a OR b)", should({"ids": {"values": ["a"]}}, {"ids": {"values": ["b"]}})),
    ("NOT id:abc", must_not({"ids": {"values": ["abc"]}})),
    ("id:*", {"match_all": {}}),
    # -- boolean structure ------------------------------------------------------------------
    ("age:>=25 AND email:x", must({"range": {"age": {"gte": 25}}}, term("email", "x"))),
    ("age:>=25 && email:x", must({"range": {"age": {"gte": 25}}}, term("email", "x"))),
    ("age:1 OR age:2", should(term("age", 1), term("age", 2))),
    ("age:1 || age:2", should(term("age", 1), term("age", 2))),
    ("age:1 email:x", must(term("age", 1), term("email", "x"))),
    (
        "age:1 email:x is_active:true",
        must(term("age", 1), term("email", "x"), term("is_active", True)),
    ),
    ("NOT is_deleted:true", must_not(term("is_deleted", True))),
    ("!is_deleted:true", must_not(term("is_deleted", True))),
    ("-email:x", must_not(term("email", "x"))),
    ("+email:x", term("email", "x")),
    ("email:-x", must_not(term("email", "x"))),  # only numeric fields read "-3" as a value
    ("!email:x", must_not(term("email", "x"))),
    ("email:x && !age:3", {"bool": {"must": [term("email", "x")], "must_not": [term("age", 3)]}}),
    ("+email:x -age:3", {"bool": {"must": [term("email", "x")], "must_not": [term("age", 3)]}}),
    (
        "age:1 AND NOT email:x",
        {"bool": {"must": [term("age", 1)], "must_not": [term("email", "x")]}},
    ),
    ("NOT NOT email:x", term("email", "x")),
    ("NOT (age:1 OR age:2)", must_not(should(term("age", 1), term("age", 2)))),
    ("(email:x)", term("email", "x")),
    ("((email:x))", term("email", "x")),
    (
        "age:1 OR age:2 AND email:x",
        should(term("age", 1), must(term("age", 2), term("email", "x"))),
    ),
    (
        "(age:1 OR age:2) AND email:x",
        must(should(term("age", 1), term("age", 2)), term("email", "x")),
    ),
    ("age:1 AND (age:2 AND email:x)", must(term("age", 1), term("age", 2), term("email", "x"))),
    ("email:(a OR b)", should(term("email", "a"), term("email", "b"))),
    ("email:(a b)", must(term("email", "a"), term("email", "b"))),
    ("email:(a OR NOT b)", should(term("email", "a"), must_not(term("email", "b")))),
    (
        "age:([1 TO 3] OR >=10)",
        should({"range": {"age": {"gte": 1, "lte": 3}}}, {"range": {"age": {"gte": 10}}}),
    ),
    ("email:x^2", {"bool": {"must": [term("email", "x")], "boost": 2.0}}),
    ("*:*", {"match_all": {}}),
    ("*", {"match_all": {}}),
    # -- nested ---------------------------------------------------------------------------
    ("reviews.rating:5", nested("reviews", term("reviews.rating", 5))),
    (
        "reviews.rating:5 AND reviews.author:bob",
        nested("reviews", must(term("reviews.rating", 5), term("reviews.author", "bob"))),
    ),
    (
        "reviews.rating:5 reviews.author:bob",
        nested("reviews", must(term("reviews.rating", 5), term("reviews.author", "bob"))),
    ),
    (
        "reviews.rating:5 OR reviews.author:bob",
        should(
            nested("reviews", term("reviews.rating", 5)),
            nested("reviews", term("reviews.author", "bob")),
        ),
    ),
    (
        "name:alice AND reviews.rating:5 AND reviews.author:bob",
        must(
            match("name", "alice"),
            nested("reviews", must(term("reviews.rating", 5), term("reviews.author", "bob"))),
        ),
    ),
    (
        "reviews.rating:5 AND name:alice AND reviews.author:bob",
        must(
            nested("reviews", must(term("reviews.rating", 5), term("reviews.author", "bob"))),
            match("name", "alice"),
        ),
    ),
    (
        "reviews.rating:5 AND (reviews.author:a OR reviews.author:b)",
        nested(
            "reviews",
            must(
                term("reviews.rating", 5),
                should(term("reviews.author", "a"), term("reviews.author", "b")),
            ),
        ),
    ),
    ("NOT reviews.author:bob", must_not(nested("reviews", term("reviews.author", "bob")))),
    (
        "reviews.rating:5 AND NOT reviews.author:bob",
        {
            "bool": {
                "must": [nested("reviews", term("reviews.rating", 5))],
                "must_not": [nested("reviews", term("reviews.author", "bob"))],
            }
        },
    ),
    (
        "reviews.replies.by:x",
        nested("reviews", nested("reviews.replies", term("reviews.replies.by", "x"))),
    ),
    (
        "reviews.replies.by:x AND reviews.replies.text:hi AND reviews.rating:[3 TO *]",
        nested(
            "reviews",
            must(
                nested(
                    "reviews.replies",
                    must(term("reviews.replies.by", "x"), match("reviews.replies.text", "hi")),
                ),
                {"range": {"reviews.rating": {"gte": 3}}},
            ),
        ),
    ),
    (
        'reviews.comment:"very good"',
        nested("reviews", {"match_phrase": {"reviews.comment": "very good"}}),
    ),
    (
        "reviews.author:(a OR b)",
        should(
            nested("reviews", term("reviews.author", "a")),
            nested("reviews", term("reviews.author", "b")),
        ),
    ),
]


@pytest.mark.parametrize(("expr", "expected"), GOLDEN, ids=[g[0] for g in GOLDEN])
def test_golden(expr: str, expected: dict[str, Any]) -> None:
    compiled = compile_filter(expr, CATALOG, default_fields=["name"])
    assert compiled.query is not None
    assert compiled.query.to_dict() == expected


BARE: list[tuple[str, dict[str, Any]]] = [
    ("john", {"multi_match": {"query": "john", "fields": ["name", "bio"], "operator": "and"}}),
    (
        '"john smith"',
        {"multi_match": {"query": "john smith", "fields": ["name", "bio"], "type": "phrase"}},
    ),
    (
        '"john smith"~3',
        {
            "multi_match": {
                "query": "john smith",
                "fields": ["name", "bio"],
                "type": "phrase",
                "slop": 3,
            }
        },
    ),
    (
        "jon~1",
        {
            "multi_match": {
                "query": "jon",
                "fields": ["name", "bio"],
                "operator": "and",
                "fuzziness": 1,
            }
        },
    ),
    (
        "jo*",
        should(
            {"wildcard": {"name": {"value": "jo*", "case_insensitive": True}}},
            {"wildcard": {"bio": {"value": "jo*", "case_insensitive": True}}},
        ),
    ),
    (
        "john age:30",
        must(
            {"multi_match": {"query": "john", "fields": ["name", "bio"], "operator": "and"}},
            term("age", 30),
        ),
    ),
]


@pytest.mark.parametrize(("expr", "expected"), BARE, ids=[b[0] for b in BARE])
def test_bare_terms_use_default_fields(expr: str, expected: dict[str, Any]) -> None:
    compiled = compile_filter(expr, CATALOG, default_fields=["name", "bio"])
    assert compiled.query is not None
    assert compiled.query.to_dict() == expected


def test_default_fields_default_to_every_text_field_with_nested_wrapping() -> None:
    compiled = compile_filter("john", CATALOG)
    assert compiled.query is not None
    root = {
        "multi_match": {
            "query": "john",
            "fields": ["name", "bio", "address.street"],
            "operator": "and",
        }
    }
    in_reviews = nested(
        "reviews",
        {"multi_match": {"query": "john", "fields": ["reviews.comment"], "operator": "and"}},
    )
    in_replies = nested(
        "reviews",
        nested(
            "reviews.replies",
            {
                "multi_match": {
                    "query": "john",
                    "fields": ["reviews.replies.text"],
                    "operator": "and",
                }
            },
        ),
    )
    assert compiled.query.to_dict() == should(root, in_reviews, in_replies)
    assert compiled.fields == frozenset()


def test_non_text_default_fields_are_searched_leniently() -> None:
    compiled = compile_filter("30", CATALOG, default_fields=["name", "age"])
    assert compiled.query is not None
    assert compiled.query.to_dict() == {
        "multi_match": {
            "query": "30",
            "fields": ["name", "age"],
            "operator": "and",
            "lenient": True,
        }
    }


def test_mapped_id_field_is_a_term_not_an_ids_query() -> None:
    compiled = compile_filter("id:abc", CATALOG_WITH_ID)
    assert compiled.query is not None
    assert compiled.query.to_dict() == term("id", "abc")
    assert compiled.fields == {"id"}
    underscore = compile_filter("_id:abc", CATALOG_WITH_ID)
    assert underscore.query is not None
    assert underscore.query.to_dict() == {"ids": {"values": ["abc"]}}
    assert underscore.fields == {"_id"}


@pytest.mark.parametrize(
    ("expr", "fields"),
    [
        ("age:>=25 AND company_id:acme", {"age", "company_id"}),
        ("NOT is_deleted:true", {"is_deleted"}),
        ("_exists_:is_deleted", {"is_deleted"}),
        ("_missing_:reviews.rating", {"reviews.rating"}),
        ("name.keyword:x name:y", {"name.keyword", "name"}),
        ("id:x", {"_id"}),
        ("john", set()),
        ("reviews.replies.by:(a OR b)", {"reviews.replies.by"}),
    ],
)
def test_fields_lists_explicitly_named_fields(expr: str, fields: set[str]) -> None:
    assert compile_filter(expr, CATALOG, default_fields=["name"]).fields == fields


@pytest.mark.parametrize("expr", [None, "", "   ", "\t\n"])
def test_empty_filters_compile_to_no_query(expr: str | None) -> None:
    assert compile_filter(expr, CATALOG) == CompiledFilter(None, frozenset())


def test_dsl_queries_pass_through_unchanged() -> None:
    query = Q("term", anything="goes")
    compiled = compile_filter(query, CATALOG)
    assert compiled.query is query
    assert compiled.fields == frozenset()


def test_other_types_are_refused() -> None:
    with pytest.raises(TypeError):
        compile_filter({"term": {"a": 1}}, CATALOG)  # type: ignore[arg-type]


def test_aliases_resolve_to_real_fields() -> None:
    from esmapper.model.catalog import FieldCatalog

    from .mapping import MAPPING

    catalog = FieldCatalog(MAPPING, aliases={"years": "age"})
    compiled = compile_filter("years:>3", catalog)
    assert compiled.query is not None
    assert compiled.query.to_dict() == {"range": {"age": {"gt": 3}}}
    assert compiled.fields == {"age"}
