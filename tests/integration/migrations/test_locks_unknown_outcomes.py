"""The lock document when the answer to a write is lost (dropped before the server got it,
dropped after the server applied it, or cut short): the lock is read back, never resent
blindly, and a process is never locked out of its own lock."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import pytest
from elasticsearch import Elasticsearch

from esmapper.locks import LOCK_INDEX, LockProvider
from esmapper.model.codec import format_datetime
from esmapper.testing.faults import FaultProxy

LOST = ["drop_before", "drop_after", "truncate"]
NAME = "migrations"
TTL = timedelta(minutes=5)
DOC = rf"-{LOCK_INDEX}/_doc/{NAME}$"  # behind the test prefix


@pytest.fixture
def locks(proxy: FaultProxy, index_prefix: str) -> Iterator[LockProvider]:
    client = Elasticsearch(proxy.url, request_timeout=30)
    yield LockProvider(client, index_prefix=index_prefix)
    client.close()


def lose(proxy: FaultProxy, how: str, method: str, skip: int = 0) -> None:
    if how == "truncate":
        proxy.truncate_response(path=DOC, method=method, skip=skip)
    else:
        after = how == "drop_after"
        proxy.drop_connection(path=DOC, method=method, after_forwarding=after, skip=skip)


def stored_owner(es: Elasticsearch, locks: LockProvider) -> str | None:
    found = es.options(ignore_status=404).get(index=locks.index, id=NAME)
    owner: str | None = found["_source"]["owner"] if found.get("found") else None
    return owner


@pytest.mark.parametrize("how", LOST)
def test_a_lost_create_does_not_lock_the_process_out_of_its_own_lock(
    how: str, locks: LockProvider, proxy: FaultProxy, es_client: Elasticsearch
) -> None:
    lose(proxy, how, "PUT")

    lock = locks.acquire(NAME, TTL)  # no wait: held at once

    assert stored_owner(es_client, locks) == lock.owner
    # resent only when reading back showed it was not applied
    assert proxy.count(DOC, method="PUT") == (2 if how == "drop_before" else 1)
    lock.renew()  # the version read back is the stored one
    lock.release()
    assert stored_owner(es_client, locks) is None


@pytest.mark.parametrize("how", LOST)
def test_a_lost_renewal_is_read_back(
    how: str, locks: LockProvider, proxy: FaultProxy, es_client: Elasticsearch
) -> None:
    lock = locks.acquire(NAME, TTL)
    lose(proxy, how, "PUT")

    proxy.reset_counts()
    lock.renew(timedelta(minutes=30))
    assert proxy.pending_faults == 0
    assert proxy.count(DOC, method="PUT") == (2 if how == "drop_before" else 1)

    stored = es_client.get(index=locks.index, id=NAME)
    assert stored["_source"]["owner"] == lock.owner
    assert datetime.fromisoformat(stored["_source"]["expires_at"]) > (
        datetime.now(timezone.utc) + timedelta(minutes=20)
    )
    lock.renew()  # still ours, at the version read back
    lock.release()
    assert stored_owner(es_client, locks) is None


@pytest.mark.parametrize("how", LOST)
def test_a_lost_release_is_read_back(
    how: str, locks: LockProvider, proxy: FaultProxy, es_client: Elasticsearch
) -> None:
    lock = locks.acquire(NAME, TTL)
    lose(proxy, how, "DELETE")

    proxy.reset_counts()
    lock.release()
    assert proxy.pending_faults == 0
    assert proxy.count(DOC, method="DELETE") == (2 if how == "drop_before" else 1)

    assert stored_owner(es_client, locks) is None
    assert locks.acquire(NAME, TTL).owner != lock.owner  # free for the next one


@pytest.mark.parametrize("how", LOST)
def test_a_lost_take_over_of_an_expired_lock_is_read_back(
    how: str, locks: LockProvider, proxy: FaultProxy, es_client: Elasticsearch
) -> None:
    expired = datetime.now(timezone.utc) - timedelta(minutes=1)
    es_client.index(
        index=locks.index,
        id=NAME,
        document={
            "owner": "crashed:1:deadbeef",
            "acquired_at": format_datetime(expired - TTL),
            "expires_at": format_datetime(expired),
        },
        refresh=True,
    )
    lose(proxy, how, "PUT", skip=1)  # the create gets 409; the take-over's answer is lost

    lock = locks.acquire(NAME, TTL)  # no wait: taken over at once
    assert proxy.pending_faults == 0
    # the create, then the take-over, resent only when read back as not applied
    assert proxy.count(DOC, method="PUT") == (3 if how == "drop_before" else 2)

    assert stored_owner(es_client, locks) == lock.owner
    lock.renew()
    lock.release()
