"""Invalid filters raise QueryValidationError naming the field and the position; bounds hold."""

from __future__ import annotations

import pytest

from esmapper.errors import QueryValidationError
from esmapper.query import compile_filter
from esmapper.query._syntax import MAX_CLAUSES, MAX_DEPTH, MAX_EXPRESSION_BYTES

from .mapping import CATALOG, CATALOG_NO_TEXT

# (expression, field, position, words the message must contain)
ERRORS: list[tuple[str, str | None, int | None, str]] = [
    # unknown fields, with suggestions
    ("nmae:john", "nmae", 0, "Unknown field 'nmae'; did you mean 'name'"),
    ("age:1 AND emial:x", "emial", 10, "did you mean 'email'"),
    ("zzz:1", "zzz", 0, "Unknown field 'zzz'"),
    ("_exists_:nmae", "nmae", 9, "Unknown field 'nmae'"),
    ("reviews.ratting:5", "reviews.ratting", 0, "did you mean 'reviews.rating'"),
    # values that do not fit the field type
    ("age:abc", "age", 4, "expected an integer"),
    ("age:2.5", "age", 4, "expected an integer"),
    ("age:99999999999", "age", 4, "between"),
    ("visits:1e3", "visits", 7, "expected an integer"),
    ("score:abc", "score", 6, "expected a number"),
    ("score:1e999", "score", 6, "finite"),
    ("score:nan", "score", 6, "expected a number"),
    ("is_active:maybe", "is_active", 10, "true or false"),
    ("created_utc:yesterday", "created_utc", 12, "expected a date"),
    ("created_utc:2026-02-30", "created_utc", 12, "expected a date"),
    ("created_utc:2026-01-01T25:00", "created_utc", 12, "expected a date"),
    ("created_utc:now-1x", "created_utc", 12, "expected a date"),
    ("created_utc:[2026-01-01 TO tomorrow]", "created_utc", 27, "expected a date"),
    ("age:[1 TO x]", "age", 10, "expected an integer"),
    ("age:>x", "age", 5, "expected an integer"),
    ("age:(1 OR x)", "age", 10, "expected an integer"),
    ("reviews.rating:bad", "reviews.rating", 15, "expected an integer"),
    # operations the field type does not support
    ("age:1*", "age", 4, "wildcards"),
    ("created_utc:2026*", "created_utc", 12, "wildcards"),
    ("age:/1.*/", "age", 4, "regular expressions"),
    ("age:1~", "age", 4, "fuzzy"),
    ('email:"a b"~2', "email", 6, "proximity"),
    ("bio:[a TO b]", "bio", 4, "no keyword subfield"),
    ("is_active:[false TO true]", "is_active", 10, "range"),
    ("address:x", "address", 8, "is an object"),
    ("reviews:x", "reviews", 8, "is an object"),
    ("id:[a TO b]", "id", 3, "only supports exact values"),
    ("id:ab*", "id", 3, "only supports exact values"),
    ("_exists_:(a*)", "_exists_", 10, "needs a field name"),
    ('_exists_:"email"', "_exists_", 9, "needs a field name"),
    ("email:x~3", None, 6, "fuzziness"),
    ("email:(name:x)", "name", 7, "inside the value of another field"),
    ("email:name:x", "name", 6, "inside the value of another field"),
    ("*:x", None, 2, "'*:' only accepts '*'"),
    # terms without a field that need one
    ("[1 TO 2]", None, 0, "needs a field"),
    (">=3", None, 0, "needs a field"),
    ("/ab/", None, 0, "needs a field"),
    # syntax errors, with the position
    ("age:", None, 4, "Syntax error at end of expression"),
    ("(age:1", None, 6, "Syntax error at end of expression"),
    ("age:1)", None, 5, "Syntax error at position 5"),
    ("age:1 AND", None, 9, "Syntax error at end of expression"),
    ("AND age:1", None, 0, "Syntax error at position 0"),
    ("age:[1 TO", None, 9, "end of expression"),
    ('name:"open', None, 5, "unterminated quote"),
    ("email:a\\", None, 7, "unexpected character"),
    ("email:a~1.2.3", None, None, "fuzziness/proximity"),
    ("email:a^1..2", None, None, "boost"),
    ('name:"a b"~1.5', None, None, "proximity"),
    ("NOT", None, 3, "Syntax error"),
    ("!", None, 1, "Syntax error"),
]


