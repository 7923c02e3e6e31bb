"""Models the model-layer unit tests share.

Declared with ``from __future__ import annotations`` on purpose: every annotation below is a
string the model machinery has to evaluate (``test_declaration.py`` checks that they are).
"""

from __future__ import annotations

import datetime as dt
import enum
from typing import Any

import esmapper as em


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Priority(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Address(em.InnerDoc):
    street: str = ""
    city: str = em.field(em.Keyword(), default="")
    zip_code: int | None = None


class Review(em.InnerDoc):
    author: str = ""
    rating: int = 0
    comment: str = em.field(em.Text(), default="")
    posted: dt.datetime | None = None


class Everything(em.Document, em.HasDates, em.SoftDeletes, em.Versioned, em.HasCustomFields):
    """Every field kind, and every trait."""

    class Index:
        name = "everything"
        aliases = {"zip": "address.zip_code"}  # noqa: RUF012 - an Index option, not a field

    name: str = em.field(em.Text(fields={"keyword": em.Keyword()}), default="")
    email: str = ""
    age: int = 0
    small: int = em.field(em.Integer(), default=0)
    rating: float = 0.0
    active: bool = False
    born: dt.datetime | None = None
    birthday: dt.date | None = None
    tags: list[str] = em.field(factory=list)
    scores: list[int] = em.field(factory=list)
    address: Address | None = None
    addresses: list[Address] = em.field(factory=list)
    reviews: list[Review] = em.field(em.Nested(), factory=list)
    meta: dict[str, Any] = em.field(factory=dict)
    color: Color = Color.RED
    priority: Priority = Priority.LOW
    nickname: str | None = None


class Employee(em.Document, em.HasDates, em.SoftDeletes, em.Versioned):
    """An employee with every trait: dates, soft deletes and versions."""

    class Index:
        name = "employees"
        version = 1
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    name: str = em.field(em.Text(fields={"keyword": em.Keyword()}), default="")
    email: str = em.field(em.Keyword(), default="")
    age: int = em.field(em.Integer(), default=0)
    company_id: str = em.field(em.Keyword(), default="")


class Note(em.Document):
    """A second model of the same module: no traits, a required field, converted defaults."""

    title: str
    price: float = 0
    due: dt.datetime = dt.datetime(2030, 1, 1)  # naive: the model stores it as UTC
