"""The contacts API's model and its mapper.

:class:`Contact` has per-company custom fields (``HasCustomFields``; the company is the
tenant: each company defines its own fields, and a search given ``tenant=`` filters and
sorts by their names), soft deletes (``is_deleted``: the trash), dates and versions (an
edit names the version it read: a save over another one is a 409). Contacts read by id are
cached for five minutes, in Redis when ``ESMAPPER_REDIS_URL`` is set, so every worker
sees an edit made through another at once.
"""

from __future__ import annotations

import datetime as dt
import os
import re

import esmapper as em

__all__ = ["DEFAULT_URL", "Contact", "build_mapper"]

DEFAULT_URL = "http://127.0.0.1:9200"
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


class Contact(em.Document, em.HasDates, em.SoftDeletes, em.Versioned, em.HasCustomFields):
    """A person at a company; ``custom_fields`` holds the company's own fields by name."""

    class Index:
        name = "api_contacts"
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012
        default_search_fields = ("name", "email")  # what a bare word searches
        tenant_field = "company"  # each company defines its own custom fields
        cache = dt.timedelta(minutes=5)  # reads by id

    name: str = em.field(em.Text(fields={"keyword": em.Keyword()}), default="")
    email: str = em.field(em.Keyword(), default="")
    company: str = em.field(em.Keyword(), default="")
    tags: list[str] = em.field(em.Keyword(), factory=list)

    def validate(self) -> None:
        """Checked by esmapper before every write (the API answers 422 with the field)."""
        if not self.name.strip():
            raise em.DocumentValidationError("A name is required.", field="name")
        if self.email and not _EMAIL.match(self.email):
            raise em.DocumentValidationError(
                f"{self.email!r} is not an e-mail address.", field="email"
            )
        if not self.company:
            raise em.DocumentValidationError("A company is required.", field="company")


def build_mapper(url: str | None = None, *, index_prefix: str | None = None) -> em.Mapper:
    """A mapper for :class:`Contact`: ``url`` defaults to ``ESMAPPER_URL`` (else
    ``http://127.0.0.1:9200``), ``index_prefix`` to ``ESMAPPER_INDEX_PREFIX``; Redis (cache
    and change notifications shared by the workers) comes from ``ESMAPPER_REDIS_URL``.
    Nothing is sent: the client connects on first use."""
    return em.Mapper(
        url or os.environ.get("ESMAPPER_URL") or DEFAULT_URL,
        models=[Contact],
        index_prefix=(
            index_prefix
            if index_prefix is not None
            else os.environ.get("ESMAPPER_INDEX_PREFIX", "")
        ),
    )
