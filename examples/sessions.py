"""Sessions: one unit of work per request or job.

``python -m examples.sessions`` (from the repository root) moves money between accounts:
a session keeps one object per id (identity map), tracks what changed, and writes all of it
in one bulk request when it commits; an exception rolls the session back; a version
conflict found by the flush is handled by re-reading and retrying.
"""

from __future__ import annotations

from typing import Any

import esmapper as em
from examples._common import elasticsearch_url, run_main


class Account(em.Document, em.HasDates, em.Versioned):
    class Index:
        name = "accounts"
        version = 1
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    owner: str = em.field(em.Keyword(), default="")
    balance: int = 0  # in cents


def transfer(s: em.Session, source_id: str, target_id: str, amount: int) -> None:
    """Business logic only changes objects; the session decides what to write."""
    source, target = s.get(Account, source_id), s.get(Account, target_id)
    assert source is not None and target is not None
    source.balance -= amount
    target.balance += amount
    if source.balance < 0:
        raise ValueError(f"{source.owner} cannot pay {amount}: the balance would be negative")


def add_interest(mapper: em.Mapper, account_id: str, cents: int, meanwhile: Any = None) -> int:
    """Retry the whole unit of work when the flush meets a version conflict."""
    for attempt in range(1, 4):
        with mapper.session(consistency="wait") as s:
            account = s.get(Account, account_id)
            assert account is not None
            account.balance += cents
            if meanwhile is not None and attempt == 1:
                meanwhile()  # someone else saves the account between our read and our flush
            try:
                s.flush()  # the save carries the version read above
            except em.VersionConflictError as exc:
                failure = exc.conflicts[0]
                pending = [d.id for d in s.dirty]  # failed documents stay pending
                print(f"attempt {attempt}: conflict on {failure.id} ({failure.status}), {pending=}")
                s.rollback()  # drop the stale change; the next attempt re-reads the account
                continue
            print(f"attempt {attempt}: saved {account.owner}, balance {account.balance}")
            return attempt
    raise RuntimeError("gave up after 3 version conflicts")


def report_flush(session: em.Session, written: list[Any], **kwargs: Any) -> None:
    """An ``after_flush`` receiver: what the flush wrote, in how many bulk requests."""
    stats = session.mapper.writer.last_stats  # the bulk writer's counters of its last write
    if written and stats is not None:
        kinds = ", ".join(f"{p.kind} {p.doc.id}" for p in written)
        print(f"  flush: {kinds} -> {stats.requests} _bulk request(s)")


def main(url: str | None = None, *, index_prefix: str = "") -> None:
    with (
        elasticsearch_url(url) as address,
        em.Mapper(address, models=[Account], index_prefix=index_prefix) as mapper,
    ):
        mapper.configure_indexes()
        repo = mapper.repository(Account)
        repo.add(
            [Account(id="alice", owner="Alice", balance=100), Account(id="bob", owner="Bob")],
            consistency="wait",
        )
        em.signals.after_flush.connect(report_flush)  # sender: the session
        try:
            # 1. A unit of work. Nothing is written until the block ends (commit).
            with mapper.session(consistency="wait") as s:
                same = s.get(Account, "alice") is s.get(Account, "alice")
                print(f"identity map: get twice -> same object: {same}")
                transfer(s, "alice", "bob", 30)
                s.add(Account(id="carol", owner="Carol", balance=5))
                dirty = sorted(d.id for d in s.dirty)
                print(f"tracked: dirty={dirty} new={[d.id for d in s.new]}")
                stored = repo.get("alice")  # the store has not seen the change yet
                print(f"stored before commit: alice={stored.balance if stored else None}")
            print("committed: " + balances(repo))

            # 2. An exception inside the block rolls back: nothing pending is written.
            try:
                with mapper.session(consistency="wait") as s:
                    s.add(Account(id="dave", owner="Dave"))
                    transfer(s, "bob", "alice", 1_000)
            except ValueError as exc:
                print(f"rolled back ({exc}): dave exists -> {repo.exists('dave')}")
            print("after rollback: " + balances(repo))

            # 3. A version conflict inside a flush: handle it by re-reading and retrying.
            def other_writer() -> None:
                other = repo.get("alice")
                assert other is not None
                other.owner = "Alice Smith"
                repo.save(other)
                print(f"another writer saved alice: version {other.version}")

            add_interest(mapper, "alice", 7, meanwhile=other_writer)
            print("finally: " + balances(repo))
        finally:
            em.signals.after_flush.disconnect(report_flush)


def balances(repo: em.Repository[Account]) -> str:
    accounts = repo.find(sort="id", consistency="eventual")
    return ", ".join(f"{a.id}={a.balance}" for a in accounts)


if __name__ == "__main__":
    run_main(main)
