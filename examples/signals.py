"""Signals: react to writes with blinker receivers.

``python -m examples.signals`` (from the repository root) connects receivers for one model
(``sender=Order``): an "-ing" receiver stamps audit fields before every write, another vetoes
removing shipped orders, and ``entity_changed`` notifications are enriched (or cancelled)
by a ``before_publish_entity_changed`` receiver before they are published.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import esmapper as em
from esmapper import signals
from examples._common import elasticsearch_url, run_main

#: Who is acting (a web app would set it per request).
current_user: contextvars.ContextVar[str] = contextvars.ContextVar("user", default="system")


@contextmanager
def acting_as(user: str) -> Iterator[None]:
    token = current_user.set(user)
    try:
        yield
    finally:
        current_user.reset(token)


class Order(em.Document, em.HasDates, em.Versioned):
    class Index:
        name = "orders"
        version = 1
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    customer: str = em.field(em.Keyword(), default="")
    total: int = 0
    status: str = em.field(em.Keyword(), default="open")  # open | shipped
    created_by: str = em.field(em.Keyword(), default="")
    updated_by: str = em.field(em.Keyword(), default="")


def stamp_audit_fields(sender: type, documents: list[em.ModifiedDocument], **kw: Any) -> None:
    """documents_adding / documents_saving: runs before the write, so changes are stored."""
    for change in documents:
        if kw["change_type"] is em.ChangeType.ADDED:
            change.value.created_by = current_user.get()
        change.value.updated_by = current_user.get()


def forbid_removing_shipped(sender: type, documents: list[em.ModifiedDocument], **kw: Any) -> None:
    """documents_removing: raising vetoes the whole write; nothing is deleted."""
    shipped = [c.value.id for c in documents if c.value.status == "shipped"]
    if shipped:
        raise em.DocumentValidationError(f"shipped orders cannot be removed: {shipped}")


def enrich_notification(sender: type, message: em.EntityChanged, **kw: Any) -> None:
    """before_publish_entity_changed: add data to the message, or cancel it."""
    if current_user.get() == "importer":
        message.cancel = True  # bulk imports would flood the subscribers
    message.data["user"] = current_user.get()


def on_entity_changed(sender: type, message: em.EntityChanged, **kw: Any) -> None:
    """entity_changed: what a cache invalidator or a websocket push would subscribe to."""
    print(f"  published: {message.type} {message.id} {message.change_type.name} {message.data}")


RECEIVERS: list[tuple[signals.Signal, Callable[..., None]]] = [
    (signals.documents_adding, stamp_audit_fields),
    (signals.documents_saving, stamp_audit_fields),
    (signals.documents_removing, forbid_removing_shipped),
    (signals.before_publish_entity_changed, enrich_notification),
    (signals.entity_changed, on_entity_changed),
]


def main(url: str | None = None, *, index_prefix: str = "") -> None:
    with (
        elasticsearch_url(url) as address,
        em.Mapper(address, models=[Order], index_prefix=index_prefix) as mapper,
    ):
        mapper.configure_indexes()
        repo = mapper.repository(Order)
        for signal, receiver in RECEIVERS:  # sender=Order: only this model's writes
            signal.connect(receiver, sender=Order)
        try:
            with acting_as("alice"):
                order = repo.add(Order(customer="acme", total=120))
            print(f"added {order.id}: created_by={order.created_by} updated_by={order.updated_by}")

            with acting_as("bob"):
                order.status = "shipped"
                repo.save(order)
            print(f"saved: status={order.status} updated_by={order.updated_by}")

            with acting_as("importer"):  # stored, but the notification is cancelled
                order.total = 125
                repo.save(order)
            print(f"saved by the importer: total={order.total}, no notification")

            try:
                repo.remove(order)
            except em.DocumentValidationError as exc:
                print(f"remove vetoed: {exc}; still stored -> {repo.exists(order.id)}")

            with acting_as("carol"):
                draft = repo.add(Order(customer="initech", total=10))
                repo.remove(draft)  # an open order may go
            print(f"removed {draft.id}: stored -> {repo.exists(draft.id)}")
        finally:
            for signal, receiver in RECEIVERS:
                signal.disconnect(receiver, sender=Order)


if __name__ == "__main__":
    run_main(main)
