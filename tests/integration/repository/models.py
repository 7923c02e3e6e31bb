"""Models shared by the repository integration tests."""

from __future__ import annotations

from datetime import datetime

import esmapper as em


class Address(em.InnerDoc):
    city: str = ""
    country: str = ""


class Employee(em.Document, em.HasDates, em.SoftDeletes, em.Versioned):
    class Index:
        name = "employees"
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    name: str = em.field(em.Text(fields={"keyword": em.Keyword()}), default="")
    email: str = em.field(em.Keyword(), default="")
    age: int = em.field(em.Integer(), default=0)
    company_id: str = em.field(em.Keyword(), default="")
    tags: list[str] = em.field(factory=list)
    address: Address | None = None
    hired: datetime | None = None


class Message(em.Document):
    """A plain, unversioned model whose id is composed from three of its fields."""

    class Index:
        name = "inbox"
        kind = "plain"
        id_fields = ("tenant", "message_id", "handler_type")

    tenant: str = ""
    message_id: str = ""
    handler_type: str = ""
    body: str = ""
