"""A model with the dsl-style embedded declarations, an enum and floats (issue 12 tests)."""

from __future__ import annotations

import enum

import esmapper as em


class Genre(enum.Enum):
    TECH = "tech"
    FABLE = "fable"


class Review(em.InnerDoc):
    author: str = em.field(em.Keyword(), default="")
    rating: int = 0
    genre: Genre | None = None


class Address(em.InnerDoc):
    city: str = ""
    country: str = ""


class Book(em.Document, em.HasDates, em.SoftDeletes, em.Versioned):
    class Index:
        name = "books"
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    title: str = em.field(em.Text(fields={"keyword": em.Keyword()}), default="")
    genre: Genre = Genre.TECH
    pages: int = 0
    score: float = 0.0
    scores: list[float] = em.field(factory=list)
    reviews: list[Review] = em.field(em.Nested(Review), factory=list)
    best: Review | None = em.field(em.Nested(Review), default=None)
    address: Address | None = em.field(em.Object(Address), default=None)