@pytest.mark.parametrize(("expr", "field", "position", "words"), ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_name_field_and_position(
    expr: str, field: str | None, position: int | None, words: str
) -> None:
    with pytest.raises(QueryValidationError) as info:
        compile_filter(expr, CATALOG, default_fields=["name"])
    err = info.value
    assert words in str(err)
    assert err.field == field
    assert err.position == position
    assert err.expression == expr


def test_the_error_is_a_value_error_too() -> None:
    with pytest.raises(ValueError, match="Unknown field"):
        compile_filter("nope:1", CATALOG)


def test_bare_terms_without_text_fields_are_refused() -> None:
    with pytest.raises(QueryValidationError, match="no default fields") as info:
        compile_filter("email:x john", CATALOG_NO_TEXT)
    assert info.value.position == 8


def test_unknown_default_fields_are_refused() -> None:
    with pytest.raises(QueryValidationError, match="Unknown field 'nope'") as info:
        compile_filter("john", CATALOG, default_fields=["nope"])
    assert info.value.field == "nope"


def test_default_fields_are_not_needed_when_no_bare_term() -> None:
    compiled = compile_filter("email:x", CATALOG_NO_TEXT)
    assert compiled.query is not None


def test_bad_values_are_found_in_the_whole_tree() -> None:
    # the error is reported even when the bad clause sits deep inside the expression
    expr = "email:x AND (age:1 OR (name:y AND NOT age:oops))"
    with pytest.raises(QueryValidationError) as info:
        compile_filter(expr, CATALOG)
    assert info.value.field == "age"
    assert info.value.position == expr.index("oops")


# -- bounds ---------------------------------------------------------------------------------


def test_expression_size_is_bounded() -> None:
    at_limit = "email:" + "a" * (MAX_EXPRESSION_BYTES - len("email:"))
    assert compile_filter(at_limit, CATALOG).query is not None
    with pytest.raises(QueryValidationError, match="too long"):
        compile_filter(at_limit + "a", CATALOG)


def test_size_is_counted_in_utf8_bytes() -> None:
    with pytest.raises(QueryValidationError, match="too long"):
        compile_filter("email:" + "é" * (MAX_EXPRESSION_BYTES // 2), CATALOG)


def test_nesting_is_bounded() -> None:
    ok = "(" * (MAX_DEPTH - 1) + "email:x" + ")" * (MAX_DEPTH - 1)
    assert compile_filter(ok, CATALOG).query is not None
    too_deep = "(" * (MAX_DEPTH + 1) + "email:x" + ")" * (MAX_DEPTH + 1)
    with pytest.raises(QueryValidationError, match="nested too deeply") as info:
        compile_filter(too_deep, CATALOG)
    assert info.value.position == MAX_DEPTH  # the opening parenthesis one level too deep


@pytest.mark.parametrize(
    "expr",
    [
        "(" * 4000 + "email:x" + ")" * 4000,
        "NOT " * 2000 + "email:x",
        "-" * 8000 + "email:x",
        "!" * 8000 + "email:x",
        "email:" + "(" * 4000 + "x" + ")" * 4000,
        "(a OR (b AND " * 400 + "c" + "))" * 400,
    ],
    ids=["parens", "not", "minus", "bang", "field-group", "mixed"],
)
def test_degenerate_nesting_is_refused_without_recursion_errors(expr: str) -> None:
    with pytest.raises(QueryValidationError) as info:
        compile_filter(expr[:MAX_EXPRESSION_BYTES], CATALOG, default_fields=["name"])
    assert "nested too deeply" in str(info.value)


def test_clause_count_is_bounded() -> None:
    ok = "email:(" + " OR ".join(["a"] * MAX_CLAUSES) + ")"
    assert compile_filter(ok, CATALOG).query is not None
    too_many = "email:(" + " ".join(["a"] * (MAX_CLAUSES + 1)) + ")"
    with pytest.raises(QueryValidationError, match="too many clauses") as info:
        compile_filter(too_many, CATALOG)
    assert info.value.position == len("email:(") + MAX_CLAUSES * len("a ")


def test_unpaired_surrogates_are_refused() -> None:
    with pytest.raises(QueryValidationError, match="surrogate") as info:
        compile_filter("email:a\ud800", CATALOG)
    assert info.value.position == 7
