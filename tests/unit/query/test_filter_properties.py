"""Properties of compile_filter over generated input.

- Any text either compiles or raises QueryValidationError: never a luqum exception, a
  RecursionError or anything else, and what compiles serializes to JSON.
- Escaped values are read back literally.
- Generated valid expressions compile, and every leaf on a nested field sits inside exactly
  the ``nested`` wrappers its field needs (no more, no fewer).
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from esmapper.errors import QueryValidationError
from esmapper.query import compile_filter, escape_query_value

from .mapping import CATALOG

SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])

TOKENS = [
    "name", "email", "age", "created_utc", "is_active", "reviews.rating", "reviews.author",
    "reviews.replies.by", "address", "address.city", "nope", "id", "_id", "_exists_",
    "_missing_", "*", ":", "(", ")", "[", "]", "{", "}", "TO", "AND", "OR", "NOT", "&&", "||",
    "!", "-", "+", "~", "~2", "~1.5", "^", "^2", '"', '"a b"', "\\", "/", "/a.b/", ">", ">=",
    "<", "<=", "2026-01-01", "now-1d/d", "25", "-3", "1.5", "true", "x", "jo*", "?", "\n",
]  # fmt: skip

lucene_soup = st.lists(
    st.tuples(st.sampled_from(TOKENS), st.sampled_from(["", " ", "  "])), max_size=30
).map(lambda parts: "".join(tok + sep for tok, sep in parts))


def _compiles_or_refuses(text: str) -> None:
    try:
        compiled = compile_filter(text, CATALOG)
    except QueryValidationError as err:
        assert err.expression == text or err.expression is None
        assert err.position is None or 0 <= err.position <= len(text)
        return
    if compiled.query is not None:
        json.dumps(compiled.query.to_dict())


@SETTINGS
@given(st.text(max_size=200))
@example("(" * 5000)
@example("a:" * 3000 + "b")
@example("\\")
@example("a~1.2.3")
@example('"a"~1.5')
@example("\ud800")
def test_any_text_compiles_or_raises_query_validation_error(text: str) -> None:
    _compiles_or_refuses(text)


@SETTINGS
@given(lucene_soup)
def test_lucene_like_soup_compiles_or_raises_query_validation_error(text: str) -> None:
    _compiles_or_refuses(text)


no_surrogates = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=40)


@SETTINGS
@given(no_surrogates)
@example("")
@example("AND")
@example("a\nb")
@example('say "hi" \\ bye')
@example("*")
@example("T12:30:00")
def test_escaped_values_are_read_back_literally(value: str) -> None:
    compiled = compile_filter(f"email:{escape_query_value(value)}", CATALOG)
    assert compiled.query is not None
    assert compiled.query.to_dict() == {"term": {"email": value}}


# -- generated valid expressions --------------------------------------------------------------

VALUES: dict[str, st.SearchStrategy[str]] = {
    "email": st.sampled_from(["a", "b@c.d", "jo*", '"x y"', "[a TO m]"]),
    "name": st.sampled_from(["john", '"john smith"', "jo*", "[a TO m]"]),
    "age": st.sampled_from(["25", ">=25", "<3", "[1 TO 5]", "{1 TO *]", "*"]),
    "created_utc": st.sampled_from(["2026-01-01", "[2026-01-01 TO now]", ">=now-1d/d"]),
    "is_active": st.sampled_from(["true", "false"]),
    "address.city": st.sampled_from(["Paris", "P*"]),
    "reviews.rating": st.sampled_from(["5", "[3 TO *]", ">2"]),
    "reviews.author": st.sampled_from(["bob", "b*"]),
    "reviews.comment": st.sampled_from(["good", '"very good"']),
    "reviews.replies.by": st.sampled_from(["x", "y*"]),
}

clause = st.one_of(
    st.sampled_from(sorted(VALUES)).flatmap(lambda f: VALUES[f].map(lambda v: f"{f}:{v}")),
    st.sampled_from(sorted(VALUES)).map(lambda f: f"_exists_:{f}"),
    st.sampled_from(sorted(VALUES)).map(lambda f: f"_missing_:{f}"),
)


def _combine(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.tuples(children, st.sampled_from([" AND ", " OR ", " "]), children).map(
            lambda t: f"{t[0]}{t[1]}{t[2]}"
        ),
        children.map(lambda c: f"NOT {c}"),
        children.map(lambda c: f"({c})"),
    )


valid_expressions = st.recursive(clause, _combine, max_leaves=12)

LEAF_QUERIES = ("term", "range", "match", "match_phrase", "wildcard", "regexp", "fuzzy")


def _leaf_fields(kind: str, body: dict[str, Any]) -> list[str]:
    if kind == "exists":
        return [body["field"]]
    if kind == "multi_match":
        return list(body["fields"])
    if kind in LEAF_QUERIES:
        return list(body)
    return []


def _check_nesting(query: dict[str, Any], stack: tuple[str, ...]) -> int:
    """Asserts every leaf's enclosing nested paths; returns the number of leaves seen."""
    ((kind, body),) = query.items()
    if kind == "nested":
        assert body["path"] not in stack
        return _check_nesting(body["query"], (*stack, body["path"]))
    if kind == "bool":
        return sum(
            _check_nesting(child, stack)
            for key in ("must", "should", "must_not", "filter")
            for child in body.get(key, [])
        )
    if kind == "match_all":
        return 1
    seen = 0
    for field in _leaf_fields(kind, body):
        info = CATALOG.resolve(field)
        assert stack == info.nested_paths, (field, stack)
        seen += 1
    return seen


@SETTINGS
@given(valid_expressions)
def test_valid_expressions_compile_with_exact_nested_wrapping(expr: str) -> None:
    compiled = compile_filter(expr, CATALOG)
    assert compiled.query is not None
    query = compiled.query.to_dict()
    json.dumps(query)
    assert _check_nesting(query, ()) >= 1
