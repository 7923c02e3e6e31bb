"""Adversarial review: a tenant's search must never see what only another tenant defines,
nor another tenant's values through a slot the two share."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from elasticsearch.dsl import A, Q

import esmapper as em

from .models import Employee


@pytest.fixture
def people(fields: em.CustomFieldRepository, repo: em.Repository[Employee]) -> list[Employee]:
    fields.add_field("acme", "Secret", "string")  # string-1 for acme
    fields.add_field("globex", "Team", "string")  # string-1 for globex too
    return repo.add(
        [
            Employee(name="a1", company_id="acme", custom_fields={"Secret": "red"}),
            Employee(name="a2", company_id="acme", custom_fields={"Secret": "red"}),
            Employee(name="g1", company_id="globex", custom_fields={"Team": "blue"}),
            Employee(name="g2", company_id="globex", custom_fields={"Team": "blue", "Secret": "x"}),
        ],
        consistency="immediate",
    )


def test_names_only_another_tenant_defines_are_unknown(
    repo: em.Repository[Employee], people: list[Employee]
) -> None:
    failures: list[tuple[int, str]] = []
    calls: list[Callable[[], object]] = [
        lambda: repo.find("secret:red", tenant="globex"),
        lambda: repo.find(tenant="globex", sort="secret"),
        lambda: repo.find(tenant="globex", aggregations="terms:secret"),
        lambda: repo.find(tenant="globex", includes=["secret"]),
        lambda: repo.find(tenant="globex", excludes=["secret"]),
        lambda: repo.find(tenant="globex", highlight=["secret"]),
        lambda: repo.aggregate(tenant="globex", aggregations={"s": A("terms", field="secret")}),
    ]
    for n, call in enumerate(calls):
        try:
            call()
        except em.QueryValidationError as error:
            if "secret" not in str(error).lower():
                failures.append((n, str(error)))
        else:
            failures.append((n, "accepted"))
    assert failures == []


def test_filter_aggregation_queries_use_logical_names_under_tenant(
    repo: em.Repository[Employee], people: list[Employee]
) -> None:
    # before: the query inside a filter aggregation was sent as written, so a logical name
    # matched nothing (an unmapped field) and the bucket was silently empty
    aggs = repo.aggregate(
        tenant="acme",
        aggregations={
            "reds": A("filter", Q("term", **{"SECRET.keyword": "red"})),
            "by": {"filters": {"filters": {"red": {"match": {"secret": "red"}}}}},
            "outer": {
                "terms": {"field": "company_id"},
                "aggs": {"inner": {"filter": {"exists": {"field": "Secret"}}}},
            },
        },
    )
    reds = aggs.single_bucket("reds")
    assert reds is not None and reds.total == 2
    by, outer = aggs.terms("by"), aggs.terms("outer")
    assert by is not None and [(b.key, b.total) for b in by.buckets] == [("red", 2)]
    assert outer is not None
    inner = outer.buckets[0].aggregations.single_bucket("inner")
    assert inner is not None and inner.total == 2
    # globex's documents hold "x" under the name Secret, which globex does not define
    aggs = repo.aggregate(
        tenant="globex", aggregations={"t": A("filter", Q("term", **{"team.keyword": "blue"}))}
    )
    t = aggs.single_bucket("t")
    assert t is not None and t.total == 2


def _stored_names(mapper: em.Mapper) -> list[str]:
    alias = mapper.spec(Employee).alias
    mapper.client.indices.refresh(index=alias)
    hits = mapper.client.search(index=alias, size=100).body["hits"]["hits"]
    return sorted(h["_source"]["name"] for h in hits)


def test_remove_with_tenant_never_deletes_another_tenants_document(
    mapper: em.Mapper, repo: em.Repository[Employee], people: list[Employee]
) -> None:
    a1, _a2, g1, g2 = people
    assert g1.id is not None and a1.id is not None
    # before: both deleted globex's documents, tenant= ignored
    with pytest.raises(em.DocumentValidationError, match="globex"):
        repo.remove(g1, tenant="acme")
    repo.remove([g2.id or "", a1.id], tenant="acme")  # by id: another tenant's is not there
    assert _stored_names(mapper) == ["a2", "g1", "g2"]
    repo.remove(g1, tenant="globex")
    assert _stored_names(mapper) == ["a2", "g2"]


def test_a_session_with_tenant_writes_only_that_tenants_documents(
    mapper: em.Mapper, people: list[Employee]
) -> None:
    _a1, _a2, g1, _g2 = people
    with (
        pytest.raises(em.DocumentValidationError, match="globex"),
        mapper.session(tenant="acme") as session,
    ):
        session.add(Employee(name="x", company_id="globex"))
    with (
        pytest.raises(em.DocumentValidationError, match="globex"),
        mapper.session(tenant="acme") as session,
    ):
        session.remove(g1)
    with mapper.session(tenant="globex") as session:
        session.remove(g1)
    assert _stored_names(mapper) == ["a1", "a2", "g2"]


def test_significant_terms_background_is_the_tenants_documents(
    repo: em.Repository[Employee], people: list[Employee]
) -> None:
    # the background set of significant_terms/significant_text is the whole index unless
    # filtered: other tenants' values of a shared slot would weigh in the scores
    aggs = {
        "sig": A("significant_terms", field="secret"),
        "text": A("significant_text", field="name", background_filter=Q("term", secret="red")),
    }
    body = repo.search(tenant="acme", aggregations=aggs).body()
    acme = {"term": {"company_id": "acme"}}
    sig = body["aggs"]["sig"]["significant_terms"]
    assert sig["field"].startswith("idx.string-")
    assert sig["background_filter"] == acme
    text = body["aggs"]["text"]["significant_text"]["background_filter"]["bool"]["filter"]
    assert text[0] == acme
    # the caller's own background filter is kept, its logical name resolved to the slot
    assert text[1] == {"term": {sig["field"].removesuffix(".keyword"): "red"}}
    # without tenant= the aggregation is sent as written
    plain = repo.search(aggregations={"sig": A("significant_terms", field="name")}).body()
    assert "background_filter" not in plain["aggs"]["sig"]["significant_terms"]
