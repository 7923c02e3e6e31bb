"""Typed field references in ``sort=`` and ``includes=``/``excludes=`` (the SQLAlchemy habit):
the same compiled request as the names they stand for."""

from __future__ import annotations

from typing import Any

import pytest

import esmapper as em
from esmapper.errors import QueryValidationError
from esmapper.query import compile_sort, merge_source_filter
from esmapper.query.fields import named_fields
from esmapper.query.sort import named_sort

from .mapping import CATALOG


class Place(em.InnerDoc):
    city: str = ""


class Person(em.Document):
    name: str = em.field(em.Text(fields={"keyword": em.Keyword()}), default="")
    age: int = 0
    email: str = ""
    address: Place | None = None


class Unrelated(em.Document):
    age: int = 0


# mypy types ``Person.age`` on the class as the value type: the tests read through ``Any``
P: Any = Person
U: Any = Unrelated


@pytest.mark.parametrize(
    ("refs", "names"),
    [
        (P.age, "age"),
        (-P.age, "-age"),
        (P.age.desc(), "-age"),
        ([-P.age, P.name], ["-age", "name"]),
        ([P.address.city, "-email"], "address.city -email"),
        (["-age", {"email": "desc"}, P.name], ["-age", {"email": "desc"}, "name"]),
    ],
)
def test_a_sort_by_refs_compiles_like_the_names(refs: object, names: object) -> None:
    assert compile_sort(refs, CATALOG) == compile_sort(names, CATALOG)  # type: ignore[arg-type]


def test_a_descending_ref_gives_the_descending_clause() -> None:
    # the model's own attributes, typed as FieldRef by the mypy plugin (esmapper.contrib.mypy)
    assert compile_sort([-Person.age, Person.name.desc()], CATALOG) == [
        {"age": {"order": "desc"}},
        {"name.keyword": {"order": "desc"}},
    ]


def test_includes_by_refs_select_like_the_names() -> None:
    by_refs = merge_source_filter([P.name, P.address.city], P.email, catalog=CATALOG)
    assert by_refs == merge_source_filter(["name", "address.city"], "email", catalog=CATALOG)
    assert by_refs == (["name", "address.city", "id"], ["email"])


def test_includes_refuse_a_sort_direction() -> None:
    with pytest.raises(QueryValidationError, match=r"includes takes fields, not a sort direction"):
        named_fields([-P.age], Person)


def test_a_ref_of_an_unrelated_model_is_refused() -> None:
    with pytest.raises(QueryValidationError, match=r"sort names Unrelated.age.*search of Person"):
        named_sort(-U.age, Person)
    with pytest.raises(QueryValidationError, match=r"excludes names Unrelated.age"):
        named_fields(U.age, Person, keyword="excludes")


def test_a_ref_of_a_base_or_subclass_model_is_accepted() -> None:
    class Senior(Person):
        level: int = 0

    senior: Any = Senior

    assert named_sort([-P.age, senior.level], Senior) == ["-age", "level"]
    assert named_fields([Senior.age], Person) == ["age"]


def test_anything_else_passes_unchanged_to_the_usual_checks() -> None:
    assert named_sort("-age", Person) == "-age"
    assert named_fields("name,email", Person) == "name,email"
    with pytest.raises(QueryValidationError, match="sort takes an expression"):
        compile_sort([3], CATALOG)  # type: ignore[list-item]
