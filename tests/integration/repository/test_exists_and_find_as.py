"""``repo.exists(filter=...)`` and ``repo.find_as(...)`` projections against the server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs
import pytest

import esmapper as em

from .books import Book, Genre


@attrs.define
class TitleOnly:
    title: str


class TitleAndPages(em.InnerDoc):
    title: str = ""
    pages: int = 0


@pytest.fixture
def shelf(books: em.Repository[Book]) -> list[Book]:
    return books.add(
        [
            Book(id="b1", title="Dune", genre=Genre.TECH, pages=412),
            Book(id="b2", title="Fables", genre=Genre.FABLE, pages=90),
            Book(id="b3", title="Gone", genre=Genre.TECH, pages=500, is_deleted=True),
        ],
        consistency="wait",
    )


@pytest.fixture
def sent(books: em.Repository[Book]) -> Iterator[list[dict[str, Any]]]:
    bodies: list[dict[str, Any]] = []

    def record(sender: Any, query: em.QueryContext, **kwargs: Any) -> None:
        bodies.append(query.body)

    with em.signals.before_query.connected_to(record, sender=Book):
        yield bodies


def test_exists_with_a_filter_is_a_size_0_search_stopping_at_one_match(
    books: em.Repository[Book], shelf: list[Book], sent: list[dict[str, Any]]
) -> None:
    assert books.exists(filter="pages:>400") is True
    assert sent[-1]["size"] == 0
    assert sent[-1]["terminate_after"] == 1
    assert books.exists(filter="pages:>1000") is False
    assert books.exists(filter="genre:tech AND pages:>450") is False  # b3 is soft-deleted
    assert books.exists(filter="pages:>450", soft_deletes="all") is True
    assert books.exists(filter="pages:>450", soft_deletes="deleted") is True


def test_exists_by_id_is_unchanged(books: em.Repository[Book], shelf: list[Book]) -> None:
    assert books.exists("b1") is True
    assert books.exists("b3") is False
    assert books.exists("b3", soft_deletes="all") is True
    assert books.exists("nope") is False


def test_exists_of_none_asks_whether_anything_is_there(books: em.Repository[Book]) -> None:
    assert books.exists(filter=None) is False
    books.add(Book(id="x"), consistency="wait")
    assert books.exists(filter=None) is True


def test_exists_validates_before_sending(
    books: em.Repository[Book], sent: list[dict[str, Any]]
) -> None:
    with pytest.raises(em.QueryValidationError) as raised:
        books.exists(filter="colour:red")
    assert raised.value.field == "colour"
    with pytest.raises(TypeError, match="not both"):
        books.exists("b1", filter="pages:>1")
    with pytest.raises(TypeError, match="takes an id"):
        books.exists()
    with pytest.raises(TypeError, match=r"exists\(\) got unknown keyword\(s\): limit"):
        books.exists(filter="pages:>1", limit=3)  # type: ignore[call-arg]
    assert sent == []


def test_exists_before_the_index_exists_is_false(es_url: str, index_prefix: str) -> None:
    with em.Mapper(es_url, models=[Book], index_prefix=index_prefix) as mapper:
        assert mapper.repository(Book).exists(filter="pages:>1") is False


def test_find_as_projects_into_an_attrs_class_with_only_its_fields(
    books: em.Repository[Book], shelf: list[Book], sent: list[dict[str, Any]]
) -> None:
    results = books.find_as(TitleOnly, "genre:tech", includes=["title"])
    assert sent[-1]["_source"] == {"includes": ["title", "id"]}
    assert results.total == 1
    assert results.documents == [TitleOnly(title="Dune")]
    assert [hit.id for hit in results.hits] == ["b1"]
    assert results.hits[0].version is not None


def test_find_as_pages_like_find(books: em.Repository[Book], shelf: list[Book]) -> None:
    results = books.find_as(TitleAndPages, sort="pages", limit=1)
    assert results.documents == [TitleAndPages(title="Fables", pages=90)]
    assert results.next_page()
    assert results.documents == [TitleAndPages(title="Dune", pages=412)]
    assert not results.next_page()


def test_find_as_dict_gives_the_stored_source(
    books: em.Repository[Book], shelf: list[Book]
) -> None:
    (source,) = books.find_as(dict, "title:fables").documents
    assert source["title"] == "Fables"
    assert source["genre"] == "fable"
    assert source["id"] == "b2"


def test_find_as_refuses_a_projection_the_model_cannot_fill(
    books: em.Repository[Book], sent: list[dict[str, Any]]
) -> None:
    @attrs.define
    class Isbn:
        isbn: str

    with pytest.raises(em.QueryValidationError, match="'isbn' is not a field of Book"):
        books.find_as(Isbn)
    with pytest.raises(em.QueryValidationError, match="leave out the required attribute"):
        books.find_as(TitleOnly, includes=["pages"])
    with pytest.raises(TypeError, match=r"find_as\(\) got unknown keyword\(s\): sotr"):
        books.find_as(TitleOnly, sotr="title")  # type: ignore[call-arg]
    assert sent == []


def test_find_as_pages_through_a_snapshot(books: em.Repository[Book]) -> None:
    books.add([Book(title=f"t{i}", pages=i) for i in range(7)], consistency="immediate")
    results = books.find_as(dict, limit=3, snapshot=True, sort="pages")
    seen = [d["title"] for d in results.documents]
    while results.next_page():
        seen += [d["title"] for d in results.documents]
    assert seen == [f"t{i}" for i in range(7)]
    assert all(isinstance(d, dict) for d in results.documents)


def test_find_as_a_projection_pages_through_a_snapshot_descending(
    books: em.Repository[Book],
) -> None:
    books.add([Book(title=f"s{i}", pages=i) for i in range(5)], consistency="immediate")
    results = books.find_as(TitleAndPages, limit=2, snapshot=True, sort="-pages")
    seen = [c.title for c in results.documents]
    while results.next_page():
        seen += [c.title for c in results.documents]
    assert seen == [f"s{i}" for i in reversed(range(5))]


def test_exists_find_as_and_count_hide_a_soft_delete_not_yet_refreshed(
    books: em.Repository[Book],
) -> None:
    book = books.add(Book(id="sd1", title="Dune"), consistency="wait")
    assert books.exists(filter="title:Dune")
    book.is_deleted = True
    books.save(book)  # soft delete, eventual: not refreshed yet
    assert books.find(filter="title:Dune").documents == []
    assert not books.exists(filter="title:Dune")
    assert books.find_as(dict, filter="title:Dune").documents == []
    assert books.count("title:Dune") == 0
