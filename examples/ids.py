"""Document ids: safe composite ids, their limits, and re-keying legacy ids.

``python -m examples.ids`` (from the repository root) composes and decomposes ids, hits the
512-byte limit, lets a model compose its ids from ``Index.id_fields``, then writes a document
with a legacy id (a plain ``"_".join``, written with the raw client), finds it with
``audit`` and moves it with ``rekey`` (a dry run first).
"""

from __future__ import annotations

import esmapper as em
from esmapper.rekey import audit, rekey
from examples._common import elasticsearch_url, run_main


class Delivery(em.Document, em.Versioned):
    """An idempotency record: one per (tenant, message, handler)."""

    class Index:
        name = "deliveries"
        version = 1
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012
        id_fields = ("tenant", "message_id", "handler")  # add() composes the id from these

    tenant: str = em.field(em.Keyword(), default="")
    message_id: str = em.field(em.Keyword(), default="")
    handler: str = em.field(em.Keyword(), default="")
    attempts: int = 0


def show_ids() -> None:
    # Each term is percent-encoded (RFC 3986), then the terms are joined with ":".
    for terms in [("acme", "corp_42", "Orders.Ship"), ("acme_corp", "42", "Orders.Ship")]:
        legacy = "_".join(terms)  # the old scheme: both tuples give the same id!
        print(f"{terms}: compose_id -> {em.compose_id(*terms)!r}, '_'.join -> {legacy!r}")
    composed = em.compose_id("a/b", "c:d", prefix="inbox:")
    print(f"compose_id('a/b', 'c:d', prefix='inbox:') -> {composed!r}")
    print(f"decompose_id -> {em.decompose_id(composed, prefix='inbox:')!r}")

    # Elasticsearch refuses ids over 512 bytes; they are never truncated.
    try:
        em.compose_id("acme", "é" * 100)  # each é is 2 UTF-8 bytes -> "%C3%A9", 6 bytes
    except em.IdTooLongError as exc:
        print(f"IdTooLongError: {exc.actual} bytes > {exc.limit}, term {exc.longest_term}")


def main(url: str | None = None, *, index_prefix: str = "") -> None:
    show_ids()
    with (
        elasticsearch_url(url) as address,
        em.Mapper(address, models=[Delivery], index_prefix=index_prefix) as mapper,
    ):
        mapper.configure_indexes()
        repo = mapper.repository(Delivery)

        # id_fields: the id is composed on add; a second add of the same tuple is refused.
        first = repo.add(Delivery(tenant="acme", message_id="corp_42", handler="Orders/Ship"))
        print(f"added with id_fields -> id {first.id!r}")
        try:
            repo.add(Delivery(tenant="acme", message_id="corp_42", handler="Orders/Ship"))
        except em.DuplicateDocumentError:
            print("same tuple again -> DuplicateDocumentError (already delivered)")

        # Documents stored by older code under legacy ids, written with the raw client.
        alias = mapper.spec(Delivery).alias
        for legacy in [
            Delivery(
                id="globex_7_Billing.Invoice",
                tenant="globex",
                message_id="7",
                handler="Billing.Invoice",
            ),
            Delivery(id="initech_9_", tenant="initech", message_id="9"),  # handler lost
        ]:
            mapper.client.index(index=alias, id=legacy.id, document=legacy.to_source())
        mapper.client.indices.refresh(index=alias)
        new_id = em.compose_id("globex", "7", "Billing.Invoice")
        print(f"get({new_id!r}) -> {repo.get(new_id)}  (stored as globex_7_Billing.Invoice)")

        # audit(): read-only scan, one plan per document (ok / rewrite / blocked).
        for plan in audit(mapper, Delivery):
            why = f" ({plan.reason})" if plan.reason else ""
            print(f"audit: {plan.status:8} {plan.old_id!r} -> {plan.new_id!r}{why}")

        # rekey(): a dry run first (prints what would move), then apply=True.
        # Before applying for real: stop every writer of the index and take a snapshot.
        report = rekey(mapper, Delivery, echo=lambda line: print(f"  {line}"))
        print(f"rekey: {report.summary}")
        report = rekey(mapper, Delivery, apply=True, echo=lambda line: print(f"  {line}"))
        print(f"rekey: {report.summary}")
        moved = repo.get(new_id)
        assert moved is not None
        print(f"get({new_id!r}) -> found: {moved.tenant}, {moved.message_id}, {moved.handler}")
        print(f"legacy id still exists -> {repo.exists('globex_7_Billing.Invoice')}")


if __name__ == "__main__":
    run_main(main)
