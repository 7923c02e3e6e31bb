"""Models of the index-management integration tests: one alias at two versions, and
time-series models."""

from __future__ import annotations

import datetime as dt

import esmapper as em

SETTINGS = {"number_of_shards": 1, "number_of_replicas": 0}


class ItemV1(em.Document, em.HasDates, em.Versioned):
    class Index:
        name = "items"
        version = 1
        settings = SETTINGS

    name: str = em.field(em.Keyword(), default="")
    n: int = em.field(em.Integer(), default=0)


class ItemV2(em.Document, em.HasDates, em.Versioned):
    """Version 2: ``n`` becomes a long, and a ``label`` field appears."""

    class Index:
        name = "items"
        version = 2
        settings = SETTINGS

    name: str = em.field(em.Keyword(), default="")
    n: int = em.field(em.Long(), default=0)
    label: str = em.field(em.Keyword(), default="")


class ItemV2Scripted(em.Document, em.HasDates, em.Versioned):
    """Version 2 with a reindex script that fills ``label``."""

    class Index:
        name = "items"
        version = 2
        settings = SETTINGS
        reindex_scripts = {2: "ctx._source.label = 'item-' + ctx._source.n"}  # noqa: RUF012

    name: str = em.field(em.Keyword(), default="")
    n: int = em.field(em.Long(), default=0)
    label: str = em.field(em.Keyword(), default="")


class ItemV2Broken(em.Document, em.HasDates, em.Versioned):
    """Version 2 whose reindex script fails on every document (a null dereference)."""

    class Index:
        name = "items"
        version = 2
        settings = SETTINGS
        reindex_scripts = {2: "ctx._source.label = ctx._source.missing.toString()"}  # noqa: RUF012

    name: str = em.field(em.Keyword(), default="")
    n: int = em.field(em.Long(), default=0)
    label: str = em.field(em.Keyword(), default="")


class PlainV1(em.Document):
    """No dates: the catch-up is a full second pass."""

    class Index:
        name = "plain_items"
        version = 1
        settings = SETTINGS

    n: int = em.field(em.Integer(), default=0)


class PlainV2(em.Document):
    class Index:
        name = "plain_items"
        version = 2
        settings = SETTINGS

    n: int = em.field(em.Long(), default=0)


class DailyLog(em.Document, em.HasDates):
    class Index:
        name = "logs"
        kind = "daily"
        max_age = dt.timedelta(days=30)
        settings = SETTINGS

    message: str = em.field(em.Keyword(), default="")


class MonthlyAudit(em.Document, em.HasDates):
    class Index:
        name = "audit"
        kind = "monthly"
        max_age = dt.timedelta(days=365)
        settings = SETTINGS

    action: str = em.field(em.Keyword(), default="")


class Event(em.Document):
    """Time-series dated by its own field (``happened``), without HasDates."""

    class Index:
        name = "events"
        kind = "daily"
        date_field = "happened"
        settings = SETTINGS

    happened: dt.datetime | None = None
    kind: str = em.field(em.Keyword(), default="")


class DailyLogV2(em.Document, em.HasDates):
    """DailyLog after a version bump (no time-series reindex: old partitions stay v1)."""

    class Index:
        name = "logs"
        kind = "daily"
        version = 2
        max_age = dt.timedelta(days=30)
        settings = SETTINGS

    message: str = em.field(em.Keyword(), default="")
    level: int = em.field(em.Integer(), default=0)


class PlainV2Dropping(em.Document):
    """Version 2 whose reindex script drops every tenth document (``ctx.op = 'noop'``), so
    the new index ends up with fewer documents than the old one."""

    class Index:
        name = "plain_items"
        version = 2
        settings = SETTINGS
        reindex_scripts = {2: "if (ctx._source.n % 10 == 0) { ctx.op = 'noop' }"}  # noqa: RUF012

    n: int = em.field(em.Long(), default=0)
