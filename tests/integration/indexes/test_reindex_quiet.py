"""A version bump of an index nobody writes to leaves out the passes that only look for
writes made during the run (the catch-ups, the stale-copy comparison, the id comparison
and the counts); with a write or a delete during the copy, or figures that cannot prove
anything (a counter reset, another node), it runs every one of them."""

from __future__ import annotations

from typing import Any

import pytest
from elasticsearch import Elasticsearch

from esmapper.indexes import ReindexProgress, reindex
from esmapper.testing._rules import Exchange, Reply, json_reply
from esmapper.testing.faults import FaultProxy
from tests.integration.conftest import MakeMapper

from .models import ItemV1, ItemV2, ItemV2Scripted


def _seed(make_mapper: MakeMapper, count: int) -> list[str]:
    mapper = make_mapper(ItemV1, configure=True)
    docs = mapper.repository(ItemV1).add([ItemV1(n=i) for i in range(count)], consistency="wait")
    return [d.id or "" for d in docs]


def _passes(proxy: FaultProxy) -> int:
    return proxy.count(r"^/_reindex$", method="POST")


def _ids(es_client: Elasticsearch, alias: str) -> dict[str, int]:
    es_client.indices.refresh(index=alias)
    hits = es_client.search(index=alias, size=1000)["hits"]["hits"]
    return {h["_id"]: h["_source"]["n"] for h in hits}


def test_a_bump_of_an_untouched_index_sends_the_copy_alone(
    make_mapper: MakeMapper, proxy: FaultProxy, es_client: Elasticsearch, index_prefix: str
) -> None:
    ids = _seed(make_mapper, 15)
    v1, v2 = f"{index_prefix}items-v1", f"{index_prefix}items-v2"
    result = reindex(make_mapper(ItemV2, url=proxy.url), ItemV2)

    assert (result.status, result.copied, result.caught_up) == ("reindexed", 15, 0)
    assert (result.old_count, result.new_count, result.removed) == (15, 15, 0)
    assert _passes(proxy) == 1  # the copy: no catch-up, no final pass
    # the proof read before the copy and under the block; the hint (index level) after it
    stats = [r.query for r in proxy.requests if r.path == f"/{v1}/_stats/indexing"]
    assert stats == ["level=shards", "", "level=shards"]
    assert proxy.count(rf"^/{v1}/_refresh$") == 1  # before the copy only
    assert proxy.count(r"/_count$") == proxy.count(r"/_search$") == 0  # nothing listed
    assert proxy.count(r"/_mget$") == 0  # no stale-copy comparison
    assert _ids(es_client, f"{index_prefix}items").keys() == set(ids)
    assert not es_client.indices.exists(index=v1)
    assert es_client.count(index=v2)["count"] == 15  # refreshed before the swap


def test_a_scripted_bump_of_an_untouched_index_compares_no_ids(
    make_mapper: MakeMapper, proxy: FaultProxy, es_client: Elasticsearch, index_prefix: str
) -> None:
    _seed(make_mapper, 12)
    result = reindex(make_mapper(ItemV2Scripted, url=proxy.url), ItemV2Scripted)
    assert (result.status, result.removed, result.new_count) == ("reindexed", 0, 12)
    assert _passes(proxy) == 1
    assert proxy.count(r"/_search$") == proxy.count(r"/_count$") == 0


def test_writes_and_deletes_during_the_copy_are_caught(
    make_mapper: MakeMapper, proxy: FaultProxy, es_client: Elasticsearch, index_prefix: str
) -> None:
    ids = _seed(make_mapper, 20)
    mapper = make_mapper(ItemV2, url=proxy.url)
    repo = mapper.repository(ItemV2)
    done: list[bool] = []

    def during(report: ReindexProgress) -> None:
        if report.phase == "copy" and report.message and not done:  # the copy ended
            done.append(True)
            doc = repo.get(ids[0])
            assert doc is not None
            doc.n = 1000
            repo.save(doc)
            repo.add(ItemV2(id="late", n=99))
            repo.remove(ids[1])

    result = reindex(mapper, ItemV2, progress=during)

    assert done and result.status == "reindexed"
    assert result.removed == 1 and (result.old_count, result.new_count) == (20, 20)
    assert _passes(proxy) == 3  # the copy, the catch-up and the final pass
    stored = _ids(es_client, f"{index_prefix}items")
    expected = {i: n for n, i in enumerate(ids)} | {ids[0]: 1000, "late": 99}
    del expected[ids[1]]
    assert stored == expected  # nothing lost, the deleted document not back


class _ResetCounters:
    """Answers every ``_stats`` read after the first as a cluster whose primaries started
    again (a node restart, a failover): each shard's counters ``change``d."""

    def __init__(self, change: Any) -> None:
        self.change, self.seen = change, 0

    def before(self, exchange: Exchange) -> Reply | None:
        return None

    def after(self, exchange: Exchange, reply: Reply) -> Reply:
        if "/_stats" not in exchange.path or reply.status != 200:
            return reply
        self.seen += 1
        if self.seen == 1:
            return reply
        body = reply.json()
        for entry in body["indices"].values():
            for copies in entry.get("shards", {}).values():
                for copy in copies:
                    self.change(copy)
            if "primaries" in entry:  # the index-level hint: the primaries' sums
                self.change(entry["primaries"])
        return json_reply(200, body)


