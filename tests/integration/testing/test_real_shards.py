"""ClusterProxy.fail_shards: searches, scroll pages and counts answered in part as a real
cluster answers them (status 200, the failed shard's documents missing, ``_shards.failed``),
and refused when they ask ``allow_partial_search_results=false``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from elasticsearch import ApiError, Elasticsearch

from esmapper.testing._real_shards import shard_of
from esmapper.testing.cluster import ClusterProxy

IDS = [f"d{i}" for i in range(30)]
#: the documents on shard 0 of 3: those a failed shard 0 takes away
LOST = {i for i in IDS if shard_of(i) == 0}


@pytest.fixture
def index(es_client: Elasticsearch, index_prefix: str) -> str:
    name = f"{index_prefix}shards"
    mappings = {"properties": {"n": {"type": "integer"}, "kind": {"type": "keyword"}}}
    es_client.indices.create(index=name, mappings=mappings)
    operations: list[dict[str, object]] = []
    for n, doc_id in enumerate(IDS):
        kind = "odd" if n % 2 else "even"
        operations += [{"index": {"_index": name, "_id": doc_id}}, {"n": n, "kind": kind}]
    es_client.bulk(operations=operations, refresh=True)
    return name


@pytest.fixture
def through(cluster: ClusterProxy) -> Iterator[Elasticsearch]:
    """A client through the cluster proxy that sends every request once (a refusal with
    429 is not resent)."""
    client = Elasticsearch(cluster.url, max_retries=0, retry_on_status=())
    try:
        yield client
    finally:
        client.close()


def ids_of(answer: dict[str, object]) -> set[str]:
    hits = answer["hits"]["hits"]  # type: ignore[index]
    return {str(hit["_id"]) for hit in hits}


def test_the_ids_split_over_the_shards() -> None:
    assert 0 < len(LOST) < len(IDS)  # the tests below lose some documents, not all


def test_a_search_misses_the_failed_shard_and_says_so(
    cluster: ClusterProxy, through: Elasticsearch, index: str
) -> None:
    cluster.fail_shards()
    answer = through.search(index=index, size=100, track_total_hits=True).body
    assert ids_of(answer) == set(IDS) - LOST
    assert answer["hits"]["total"]["value"] == len(IDS) - len(LOST)
    assert answer["timed_out"] is False
    shards = answer["_shards"]
    assert (shards["total"], shards["successful"], shards["failed"]) == (3, 2, 1)
    [failure] = shards["failures"]
    assert (failure["shard"], failure["index"]) == (0, index)
    assert failure["node"] and failure["reason"]["type"] == "node_disconnected_exception"
    # once: the next search is answered by every shard
    again = through.search(index=index, size=100).body
    assert ids_of(again) == set(IDS) and "failures" not in again["_shards"]
    assert cluster.pending_shard_failures == 0
    assert cluster.partial_answers == [f"/{index}/_search"]


def test_a_page_is_filled_from_the_other_shards(
    cluster: ClusterProxy, through: Elasticsearch, index: str
) -> None:
    cluster.fail_shards()
    answer = through.search(index=index, size=5, sort=[{"n": "asc"}]).body
    kept = [i for i in IDS if i not in LOST]
    assert [hit["_id"] for hit in answer["hits"]["hits"]] == kept[:5]


def test_aggregations_and_counts_miss_the_failed_shard(
    cluster: ClusterProxy, through: Elasticsearch, index: str
) -> None:
    cluster.fail_shards(times=2)
    answer = through.search(index=index, size=0, aggs={"kinds": {"terms": {"field": "kind"}}})
    buckets = {b["key"]: b["doc_count"] for b in answer["aggregations"]["kinds"]["buckets"]}
    odd = [i for n, i in enumerate(IDS) if n % 2 == 1 and i not in LOST]
    assert buckets["odd"] == len(odd)
    assert answer["_shards"]["failed"] == 1
    counted = through.count(index=index).body
    assert counted["count"] == len(IDS) - len(LOST)
    assert counted["_shards"]["failed"] == 1
    assert counted["_shards"]["failures"][0]["index"] == index


def test_allow_partial_search_results_false_is_refused(
    cluster: ClusterProxy, through: Elasticsearch, index: str
) -> None:
    cluster.fail_shards()
    with pytest.raises(ApiError) as raised:
        through.search(index=index, allow_partial_search_results=False)
    assert raised.value.meta.status == 500
    error = raised.value.body["error"]
    assert (error["type"], error["reason"]) == (
        "search_phase_execution_exception",
        "Partial shards failure",
    )
    assert error["failed_shards"][0]["index"] == index
    assert error["failed_shards"][0]["reason"]["type"] == "node_disconnected_exception"


def test_refuse_false_answers_in_part_all_the_same(
    cluster: ClusterProxy, through: Elasticsearch, index: str
) -> None:
    cluster.fail_shards(refuse=False)
    answer = through.search(index=index, size=100, allow_partial_search_results=False).body
    assert ids_of(answer) == set(IDS) - LOST and answer["_shards"]["failed"] == 1


def test_a_rejected_shard_is_refused_with_429(
    cluster: ClusterProxy, through: Elasticsearch, index: str
) -> None:
    cluster.fail_shards(error_type="es_rejected_execution_exception", reason="queue full")
    with pytest.raises(ApiError) as raised:
        through.search(index=index, allow_partial_search_results=False)
    assert raised.value.meta.status == 429
    assert raised.value.body["error"]["failed_shards"][0]["reason"] == {
        "type": "es_rejected_execution_exception",
        "reason": "queue full",
    }


def test_a_timed_out_shard_counts_as_successful(
    cluster: ClusterProxy, through: Elasticsearch, index: str
) -> None:
    cluster.fail_shards(timed_out=True, times=2)
    answer = through.search(index=index, size=100).body
    assert answer["timed_out"] is True
    assert answer["_shards"] == {"total": 3, "successful": 3, "skipped": 0, "failed": 0}
    assert ids_of(answer) == set(IDS) - LOST
    with pytest.raises(ApiError) as raised:
        through.search(index=index, allow_partial_search_results=False)
    assert raised.value.meta.status == 429
    assert raised.value.body["error"]["failed_shards"][0]["reason"]["type"] == (
        "search_timeout_exception"
    )


def test_a_scroll_page_drops_the_failed_shard_hits(
    cluster: ClusterProxy, through: Elasticsearch, index: str
) -> None:
    first = through.search(index=index, scroll="1m", size=10, sort=["_doc"]).body
    cluster.fail_shards(path=r"/_search/scroll$")
    second = through.scroll(scroll_id=first["_scroll_id"], scroll="1m").body
    assert second["_shards"]["failed"] == 1
    assert second["hits"]["hits"] and not ids_of(second) & LOST
    third = through.scroll(scroll_id=second["_scroll_id"], scroll="1m").body
    assert third["_shards"]["failed"] == 0
    seen = ids_of(first) | ids_of(second) | ids_of(third)
    assert seen < set(IDS)  # the second page's lost hits are gone for good
    through.clear_scroll(scroll_id=third["_scroll_id"])


def test_a_point_in_time_search_misses_the_failed_shard(
    cluster: ClusterProxy, through: Elasticsearch, index: str
) -> None:
    pit = through.open_point_in_time(index=index, keep_alive="1m")["id"]
    try:
        cluster.fail_shards()
        answer = through.search(pit={"id": pit, "keep_alive": "1m"}, size=100).body
        assert ids_of(answer) == set(IDS) - LOST
        assert answer["_shards"]["failures"][0]["index"] == index
    finally:
        through.close_point_in_time(id=pit)


def test_only_matching_requests_are_failed_after_skip(
    cluster: ClusterProxy, through: Elasticsearch, index: str
) -> None:
    cluster.fail_shards(path=r"/_count$", skip=1)
    assert through.search(index=index, size=100)["_shards"]["failed"] == 0  # not a count
    assert through.count(index=index)["count"] == len(IDS)  # skipped
    assert through.count(index=index)["count"] == len(IDS) - len(LOST)
    assert through.count(index=index)["count"] == len(IDS)  # used up


def test_a_missing_index_does_not_use_up_the_failure(
    cluster: ClusterProxy, through: Elasticsearch, index: str, index_prefix: str
) -> None:
    cluster.fail_shards()
    with pytest.raises(ApiError) as raised:
        through.search(index=f"{index_prefix}nothing-here")
    assert raised.value.meta.status == 404
    assert cluster.pending_shard_failures == 1
    assert through.search(index=index)["_shards"]["failed"] == 1


def test_bad_scripts_are_refused(cluster: ClusterProxy) -> None:
    with pytest.raises(ValueError, match="times must be at least 1"):
        cluster.fail_shards(times=0)
    with pytest.raises(ValueError, match="shard=3 of shards=3"):
        cluster.fail_shards(shard=3)
