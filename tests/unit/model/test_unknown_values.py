"""Stored values the model does not know (a newer deploy's enum value, an unreadable date, a
string where an object is declared): loaded as stored, reported once, written back as is."""

from __future__ import annotations

import copy
import datetime as dt
import enum
import logging
from collections.abc import Iterator
from typing import Any

import pytest

import esmapper as em
from esmapper.model.lenient import reset_reported

UTC = dt.timezone.utc


class Status(enum.Enum):
    DRAFT = "draft"
    PUBLISHED = "published"


class Review(em.InnerDoc):
    rating: int = 0
    status: Status = Status.DRAFT
    labels: list[Status] = em.field(factory=list)


class Post(em.Document, em.HasDates):
    class Index:
        name = "posts"

    title: str = ""
    status: Status = Status.DRAFT
    history: list[Status] = em.field(factory=list)
    published: dt.datetime | None = None
    reviews: list[Review] = em.field(em.Nested(Review), factory=list)
    main: Review | None = None
    counts: list[int] = em.field(factory=list)


SOURCE: dict[str, Any] = {
    "title": "t",
    "status": "archived",  # added by a newer deploy
    "history": ["draft", "archived"],
    "published": "last tuesday",
    "reviews": [
        {"rating": 5, "status": "published"},
        {"rating": 1, "status": "flagged", "labels": ["draft", "spam"]},
        "not an object",
    ],
    "main": "also not an object",
    "counts": [1, "two"],
}


@pytest.fixture(autouse=True)
def fresh_reports() -> Iterator[None]:
    reset_reported()
    yield
    reset_reported()


def load(id: str = "p1", source: dict[str, Any] | None = None) -> Post:
    return Post.from_hit({"_id": id, "_source": copy.deepcopy(source or SOURCE)})


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "esmapper.model" and r.levelno == logging.WARNING
    ]


def test_a_read_keeps_each_unknown_value_as_stored_and_converts_the_rest() -> None:
    post = load()
    assert post.title == "t"
    assert post.status == "archived"  # type: ignore[comparison-overlap]
    assert post.history == [Status.DRAFT, "archived"]
    assert post.published == "last tuesday"
    assert post.reviews[0] == Review(rating=5, status=Status.PUBLISHED)
    assert (post.reviews[1].rating, post.reviews[1].status) == (1, "flagged")
    assert post.reviews[1].labels == [Status.DRAFT, "spam"]
    assert post.reviews[2] == "not an object"
    assert post.main == "also not an object"
    assert post.counts == [1, "two"]  # plain kinds are not converted on reads at all


def test_one_warning_per_value_names_the_model_the_field_path_and_the_id(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="esmapper.model")
    load("p1")
    first = warnings(caplog)
    assert len(first) == 7
    status = next(m for m in first if "field status " in m)
    assert status.startswith("Post 'p1': the stored value 'archived' of field status")
    assert "not a valid Status" in status
    assert any("field reviews[1].labels[1]" in m and "'spam'" in m for m in first)
    assert any("field main" in m and "Review is stored as an object, not a str" in m for m in first)
    caplog.clear()
    for i in range(50):  # a loop over many documents holding the same values
        load(f"p{i + 2}")
    assert warnings(caplog) == []
    debug = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    assert any(m.startswith("Post 'p51': the stored value 'archived'") for m in debug)


def test_another_unknown_value_of_the_same_field_is_reported_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    load("p1", {"status": "archived"})
    load("p2", {"status": "hidden"})
    assert [m.split(":")[0] for m in warnings(caplog)] == ["Post 'p1'", "Post 'p2'"]


def test_saving_writes_the_unknown_values_back_unchanged() -> None:
    post = load()
    source = post.to_source()
    for key in ("status", "history", "published", "main", "counts"):
        assert source[key] == SOURCE[key], key
    assert source["reviews"][1]["status"] == "flagged"
    assert source["reviews"][1]["labels"] == ["draft", "spam"]
    assert source["reviews"][2] == "not an object"


def test_the_normalizer_run_before_writes_keeps_them() -> None:
    post = load()
    post.history.append(Status.PUBLISHED)
    post.reviews[1].labels.insert(0, Status.PUBLISHED)
    Post.__esmapper__.normalize(post)
    assert post.history == [Status.DRAFT, "archived", Status.PUBLISHED]
    assert post.to_source()["reviews"][1]["labels"] == ["published", "draft", "spam"]
    assert post.counts == [1, "two"]


def test_a_new_unknown_value_is_still_refused() -> None:
    post = load()
    post.history.append("gone")  # type: ignore[arg-type]
    with pytest.raises(em.DocumentValidationError) as raised:
        Post.__esmapper__.normalize(post)
    assert raised.value.field == "history[2]"
    post.history.pop()
    post.reviews[1].labels.append("bogus")  # type: ignore[arg-type]
    with pytest.raises(em.DocumentValidationError) as raised:
        Post.__esmapper__.normalize(post)
    assert raised.value.field == "reviews[1].labels[2]"


def test_assigning_a_value_the_model_does_not_know_is_refused() -> None:
    post = load()
    with pytest.raises(em.DocumentValidationError, match=r"Post\.status"):
        post.status = "archived"  # type: ignore[assignment]
    post.status = Status.PUBLISHED
    assert post.to_source()["status"] == "published"


def test_the_hit_and_the_document_share_no_container() -> None:
    source = copy.deepcopy(SOURCE)
    source["main"] = {"rating": "x", "labels": "y"}
    source["reviews"] = [["a", "list"]]
    post = Post.from_hit({"_id": "p1", "_source": source})
    post.reviews[0].append("more")  # type: ignore[attr-defined, union-attr]
    assert source["reviews"] == [["a", "list"]]
    written = post.to_source()
    written["reviews"][0].append("leak")
    assert post.reviews[0] == ["a", "list", "more"]  # type: ignore[comparison-overlap]


def test_a_created_date_the_model_cannot_read_is_kept_until_the_mapper_replaces_it() -> None:
    post = load("p1", {"created_utc": "yesterday", "title": "t"})
    assert post.created_utc == "yesterday"
    assert post.to_source()["created_utc"] == "yesterday"


def test_documents_that_fit_the_model_take_the_compiled_path(
    caplog: pytest.LogCaptureFixture,
) -> None:
    post = load("p1", {"status": "published", "history": ["draft"], "title": "fine"})
    assert post.status is Status.PUBLISHED
    assert not hasattr(post, "_esm_raw")
    assert caplog.records == []


def test_embedded_objects_loaded_alone_report_without_an_id(
    caplog: pytest.LogCaptureFixture,
) -> None:
    review = Review.from_source({"rating": 2, "status": "flagged"})
    assert review.status == "flagged"
    assert warnings(caplog) == [
        "Review None: the stored value 'flagged' of field status is not one the model knows "
        "(ValueError: 'flagged' is not a valid Status); loaded as stored, and a save writes "
        "it back unchanged (further reads of this value log at DEBUG)"
    ]
