"""The README's main job: esmapper's getting-started flow against a live server.

``python -m esmapper.demo`` uses ``ESMAPPER_URL`` when it is set; otherwise it starts the
embedded local test server (the ``noida-db`` package, from the ``test`` extra) and stops it
at the end. It composes safe ids, declares a model, configures its index, and walks through
add, find, save with a version bump, a stale save, soft delete and remove.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Callable

import esmapper as em
from esmapper.testing.cleanup import delete_prefixed

__all__ = ["Employee", "main", "run"]


class Employee(em.Document, em.HasDates, em.SoftDeletes, em.Versioned):
    """The reference documents' sample model."""

    class Index:
        name = "employees"
        version = 1
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    name: str = em.field(em.Text(fields={"keyword": em.Keyword()}), default="")
    email: str = em.field(em.Keyword(), default="")
    age: int = em.field(em.Integer(), default=0)
    company_id: str = em.field(em.Keyword(), default="")


def run(url: str, *, say: Callable[[str], None] = print) -> None:
    """Run the demo against the cluster at ``url`` (in indexes with a unique prefix)."""
    say("== safe composite ids ==")
    for terms in (("acme", "corp_42", "MyApp.Handlers.OrderHandler"), ("a/b", "c:d")):
        composed = em.compose_id(*terms)
        say(f"compose_id{terms!r} -> {composed!r} -> {em.decompose_id(composed)!r}")
    try:
        em.compose_id("tenant", "x" * 600)
    except em.IdTooLongError as exc:
        say(f"too long: {exc}")

    prefix = f"demo-{uuid.uuid4().hex[:8]}-"
    with em.Mapper(url, models=[Employee], index_prefix=prefix) as mapper:
        try:
            _walkthrough(mapper, say)
        finally:
            delete_prefixed(mapper.client, prefix)


def _walkthrough(mapper: em.Mapper, say: Callable[[str], None]) -> None:
    say("\n== configure indexes ==")
    for state in mapper.configure_indexes():
        say(f"{state.model}: alias {state.alias} -> {state.current_index} ({state.action})")
    repo = mapper.repository(Employee)

    say("\n== add ==")
    staff = repo.add(
        [
            Employee(name="Jane Doe", email="jane@acme.test", age=34, company_id="acme"),
            Employee(name="John Roe", email="john@acme.test", age=22, company_id="acme"),
            Employee(name="Ada Lee", email="ada@initech.test", age=41, company_id="initech"),
        ],
        consistency="wait",
    )
    for employee in staff:
        say(f"added {employee.id} {employee.name!r} version={employee.version}")

    say('\n== find "age:>=25" sorted by name ==')
    results = repo.find("age:>=25", sort="name", aggregations="terms:company_id avg:age")
    for hit in results.hits:
        say(f"{hit.document.name} ({hit.document.age}) version={hit.version}")
    aggs = results.aggregations
    companies = ", ".join(f"{b.key}={b.total}" for b in aggs["terms_company_id"].buckets)
    say(f"total={results.total}; by company: {companies}; avg age: {aggs['avg_age'].value}")

    say("\n== save with a version check ==")
    jane = repo.require(str(staff[0].id))
    stale = repo.require(str(staff[0].id))
    before = jane.version
    jane.age += 1
    repo.save(jane)
    say(f"saved {jane.name}: version {before} -> {jane.version}")
    stale.name = "Someone Else"
    try:
        repo.save(stale)
    except em.VersionConflictError as exc:
        say(f"stale save refused: {type(exc).__name__}: {exc}")

    jane_id = str(jane.id)
    say("\n== soft delete ==")
    jane.is_deleted = True
    repo.save(jane, consistency="wait")
    say(f"get -> {repo.get(jane_id)}; count -> {repo.count()}; exists -> {repo.exists(jane_id)}")
    restored = repo.get(jane_id, soft_deletes="all")
    say(f"get(soft_deletes='all') -> {restored.name if restored else None}")
    say(f"count(soft_deletes='deleted') -> {repo.count(soft_deletes='deleted')}")

    say("\n== remove ==")
    repo.remove(jane, consistency="wait")
    say(f"after remove: get(all) -> {repo.get(jane_id, soft_deletes='all')}")
    try:
        repo.find("agee:>3")
    except em.QueryValidationError as exc:
        say(f"bad filter: {exc}")


def main() -> int:
    url = os.environ.get("ESMAPPER_URL", "").strip()
    server = None
    if not url:
        from esmapper.testing import LocalServer, ServerStartError

        print("ESMAPPER_URL is not set: starting the embedded local server", flush=True)
        try:
            server = LocalServer().start()
        except ServerStartError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        url = server.url
    print(f"using Elasticsearch at {url}")
    try:
        run(url)
    finally:
        if server is not None:
            server.stop()
    print("\ndemo finished")
    return 0


if __name__ == "__main__":
    sys.exit(main())
