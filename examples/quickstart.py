"""Quick start: a model, its index, and the everyday repository calls.

``python -m examples.quickstart`` (from the repository root) declares an ``Employee``, creates
its index, adds three employees, finds some with a filter and a sort, saves one with a
version check (and shows a stale save being refused), soft-deletes it and removes it.
"""

from __future__ import annotations

import esmapper as em
from examples._common import elasticsearch_url, run_main


class Employee(em.Document, em.HasDates, em.SoftDeletes, em.Versioned):
    """HasDates adds created_utc/updated_utc, SoftDeletes is_deleted, Versioned version."""

    class Index:
        name = "employees"  # the alias reads and writes go through
        version = 1  # the physical index is "employees-v1"
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    name: str = em.field(em.Text(fields={"keyword": em.Keyword()}), default="")
    email: str = em.field(em.Keyword(), default="")
    age: int = em.field(em.Integer(), default=0)
    company_id: str = ""  # no em.field(): the mapping is inferred (a keyword)


def main(url: str | None = None, *, index_prefix: str = "") -> None:
    with (
        elasticsearch_url(url) as address,
        em.Mapper(address, models=[Employee], index_prefix=index_prefix) as mapper,
    ):
        # Create missing indexes and aliases; idempotent, so call it at every start.
        for state in mapper.configure_indexes():
            print(f"index {state.alias} -> {state.current_index}: {state.action}")
        repo = mapper.repository(Employee)

        # add(): sets id (a new ObjectId), created_utc/updated_utc and version.
        # consistency="wait" returns once the documents are searchable.
        staff = repo.add(
            [
                Employee(name="Jane Doe", email="jane@acme.test", age=34, company_id="acme"),
                Employee(name="John Roe", email="john@acme.test", age=22, company_id="acme"),
                Employee(name="Ada Lee", email="ada@acme.test", age=41, company_id="acme"),
            ],
            consistency="wait",
        )
        for e in staff:
            print(f"added {e.name}: id={e.id} version={e.version}")

        # find(): a Lucene filter, validated against the model before it is sent, and a
        # sort ("-" = descending). Results hold documents, hits (with versions) and a total.
        results = repo.find("age:>=25 AND company_id:acme", sort="-age")
        names = ", ".join(e.name for e in results)
        print(f"find age:>=25 AND company_id:acme, sort -age: {names} (total {results.total})")

        # save(): Versioned models send the version they were read with; if someone saved
        # in between, Elasticsearch refuses the write with VersionConflictError.
        jane = repo.find_one("name:jane")
        assert jane is not None
        stale = repo.get(jane.id)  # a second copy, read at the same version
        assert stale is not None
        before = jane.version
        jane.age += 1
        repo.save(jane)
        print(f"saved {jane.name} (age {jane.age}): version {before} -> {jane.version}")
        stale.email = "someone@else.test"
        try:
            repo.save(stale)
        except em.VersionConflictError as exc:
            print(f"stale save refused: VersionConflictError on {exc.id}; re-read and retry")

        # Soft delete: set is_deleted and save. The document is still stored, but
        # get/find/count/exists hide it unless asked with soft_deletes="all" or "deleted".
        jane.is_deleted = True
        repo.save(jane, consistency="wait")
        hidden = repo.get(jane.id)
        kept = repo.get(jane.id, soft_deletes="all")
        print(
            f"soft-deleted {jane.name}: get -> {hidden}, count -> {repo.count()}, "
            f"get(soft_deletes='all') -> {kept.name if kept else None}"
        )

        # remove(): always a hard delete.
        repo.remove(jane, consistency="wait")
        gone = repo.get(jane.id, soft_deletes="all")
        print(f"removed {jane.name}: get(soft_deletes='all') -> {gone}, count -> {repo.count()}")


if __name__ == "__main__":
    run_main(main)
