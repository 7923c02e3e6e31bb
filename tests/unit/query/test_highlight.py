"""compile_highlight: the highlight body of a search, fields checked against the model."""

from __future__ import annotations

from typing import Any

import pytest

from esmapper.errors import QueryValidationError
from esmapper.query import compile_highlight

from .mapping import CATALOG


@pytest.mark.parametrize(
    ("spec", "fields"),
    [
        ("name", {"name": {}}),
        ("name bio, email", {"name": {}, "bio": {}, "email": {}}),
        (["name", "reviews.comment"], {"name": {}, "reviews.comment": {}}),
        ({"name": {"number_of_fragments": 0}}, {"name": {"number_of_fragments": 0}}),
        ({"bio": None}, {"bio": {}}),
        (["address.*"], {"address.*": {}}),
    ],
)
def test_fields_become_the_highlight_body(spec: Any, fields: dict[str, Any]) -> None:
    assert compile_highlight(spec, CATALOG) == {"fields": fields}


@pytest.mark.parametrize("spec", [None, "", [], {}])
def test_nothing_to_highlight(spec: Any) -> None:
    assert compile_highlight(spec, CATALOG) is None


@pytest.mark.parametrize(
    ("spec", "field", "words"),
    [
        ("nmae", "nmae", "did you mean 'name'"),
        (["age"], "age", "it is an integer field"),
        ("address", "address", "it is an object"),
        ("nope*", "nope*", "matches no field"),
        ({"name": ["x"]}, "name", "must be a dict"),
        (5, "highlight", "highlight takes"),
        ([3], "highlight", "highlight takes"),
    ],
)
def test_errors_name_the_field(spec: Any, field: str, words: str) -> None:
    with pytest.raises(QueryValidationError) as info:
        compile_highlight(spec, CATALOG)
    assert info.value.field == field
    assert words in str(info.value)
