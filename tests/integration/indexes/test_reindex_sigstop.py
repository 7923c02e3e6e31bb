"""Real pauses: a reindex process stopped (SIGSTOP) past its lock's lease resumes (SIGCONT)
after another process took the lock over and is half-way through the same reindex.

Process A reindexes ``items`` v1 -> v2 with a 2 s lease and is stopped at its pause point
(right before its alias swap, after the renewal that precedes it; or before its copy); its
heartbeat thread stops with it, so the lease lapses. Process B waits it out, takes the lock
over and holds at its own pause point (before its copy: its target claimed, still empty; or
before its swap: the old index write-blocked), or finishes. Documents are added, changed
and removed meanwhile. A then resumes: it must be refused (its swap does not move the alias
onto B's index, its rollback deletes nothing B uses), and B then finishes: the alias names
one index holding every document, the writes made meanwhile included.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from elasticsearch import Elasticsearch

from esmapper.indexes.spec import fence_name
from tests.integration.conftest import MakeMapper
from tests.integration.pausing import Child, children, linux_only

from .models import ItemV1, ItemV2

pytestmark = linux_only

WORKER = "tests.integration.indexes.reindex_worker"
SEEDED = 200


def _targets(client: Elasticsearch, alias: str) -> list[str]:
    return sorted(client.options(ignore_status=404).indices.get_alias(name=alias).body)


def _stored(client: Elasticsearch, alias: str) -> dict[str, int]:
    """id -> ``n`` of every document the alias serves."""
    client.indices.refresh(index=alias)
    hits = client.search(index=alias, size=10_000, query={"match_all": {}})["hits"]["hits"]
    return {h["_id"]: h["_source"]["n"] for h in hits}


#: A's pause point -> the refusal it must end with (class name -> part of its message)
REFUSALS: dict[str, dict[str, str]] = {
    # after its last renewal: only the server's condition on its marker can stop it
    "swap": {"ReindexError": "the alias swap was refused"},
    # before its copy: it resumes with every step to do, and finds its lock lost
    "copy": {"ReindexError": "", "LockError": ""},
}


@pytest.mark.parametrize(
    ("a_pause", "b_pause"),
    [
        ("swap", "copy"),  # the case: A would swap onto B's half-built index
        ("swap", "swap"),  # B's copy complete, the old index write-blocked by B
        ("swap", "none"),  # B done: the alias already on the index A built
        ("copy", "copy"),
        ("copy", "none"),  # A resumes with its old index deleted
    ],
)
def test_a_reindex_stopped_past_its_lease_is_refused_and_no_write_is_lost(
    a_pause: str,
    b_pause: str,
    tmp_path: Path,
    make_mapper: MakeMapper,
    es_url: str,
    es_client: Elasticsearch,
    index_prefix: str,
) -> None:
    seed = make_mapper(ItemV1, configure=True)
    seeded = seed.repository(ItemV1).add([ItemV1(name="seed", n=i) for i in range(SEEDED)])
    expected = {str(d.id): d.n for d in seeded}
    writer = make_mapper(ItemV2).repository(ItemV2)
    alias, v1, v2 = f"{index_prefix}items", f"{index_prefix}items-v1", f"{index_prefix}items-v2"
    changes_made, stop_writing = threading.Event(), threading.Event()
    written: list[Any] = []
    failures: list[BaseException] = []

    def write() -> None:
        """Adds, a change and a removal through the alias (waiting out a write block), then
        adds until told to stop."""
        try:
            for i in range(10):
                written.append(writer.add(ItemV2(name="meanwhile", n=1000 + i)))
            changed = writer.get(seeded[0].id)
            assert changed is not None
            changed.n = -1
            writer.save(changed)
            writer.remove(seeded[1].id)
            changes_made.set()
            while not stop_writing.is_set():
                written.append(writer.add(ItemV2(name="during", n=5000 + len(written))))
        except BaseException as exc:
            failures.append(exc)

    writing = threading.Thread(target=write, daemon=True)
    with children() as started:
        a = Child(WORKER, tmp_path, "a", es_url, index_prefix, "2", a_pause)
        started.append(a)
        a.wait_paused()
        a.stop()  # its heartbeat stops too: the 2 s lease lapses
        b = Child(WORKER, tmp_path, "b", es_url, index_prefix, "60", b_pause)
        started.append(b)
        if b_pause == "none":
            assert b.outcome() == {"status": "reindexed"}
        else:
            b.wait_paused()  # it waited out A's lease and took the lock over
        try:
            writing.start()
            if b_pause != "swap":  # else they wait for B's swap
                assert changes_made.wait(30), failures

            a.resume()
            refused = a.outcome()
            assert refused.get("error") in REFUSALS[a_pause], refused
            assert REFUSALS[a_pause][refused["error"]] in refused["message"], refused
            assert _targets(es_client, alias) == ([v2] if b_pause == "none" else [v1])
            assert es_client.indices.exists(index=v2)  # B's index is untouched

            if b_pause != "none":
                b.resume()
                assert b.outcome() == {"status": "reindexed"}
            assert changes_made.wait(30), failures
        finally:
            stop_writing.set()
            writing.join(60)
    assert not failures, failures
    expected.update({str(d.id): d.n for d in written})
    expected[str(seeded[0].id)] = -1
    del expected[str(seeded[1].id)]

    assert _targets(es_client, alias) == [v2]
    assert not es_client.indices.exists(index=v1)
    assert _stored(es_client, alias) == expected
    assert es_client.count(index=alias)["count"] == len(expected)
    aliases = es_client.indices.get_alias(index=v2).body[v2]["aliases"]
    assert sorted(aliases) == sorted([alias, fence_name(v2)])  # no run marker left
