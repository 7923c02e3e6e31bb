"""Querying: Lucene filters, nested fields, sorting, paging, aggregations and the
elasticsearch.dsl habits (scored bare terms, highlights, sort dicts, ``A()`` aggregations).

``python -m examples.querying`` (from the repository root) loads seven employees with their
projects (a ``nested`` list of ``em.InnerDoc``) and runs searches over them. Filters, sorts
and aggregations are validated against the model before anything is sent.
"""

from __future__ import annotations

from datetime import datetime, timezone

from elasticsearch.dsl import A

import esmapper as em
from examples._common import elasticsearch_url, run_main


class Project(em.InnerDoc):
    name: str = em.field(em.Keyword(), default="")
    role: str = em.field(em.Keyword(), default="")
    hours: int = em.field(em.Integer(), default=0)


class Employee(em.Document, em.HasDates):
    class Index:
        name = "staff"
        version = 1
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    name: str = em.field(em.Text(fields={"keyword": em.Keyword()}), default="")
    email: str = em.field(em.Keyword(), default="")
    age: int = em.field(em.Integer(), default=0)
    company_id: str = em.field(em.Keyword(), default="")
    phone: str | None = None  # optional: absent from some documents
    # Nested: each project is matched on its own ("role:lead AND hours:>=20" on ONE project).
    projects: list[Project] = em.field(em.Nested(), factory=list)


def proj(name: str, role: str, hours: int) -> Project:
    return Project(name=name, role=role, hours=hours)


PEOPLE = [  # name, age, company, phone, created (day), projects
    ("Jane Doe", 34, "acme", "555-0101", 1, [proj("atlas", "lead", 30), proj("zeus", "dev", 5)]),
    ("John Roe", 22, "acme", None, 1, [proj("atlas", "dev", 25), proj("zeus", "lead", 10)]),
    ("Ada Lee", 41, "acme", "555-0103", 2, [proj("hermes", "lead", 12)]),
    ("Jack Poe", 29, "initech", None, 2, [proj("atlas", "dev", 40)]),
    ("Mia Kay", 38, "initech", "555-0105", 3, []),
    ("Raj Das", 45, "globex", None, 3, [proj("hermes", "dev", 8)]),
    ("Lin Wu", 31, "globex", "555-0107", 3, [proj("zeus", "lead", 22)]),
]


def load(repo: em.Repository[Employee]) -> None:
    docs = []
    for name, age, company, phone, day, projects in PEOPLE:
        first = name.split()[0].lower()
        docs.append(
            Employee(
                name=name,
                email=f"{first}@{company}.test",
                age=age,
                company_id=company,
                phone=phone,
                projects=projects,
                created_utc=datetime(2025, 3, day, 9, 30, tzinfo=timezone.utc),
            )
        )
    repo.add(docs, consistency="wait")  # created_utc given in the past is kept


def main(url: str | None = None, *, index_prefix: str = "") -> None:
    with (
        elasticsearch_url(url) as address,
        em.Mapper(address, models=[Employee], index_prefix=index_prefix) as mapper,
    ):
        mapper.configure_indexes()
        repo = mapper.repository(Employee)
        load(repo)

        print("== filters (Lucene syntax; field names are the model's attributes) ==")
        for expr in [
            "age:[30 TO 40}",  # inclusive lower bound, exclusive upper bound
            "age:>=40 OR company_id:initech",
            "name:ja*",  # a wildcard on a text field (case-insensitive)
            "email:*@globex.test",
            "NOT company_id:acme AND age:<40",
            "_exists_:phone",
            "projects.role:lead AND projects.hours:>=20",  # on one and the same project
            # NOT on a nested field excludes documents with ANY matching project:
            "projects.name:atlas AND NOT projects.role:lead",
        ]:
            print(f"{expr:50} -> {', '.join(e.name for e in repo.find(expr, sort='name'))}")

        print("\n== sort and page paging ==")
        results = repo.find(sort="company_id -age", limit=3)  # page 1
        while True:
            names = ", ".join(f"{e.name} ({e.company_id}, {e.age})" for e in results)
            print(f"page {results.page} of {results.total} hits: {names}")
            if not results.next_page():  # loads the next page in place; False at the end
                break

        print("\n== search_after paging over a snapshot (point in time) ==")
        results = repo.find(sort="age", limit=3, snapshot=True)
        seen = []
        while True:
            seen += [e.age for e in results]
            if results.page == 1:  # a write while paging is not seen by the snapshot
                repo.add(Employee(name="Late Comer", age=50), consistency="wait")
            if not results.next_page():
                break
        print(f"ages seen: {seen} (not the late comer's 50); count now: {repo.count()}")

        print("\n== aggregations (results keyed <op>_<field>) ==")
        # limit=0: only the aggregations, no hits.
        expr = "terms:company_id avg:age date:created_utc~1d"
        aggs = repo.find("NOT name:late", aggregations=expr, limit=0).aggregations
        companies = aggs.terms("terms_company_id")
        print("terms_company_id: " + ", ".join(f"{b.key}={b.total}" for b in companies.buckets))
        print(f"avg_age: {aggs.value('avg_age'):.1f}")
        days = aggs.date_histogram("date_created_utc")  # bucket keys are epoch ms
        print(
            "date_created_utc: "
            + ", ".join(f"{b.key_as_string[:10]}={b.total}" for b in days.buckets)
        )
        # A sub-aggregation in parentheses runs inside each bucket.
        aggs = repo.find("NOT name:late", aggregations="terms:(company_id avg:age)").aggregations
        for bucket in aggs.terms("terms_company_id").buckets:
            print(f"{bucket.key}: avg_age {bucket.aggregations.value('avg_age'):.1f}")
        # Fields under a nested path are aggregated inside one "nested_<path>" bucket.
        aggs = repo.find(aggregations="terms:projects.role", limit=0).aggregations
        nested = aggs.nested("nested_projects")
        roles = nested.aggregations.terms("terms_projects.role")
        print("projects by role: " + ", ".join(f"{b.key}={b.total}" for b in roles.buckets))

        print("\n== habits from elasticsearch.dsl ==")
        # A bare term is scored: without a sort the best match comes first, with its score.
        best = repo.find("jane", highlight=["name"])
        print(f"'jane': {best[0].name}, fragments {best.hits[0].highlight['name']}")
        # A sorted page ends with the id tiebreaker, so any hit's sort values continue it
        # (results.search_after_token is the same as an opaque string).
        first = repo.find(sort=[{"age": "desc"}], limit=3)
        rest = repo.find(sort=[{"age": "desc"}], search_after=first.hits[-1].sort, limit=3)
        print(f"ages by {{'age': 'desc'}}: {[e.age for e in first]} then {[e.age for e in rest]}")
        # Aggregation objects, or a dict of named ones; aggregate() takes the filter first.
        by_company = {"per_company": A("terms", field="company_id")}
        aggs = repo.aggregate("NOT name:late", aggregations=by_company)
        counts = ", ".join(f"{b.key}={b.total}" for b in aggs.terms("per_company").buckets)
        print(f"per_company: {counts}")

        print("\n== invalid filters are refused before anything is sent ==")
        for bad in ["agee:>30", "age:>=abc", "name:(jane OR"]:
            try:
                repo.find(bad)
            except em.QueryValidationError as exc:
                print(f"{bad!r}: field={exc.field} position={exc.position}: {exc}")


if __name__ == "__main__":
    run_main(main)
