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


def test_several_fields_take_the_form_of_the_server_version() -> None:
    from esmapper.query.highlight import highlight_body, needs_version

    body = {"fields": {"title": {}, "body": {"number_of_fragments": 0}}, "pre_tags": ["<b>"]}
    listed = {
        "fields": [{"title": {}}, {"body": {"number_of_fragments": 0}}],
        "pre_tags": ["<b>"],
    }
    assert needs_version(body) and not needs_version({"fields": {"title": {}}})
    assert not needs_version(None)
    for version in ((8, 18), (8, 19), (9, 0), None):  # None: unknown, every server takes it
        assert highlight_body(body, version) == body
    assert highlight_body(body, (9, 1)) == highlight_body(body, (10, 0)) == listed
    one: dict[str, Any] = {"fields": {"title": {}}}
    assert highlight_body(one, (9, 1)) == one  # a single-key object conforms everywhere
