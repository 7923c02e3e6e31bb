"""Where a point in time over a model is opened: the alias, the pruned dated aliases, or
the umbrella's partitions one by one (no server)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any, cast

from elastic_transport import ApiResponseMeta, HttpHeaders, NodeConfig
from elasticsearch import NotFoundError

import esmapper as em
from esmapper._pit import PitTarget
from esmapper.indexes import IndexSpec
from esmapper.indexes._pit_target import pit_target, umbrella_expression


class Visit(em.Document, em.HasDates):
    class Index:
        name = "visits"
        kind = "daily"

    page: str = ""


class Audit(em.Document, em.HasDates):
    class Index:
        name = "audit"
        kind = "monthly"

    action: str = ""


class Book(em.Document):
    class Index:
        name = "books"
        version = 2

    title: str = ""


def spec(model: type) -> IndexSpec:
    return IndexSpec(model.__esmapper__, "p-")  # type: ignore[attr-defined]


class AliasClient:
    """Answers ``indices.get_alias(name=...)`` with the given holders (none: 404)."""

    def __init__(self, holders: list[str]) -> None:
        self.holders = holders
        self.asked: list[str] = []

    @property
    def indices(self) -> Any:
        return self

    def get_alias(self, *, name: str) -> Any:
        self.asked.append(name)
        if not self.holders:
            meta = ApiResponseMeta(404, "1.1", HttpHeaders(), 0.0, NodeConfig("http", "h", 1))
            raise NotFoundError("missing", meta, {"error": "alias missing", "status": 404})
        return type("Answer", (), {"body": {h: {"aliases": {name: {}}} for h in self.holders}})


def opened_on(client: AliasClient, model: type, pruned: Sequence[str] | None) -> PitTarget | None:
    return pit_target(cast(Any, client), spec(model), pruned)


def test_a_versioned_model_opens_on_its_alias_and_sends_nothing() -> None:
    client = AliasClient([])
    assert opened_on(client, Book, None) == PitTarget("p-books", listed=False)
    assert client.asked == []


def test_a_pruned_range_opens_on_its_dated_aliases() -> None:
    client = AliasClient([])
    pruned = ["p-visits-2026.03.09", "p-visits-2026.03.10"]
    assert opened_on(client, Visit, pruned) == PitTarget(
        "p-visits-2026.03.09,p-visits-2026.03.10", listed=True
    )
    assert client.asked == []


def test_the_umbrella_s_partitions_are_named_by_their_dated_aliases() -> None:
    client = AliasClient(["p-visits-v2-2026.03.10", "p-visits-v1-2026.03.09", "p-stray"])
    assert opened_on(client, Visit, None) == PitTarget(
        "p-stray,p-visits-2026.03.09,p-visits-2026.03.10", listed=True
    )
    assert client.asked == ["p-visits"]


def test_no_partition_means_nothing_to_open() -> None:
    assert opened_on(AliasClient([]), Visit, None) is None


def test_two_partitions_of_one_period_are_one_dated_alias() -> None:
    members = ["p-audit-v1-2026.01", "p-audit-v2-2026.01", "p-audit-v2-2026.02"]
    assert umbrella_expression(spec(Audit), members, 3000) == "p-audit-2026.01,p-audit-2026.02"


def test_a_list_too_long_for_a_request_line_becomes_yearly_wildcards() -> None:
    start = dt.datetime(2025, 12, 1, tzinfo=dt.timezone.utc)
    days = [start + dt.timedelta(days=n) for n in range(400)]
    visits = spec(Visit)
    members = [visits.partition_name(day) for day in days]
    exact = umbrella_expression(visits, members, 100_000)
    assert exact.count(",") == 399 and len(exact) > 3000
    assert umbrella_expression(visits, members, 3000) == (
        "p-visits-2025.*,p-visits-2026.*,p-visits-2027.*"
    )
    # an index under the umbrella that is no partition keeps its own name
    assert umbrella_expression(visits, [*members, "p-other"], 3000) == (
        "p-other,p-visits-2025.*,p-visits-2026.*,p-visits-2027.*"
    )