def _restarted(copy: dict[str, Any]) -> None:
    copy["indexing"]["index_total"] = 0  # a restarted shard copy counts from zero
    copy["indexing"]["delete_total"] = 0


def _moved(copy: dict[str, Any]) -> None:
    if "routing" in copy:  # the index-level sums do not say where a shard lives
        copy["routing"]["node"] = "another-node"  # a replica promoted: the figures may match


def _unanswered(copy: dict[str, Any]) -> None:
    del copy["indexing"]  # a server that does not say


@pytest.mark.parametrize(
    ("change", "passes"),
    [
        (_restarted, 3),  # the copy, the catch-up and the final pass
        (_unanswered, 3),
        # equal sums after the copy: no catch-up before the block; the proof under it
        # fails, so the final pass copies everything changed since the copy began
        (_moved, 2),
    ],
)
def test_counters_that_cannot_prove_anything_run_every_pass(
    change: Any,
    passes: int,
    make_mapper: MakeMapper,
    proxy: FaultProxy,
    es_client: Elasticsearch,
    index_prefix: str,
) -> None:
    ids = _seed(make_mapper, 10)
    proxy.add_rule(_ResetCounters(change))
    result = reindex(make_mapper(ItemV2, url=proxy.url), ItemV2)
    assert result.status == "reindexed"
    assert _passes(proxy) == passes
    assert proxy.count(rf"^/{index_prefix}items-v1/_count$") == 1  # the old index counted
    assert _ids(es_client, f"{index_prefix}items").keys() == set(ids)


class _CountedBeforeTheReplica:
    """Answers the first ``_stats`` read of ``index`` as a 3-node cluster does while one
    write is between its primary and its replica: the primary already counts it
    (``index_total``, ``max_seq_no``), the replica has not applied it yet, so the global
    checkpoint lags and a refresh right after does not show it to a copy that reads the
    replica. Here the write is made after the copy (the copy cannot see it either)."""

    def __init__(self, index: str) -> None:
        self.index, self.seen = index, 0

    def before(self, exchange: Exchange) -> Reply | None:
        return None

    def after(self, exchange: Exchange, reply: Reply) -> Reply:
        if f"/{self.index}/_stats" not in exchange.path or reply.status != 200:
            return reply
        self.seen += 1
        if self.seen > 1:
            return reply
        body = reply.json()
        (copies,) = body["indices"][self.index]["shards"].values()
        (primary,) = copies
        seq_no = primary["seq_no"]
        behind = seq_no["max_seq_no"]  # what the replica (and the global checkpoint) have
        primary["indexing"]["index_total"] += 1
        seq_no["max_seq_no"] = seq_no["local_checkpoint"] = behind + 1
        seq_no["global_checkpoint"] = behind
        replica = {
            **primary,
            "routing": {**primary["routing"], "primary": False, "node": "another-node"},
            "seq_no": {**seq_no, "max_seq_no": behind, "local_checkpoint": behind},
        }
        copies.append(replica)
        return json_reply(200, body)


def test_a_write_the_primary_counts_before_the_replica_applies_it_is_copied(
    make_mapper: MakeMapper, proxy: FaultProxy, es_client: Elasticsearch, index_prefix: str
) -> None:
    ids = _seed(make_mapper, 10)
    proxy.add_rule(_CountedBeforeTheReplica(f"{index_prefix}items-v1"))
    mapper = make_mapper(ItemV2, url=proxy.url)
    repo = mapper.repository(ItemV2)
    done: list[bool] = []

    def during(report: ReindexProgress) -> None:
        if report.phase == "copy" and report.message and not done:  # the copy ended
            done.append(True)
            repo.add(ItemV2(id="late", n=99))  # the write the first read already counted

    result = reindex(mapper, ItemV2, progress=during)

    assert done and result.status == "reindexed"
    assert _passes(proxy) == 3  # the copy, the catch-up and the final pass
    assert _ids(es_client, f"{index_prefix}items").keys() == {*ids, "late"}


class _RefreshFailedOnACopy:
    """Answers the refresh of ``index`` as a cluster where one shard copy failed it (a
    200 with ``_shards.failed``): that copy may not show the copy every counted write."""

    def __init__(self, index: str) -> None:
        self.index = index

    def before(self, exchange: Exchange) -> Reply | None:
        return None

    def after(self, exchange: Exchange, reply: Reply) -> Reply:
        if exchange.path != f"/{self.index}/_refresh" or reply.status != 200:
            return reply
        body = reply.json()
        body["_shards"] = {"total": 2, "successful": 1, "failed": 1, "failures": [{}]}
        return json_reply(200, body)


def test_a_refresh_failed_on_a_copy_before_the_copy_proves_nothing(
    make_mapper: MakeMapper, proxy: FaultProxy, index_prefix: str
) -> None:
    _seed(make_mapper, 5)
    proxy.add_rule(_RefreshFailedOnACopy(f"{index_prefix}items-v1"))
    result = reindex(make_mapper(ItemV2, url=proxy.url), ItemV2)
    assert result.old_count == result.new_count == 5
    assert _passes(proxy) == 3  # the copy, the catch-up and the final pass
