"""The esmapper models of the Django tests."""

from __future__ import annotations

import esmapper as em


class Note(em.Document, em.Versioned):
    class Index:
        name = "django_notes"
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    text: str = em.field(em.Keyword(), default="")


class RowDoc(em.Document, em.Versioned):
    """A :class:`~tests.integration.contrib.django.rows.models.Row` as Elasticsearch holds it."""

    class Index:
        name = "django_rows"
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    title: str = em.field(em.Keyword(), default="")
    counter: int = em.field(em.Integer(), default=0)
