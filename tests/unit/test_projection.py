"""``find_as`` projections (esmapper._projection): what each kind of result type gets from a
hit, the includes it asks for, and what is refused before sending."""

from __future__ import annotations

import datetime as dt
import enum
from typing import Any

import attrs
import pytest

import esmapper as em
from esmapper._projection import projection

UTC = dt.timezone.utc


class Genre(enum.Enum):
    TECH = "tech"


class Author(em.InnerDoc):
    name: str = ""


class Book(em.Document, em.HasDates):
    class Index:
        name = "books"

    title: str = ""
    pages: int = 0
    genre: Genre = Genre.TECH
    author: Author | None = None


@attrs.define
class TitleOnly:
    title: str


@attrs.define
class Summary:
    id: str
    title: str = "?"
    genre: Any = None
    created_utc: Any = None
    author: Any = None
    shelf: str = "none"


class TitleDoc(em.InnerDoc):
    title: str = ""
    pages: int = -1


INFO = Book.__esmapper__
HIT: dict[str, Any] = {
    "_id": "b1",
    "_seq_no": 3,
    "_primary_term": 1,
    "_source": {
        "id": "b1",
        "title": "Dune",
        "genre": "tech",
        "created_utc": "2026-01-02T03:04:05Z",
        "author": {"name": "Herbert"},
        "shelf": "s3",
    },
}


def test_an_attrs_class_gets_the_models_values_for_its_attributes() -> None:
    project, includes = projection(INFO, Summary, None)
    assert includes == ["id", "title", "genre", "created_utc", "author"]
    summary = project(HIT, "1:3")
    assert summary == Summary(
        id="b1",
        title="Dune",
        genre=Genre.TECH,
        created_utc=dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        author=Author(name="Herbert"),
        shelf="s3",  # not declared by the model: passed as stored
    )


def test_attributes_absent_from_the_source_keep_their_default() -> None:
    project, _ = projection(INFO, Summary, ["title"])
    summary = project({"_id": "b2", "_source": {"title": "T"}}, None)
    assert (summary.id, summary.title, summary.genre, summary.shelf) == ("b2", "T", None, "none")


def test_an_inner_doc_is_built_with_its_own_converters() -> None:
    project, includes = projection(INFO, TitleDoc, None)
    assert includes == ["title", "pages"]
    assert project(HIT, "1:3") == TitleDoc(title="Dune", pages=-1)


def test_dict_gets_a_copy_of_the_source_as_stored() -> None:
    project, includes = projection(INFO, dict, None)
    assert includes is None
    projected = project(HIT, "1:3")
    assert projected == HIT["_source"]
    projected["author"]["name"] = "changed"
    assert HIT["_source"]["author"] == {"name": "Herbert"}


def test_given_includes_are_kept() -> None:
    _, includes = projection(INFO, TitleOnly, "title")
    assert includes == ["title"]


def test_a_required_attribute_the_model_lacks_is_refused() -> None:
    @attrs.define
    class Wrong:
        isbn: str

    with pytest.raises(em.QueryValidationError, match="'isbn' is not a field of Book") as raised:
        projection(INFO, Wrong, None)
    assert raised.value.field == "isbn"


def test_a_required_attribute_left_out_by_includes_is_refused() -> None:
    with pytest.raises(em.QueryValidationError, match=r"leave out the required attribute 'title'"):
        projection(INFO, TitleOnly, ["pages"])
    projection(INFO, TitleOnly, ["ti*"])  # a pattern that covers it is fine


@pytest.mark.parametrize("result_type", [str, list, 5, Genre])
def test_other_types_are_refused(result_type: Any) -> None:
    with pytest.raises(TypeError, match="find_as"):
        projection(INFO, result_type, None)
