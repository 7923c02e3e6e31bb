"""keyword_and_sort_fields() and the ``sort`` normalizer it needs."""

from __future__ import annotations

from typing import Any

import pytest

import esmapper as em
from esmapper.model._sortable import SORT_NORMALIZER, with_sort_normalizer


class Person(em.Document):
    name: str = em.field(em.Text(fields=em.keyword_and_sort_fields()), default="")


def test_the_text_field_gets_a_keyword_and_a_normalized_sort_subfield() -> None:
    mapping = Person.__esmapper__.mapping["properties"]["name"]
    assert mapping == {
        "type": "text",
        "fields": {
            "keyword": {"type": "keyword", "ignore_above": 256},
            "sort": {"type": "keyword", "normalizer": "sort", "ignore_above": 256},
        },
    }
    info = Person.__esmapper__.catalog.resolve("name")
    assert (info.keyword, info.sort) == ("name.keyword", "name.sort")
    assert em.keyword_and_sort_fields(ignore_above=None)["keyword"].to_dict() == {"type": "keyword"}


def test_the_normalizer_is_added_where_the_mapping_names_it() -> None:
    mapping = Person.__esmapper__.mapping
    assert with_sort_normalizer({"number_of_shards": 1}, mapping) == {
        "number_of_shards": 1,
        "analysis": {"normalizer": {"sort": SORT_NORMALIZER}},
    }
    assert with_sort_normalizer({}, {"properties": {"a": {"type": "keyword"}}}) == {}


@pytest.mark.parametrize(
    "settings",
    [
        {"analysis": {"normalizer": {"sort": {"type": "custom", "filter": ["lowercase"]}}}},
        {"index": {"analysis": {"normalizer": {"sort": {"type": "custom"}}}}},
        {"analysis.normalizer.sort.type": "custom"},
    ],
)
def test_a_sort_normalizer_of_the_model_is_kept(settings: dict[str, Any]) -> None:
    assert with_sort_normalizer(settings, Person.__esmapper__.mapping) == settings


def test_other_normalizers_are_kept_beside_it() -> None:
    settings = {"analysis": {"normalizer": {"lower": {"type": "custom"}}, "analyzer": {}}}
    assert with_sort_normalizer(settings, Person.__esmapper__.mapping)["analysis"] == {
        "normalizer": {"lower": {"type": "custom"}, "sort": SORT_NORMALIZER},
        "analyzer": {},
    }
    assert settings["analysis"]["normalizer"] == {"lower": {"type": "custom"}}  # not mutated
