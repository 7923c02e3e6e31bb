"""The employee directory's models and its mapper.

- :class:`Employee` uses every core trait: ``HasDates`` (``created_utc``/``updated_utc``),
  ``SoftDeletes`` (``is_deleted``: the recycle bin), ``Versioned`` (``version``, checked on
  every save: the edit form's conflict detection) and embeds an :class:`Address`
  (an ``em.InnerDoc``, mapped as an ``object``: filter with ``address.city:Lyon``).
- :class:`Employee` also has per-team custom fields (``HasCustomFields``, the team is the
  tenant: see :mod:`examples.webapp.fields`).
- :class:`Team` has an id composed from ``("company_id", "slug")`` (``Index.id_fields``):
  the team ``platform`` of company ``acme`` is stored as ``acme:platform``, so adding it
  twice is a :class:`~esmapper.errors.DuplicateDocumentError`.

Employees read by id are cached for 5 minutes: in-process by default, and shared by every
worker with ``ESMAPPER_REDIS_URL`` set (an edit through one worker is never served stale
by another, see :mod:`examples.webapp.workers`).

``mapper`` is built from the environment (``ESMAPPER_URL``, ``ESMAPPER_INDEX_PREFIX``,
``ESMAPPER_REDIS_URL``) when
this module is imported; the client connects on first use, so importing is cheap. The CLI
finds it with ``esmapper --app examples.webapp.models:mapper migrate``.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from typing import Any

import esmapper as em

__all__ = [
    "DEFAULT_COMPANY",
    "DEFAULT_URL",
    "MODELS",
    "Address",
    "Employee",
    "Team",
    "build_mapper",
    "mapper",
]

DEFAULT_URL = "http://127.0.0.1:9200"
#: The company every team belongs to (the app is single-tenant; ``COMPANY_ID`` config).
DEFAULT_COMPANY = "acme"

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


class Address(em.InnerDoc):
    """A postal address, embedded in an employee (an ``object`` in the mapping)."""

    street: str = em.field(em.Text(), default="")
    city: str = em.field(em.Keyword(), default="")
    postcode: str = em.field(em.Keyword(), default="")
    country: str = em.field(em.Keyword(), default="")


class Employee(em.Document, em.HasDates, em.SoftDeletes, em.Versioned, em.HasCustomFields):
    """A person in the directory. ``team`` holds the slug of a :class:`Team`, whose custom
    fields (``custom_fields``, by name) the employee carries."""

    class Index:
        name = "directory_employees"
        version = 1
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012
        default_search_fields = ("name", "title", "email")  # what a bare word searches
        cache = dt.timedelta(minutes=5)  # by-id reads (the show and edit pages) are cached
        tenant_field = "team"  # each team defines its own custom fields

    name: str = em.field(em.Text(fields={"keyword": em.Keyword()}), default="")
    email: str = em.field(em.Keyword(), default="")
    title: str = em.field(em.Text(fields={"keyword": em.Keyword()}), default="")
    # ``None`` until set: the BackfillDepartment migration fills the gaps.
    department: str | None = em.field(em.Keyword(), default=None)
    team: str = em.field(em.Keyword(), default="")
    age: int = em.field(em.Integer(), default=0)
    skills: list[str] = em.field(em.Keyword(), factory=list)
    address: Address = em.field(factory=Address)

    def problems(self) -> dict[str, str]:
        """Every broken business rule, by field, in words for the user (a form shows them
        all at once)."""
        found: dict[str, str] = {}
        if not self.name.strip():
            found["name"] = "A name is required."
        if not _EMAIL.match(self.email):
            found["email"] = (
                "Enter an e-mail address, e.g. jane@example.com."
                if not self.email
                else f"{self.email!r} is not an e-mail address."
            )
        if not 16 <= self.age <= 100:
            found["age"] = "The age must be between 16 and 100."
        return found

    def validate(self) -> None:
        """Business rules, checked by esmapper before every add and save (the first one
        broken is raised; :meth:`problems` lists them all)."""
        for field, message in self.problems().items():
            raise em.DocumentValidationError(message, field=field)


class Team(em.Document, em.HasDates, em.Versioned):
    """A team of a company; its id is ``compose_id(company_id, slug)``."""

    class Index:
        name = "directory_teams"
        version = 1
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012
        id_fields = ("company_id", "slug")

    company_id: str = em.field(em.Keyword(), default="")
    slug: str = em.field(em.Keyword(), default="")
    name: str = em.field(em.Text(fields={"keyword": em.Keyword()}), default="")
    description: str = em.field(em.Text(), default="")

    def validate(self) -> None:
        if not _SLUG.match(self.slug):
            raise em.DocumentValidationError(
                "The slug takes lowercase letters, digits and single dashes (e.g. data-eng).",
                field="slug",
            )
        if not self.name.strip():
            raise em.DocumentValidationError("A name is required.", field="name")


MODELS: list[type] = [Employee, Team]


def build_mapper(
    url: str | None = None, *, index_prefix: str | None = None, **options: Any
) -> em.Mapper:
    """A mapper for the directory's models and migrations.

    ``url`` defaults to ``ESMAPPER_URL`` (else ``http://127.0.0.1:9200``), ``index_prefix``
    to ``ESMAPPER_INDEX_PREFIX`` (else none); ``options`` go to :class:`esmapper.Mapper`.
    """
    from examples.webapp.migrations import MIGRATIONS  # they import the models

    return em.Mapper(
        url or os.environ.get("ESMAPPER_URL") or DEFAULT_URL,
        models=MODELS,
        migrations=MIGRATIONS,
        index_prefix=(
            index_prefix
            if index_prefix is not None
            else os.environ.get("ESMAPPER_INDEX_PREFIX", "")
        ),
        **options,
    )


#: The application's mapper (configured from the environment).
mapper = build_mapper()
