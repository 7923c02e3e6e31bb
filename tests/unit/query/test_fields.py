"""Field masks and the _source include/exclude merge."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from esmapper.errors import QueryValidationError
from esmapper.query import merge_source_filter, parse_field_mask, validate_source_fields

from .mapping import CATALOG

# -- masks --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mask", "paths"),
    [
        ("", []),
        ("  ", []),
        ("id", ["id"]),
        ("id,name", ["id", "name"]),
        (" id , name ", ["id", "name"]),
        ("address(street,city)", ["address.street", "address.city"]),
        (
            "results(id,program(name,id))",
            ["results.id", "results.program.name", "results.program.id"],
        ),
        ("a(b(c(d)))", ["a.b.c.d"]),
        ("id,name,id", ["id", "name"]),
        ("address.*,internal*", ["address.*", "internal*"]),
        ("address ( street , city )", ["address.street", "address.city"]),
        ("reviews(rating),name", ["reviews.rating", "name"]),
    ],
)
def test_parse_field_mask(mask: str, paths: list[str]) -> None:
    assert parse_field_mask(mask) == paths


@pytest.mark.parametrize(
    ("mask", "position"),
    [
        ("a,,b", 2),
        (",a", 0),
        ("a,", 2),
        ("a(", 2),
        ("a()", 2),
        ("a(b", 3),
        ("a)", 1),
        ("a(b)c", 4),
        ("(a)", 0),
        ("a..b", 0),
        (".a", 0),
        ("a b", 2),
    ],
)
def test_malformed_masks(mask: str, position: int) -> None:
    with pytest.raises(QueryValidationError, match="Invalid field mask") as info:
        parse_field_mask(mask)
    assert info.value.position == position
    assert info.value.expression == mask


def test_mask_nesting_is_bounded() -> None:
    with pytest.raises(QueryValidationError, match="nested deeper"):
        parse_field_mask("a(" * 100 + "b" + ")" * 100)


@given(st.text(max_size=60))
def test_any_mask_parses_or_raises_query_validation_error(mask: str) -> None:
    try:
        paths = parse_field_mask(mask)
    except QueryValidationError:
        return
    assert all(p and "," not in p and "(" not in p for p in paths)


# -- validation -----------------------------------------------------------------------------


def test_validate_source_fields() -> None:
    assert validate_source_fields(["name", "address(street,city)", "reviews.*", "id"], CATALOG) == [
        "name",
        "address.street",
        "address.city",
        "reviews.*",
        "id",
    ]
    with pytest.raises(QueryValidationError, match="did you mean 'name'") as info:
        validate_source_fields("id,nmae", CATALOG)
    assert (info.value.field, info.value.position) == ("nmae", 3)
    with pytest.raises(QueryValidationError, match="matches no field"):
        validate_source_fields(["zz*"], CATALOG)


# -- merge --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        # nothing asked, nothing sent
        ({"includes": None, "excludes": None}, (None, None)),
        ({"includes": [], "excludes": []}, (None, None)),
        # includes are unioned (fields and masks) and id is added
        ({"includes": ["name"], "excludes": None}, (["name", "id"], None)),
        (
            {"includes": ["name", "address(city)", "name"], "excludes": None},
            (["name", "address.city", "id"], None),
        ),
        ({"includes": "name,age", "excludes": None}, (["name", "age", "id"], None)),
        # excludes are unioned; required fields are removed from them
        ({"includes": None, "excludes": ["bio", "age"]}, (None, ["bio", "age"])),
        ({"includes": None, "excludes": ["bio", "id"]}, (None, ["bio"])),
        ({"includes": None, "excludes": ["id"]}, (None, None)),
        # include wins over exclude: exact, parent object, wildcard
        ({"includes": ["name"], "excludes": ["name", "bio"]}, (["name", "id"], ["bio"])),
        ({"includes": ["address.city"], "excludes": ["address"]}, (["address.city", "id"], None)),
        ({"includes": ["address.city"], "excludes": ["address.*"]}, (["address.city", "id"], None)),
        (
            {"includes": ["address.*"], "excludes": ["address.street"]},
            (["address.*", "id"], ["address.street"]),
        ),
        # default excludes apply only without explicit excludes
        ({"includes": None, "excludes": None, "default_excludes": ["bio"]}, (None, ["bio"])),
        (
            {"includes": None, "excludes": ["age"], "default_excludes": ["bio"]},
            (None, ["age"]),
        ),
        (
            {"includes": ["name"], "excludes": None, "default_excludes": ["bio"]},
            (["name", "id"], ["bio"]),
        ),
        # a required field that is also a default exclude is not excluded
        (
            {
                "includes": None,
                "excludes": None,
                "default_excludes": ["bio", "created_utc"],
                "required": ("id", "created_utc"),
            },
            (None, ["bio"]),
        ),
        # required fields go into the includes
        (
            {"includes": ["name"], "excludes": None, "required": ("id", "created_utc")},
            (["name", "id", "created_utc"], None),
        ),
        # no required fields: nothing added
        ({"includes": ["name"], "excludes": None, "required": ()}, (["name"], None)),
        # required fields are not a restriction on their own
        ({"includes": None, "excludes": None, "required": ("id", "x")}, (None, None)),
    ],
)
def test_merge(kwargs: dict[str, object], expected: tuple[object, object]) -> None:
    includes = kwargs.pop("includes")
    excludes = kwargs.pop("excludes")
    assert merge_source_filter(includes, excludes, **kwargs) == expected  # type: ignore[arg-type]


def test_merge_validates_against_the_catalog() -> None:
    assert merge_source_filter(["name"], ["bio"], catalog=CATALOG) == (["name", "id"], ["bio"])
    with pytest.raises(QueryValidationError, match="Unknown field 'nope'"):
        merge_source_filter(["nope"], None, catalog=CATALOG)
    with pytest.raises(QueryValidationError, match="Unknown field 'nope'"):
        merge_source_filter(None, "bio,nope", catalog=CATALOG)


def test_merge_refuses_non_strings() -> None:
    with pytest.raises(TypeError):
        merge_source_filter([1], None)  # type: ignore[list-item]
