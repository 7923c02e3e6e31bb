"""Reads that some shards did not answer (issue 26, item 1): a real cluster answers them with
status 200, the other shards' hits and ``_shards.failed``. ``find``, ``count``, ``exists``
and ``aggregate`` refuse such an answer by default (``PartialResultsError``, carrying it);
``partial_results=True`` takes it, marked ``partial`` with its ``shards``. A partial page is
never cached."""

from __future__ import annotations

import pytest

import esmapper as em
from esmapper.testing._real_shards import shard_of
from esmapper.testing.cluster import ClusterProxy
from tests.integration.conftest import MakeMapper


class Note(em.Document):
    class Index:
        name = "partial_notes"
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    kind: str = em.field(em.Keyword(), default="")
    n: int = em.field(em.Integer(), default=0)


IDS = [f"n{i:02d}" for i in range(30)]
LOST = {i for i in IDS if shard_of(i) == 0}  # on the shard that fails
KEPT = [i for i in IDS if i not in LOST]


@pytest.fixture
def notes(make_mapper: MakeMapper, cluster: ClusterProxy) -> em.Repository[Note]:
    seeded = make_mapper(Note, configure=True).repository(Note)
    seeded.add(
        [Note(id=i, kind="odd" if n % 2 else "even", n=n) for n, i in enumerate(IDS)],
        consistency="immediate",
    )
    return make_mapper(Note, url=cluster.url).repository(Note)


def test_a_count_some_shards_did_not_answer_is_refused(
    notes: em.Repository[Note], cluster: ClusterProxy
) -> None:
    cluster.fail_shards()
    with pytest.raises(em.PartialResultsError) as raised:
        notes.count()
    error = raised.value
    assert isinstance(error.results, em.Count) and error.results == len(KEPT)
    assert (error.shards.total, error.shards.successful, error.shards.failed) == (3, 2, 1)
    [failure] = error.shards.failures
    assert failure.shard == 0 and failure.error_type == "node_disconnected_exception"
    assert error.error_type == "node_disconnected_exception"
    assert "1 of 3 shard(s) failed" in str(error) and "partial_results=True" in str(error)
    assert notes.count() == len(IDS)  # every shard answers again


def test_a_count_with_partial_results_is_marked(
    notes: em.Repository[Note], cluster: ClusterProxy
) -> None:
    cluster.fail_shards()
    count = notes.count(partial_results=True)
    assert count == len(KEPT) and count.partial
    assert count.shards.failed == 1
    complete = notes.count(partial_results=True)
    assert complete == len(IDS) and not complete.partial and complete.shards.failed == 0


def test_the_mapper_default_takes_partial_answers(
    make_mapper: MakeMapper, notes: em.Repository[Note], cluster: ClusterProxy
) -> None:
    lenient = make_mapper(Note, url=cluster.url, partial_results=True).repository(Note)
    cluster.fail_shards(times=2)
    assert lenient.count().partial
    with pytest.raises(em.PartialResultsError):
        lenient.count(partial_results=False)  # the call's own choice wins


def test_find_refuses_a_partial_page_and_carries_it(
    notes: em.Repository[Note], cluster: ClusterProxy
) -> None:
    cluster.fail_shards()
    with pytest.raises(em.PartialResultsError) as raised:
        notes.find(sort="n", limit=100)
    page = raised.value.results
    assert isinstance(page, em.FindResults) and page.partial
    assert [d.id for d in page] == KEPT and page.total == len(KEPT)


def test_find_with_partial_results_returns_the_marked_page(
    notes: em.Repository[Note], cluster: ClusterProxy
) -> None:
    cluster.fail_shards()
    page = notes.find(sort="n", limit=100, partial_results=True)
    assert page.partial and page.shards is not None and page.shards.failed == 1
    assert [d.id for d in page] == KEPT
    whole = notes.find(sort="n", limit=100)
    assert not whole.partial and len(whole) == len(IDS)


def test_exists_trusts_a_match_but_not_a_miss(
    notes: em.Repository[Note], cluster: ClusterProxy
) -> None:
    lost_one, kept_one = sorted(LOST)[0], KEPT[0]
    cluster.fail_shards(times=3)
    assert notes.exists(filter=f"id:{kept_one}")  # found on a shard that answered
    with pytest.raises(em.PartialResultsError) as raised:
        notes.exists(filter=f"id:{lost_one}")  # on the failed shard: unknown
    assert raised.value.results is False
    assert notes.exists(filter=f"id:{lost_one}", partial_results=True) is False
    assert notes.exists(filter=f"id:{lost_one}")


def test_aggregations_some_shards_did_not_answer(
    notes: em.Repository[Note], cluster: ClusterProxy
) -> None:
    odd = sum(1 for n, i in enumerate(IDS) if n % 2 and i not in LOST)
    cluster.fail_shards(times=2)
    with pytest.raises(em.PartialResultsError) as raised:
        notes.aggregate(aggregations="terms:kind")
    assert raised.value.results.partial
    aggs = notes.aggregate(aggregations="terms:kind", partial_results=True)
    assert aggs.partial and aggs.shards is not None and aggs.shards.failed == 1
    buckets = aggs.terms("terms_kind")
    assert buckets is not None and {b.key: b.total for b in buckets.buckets}["odd"] == odd
    assert not notes.aggregate(aggregations="terms:kind").partial


def test_a_partial_page_is_not_cached(notes: em.Repository[Note], cluster: ClusterProxy) -> None:
    cluster.fail_shards()
    partial = notes.find(sort="n", limit=100, cache_key="all-notes", partial_results=True)
    assert partial.partial
    searches = cluster.count(r"/_search$")
    page = notes.find(sort="n", limit=100, cache_key="all-notes")
    assert cluster.count(r"/_search$") == searches + 1  # not served from the cache
    assert not page.partial and len(page) == len(IDS)
    again = notes.find(sort="n", limit=100, cache_key="all-notes")
    assert cluster.count(r"/_search$") == searches + 1 and len(again) == len(IDS)  # cached


def test_a_partial_page_of_a_snapshot_ends_the_paging(
    notes: em.Repository[Note], cluster: ClusterProxy
) -> None:
    page = notes.find(sort="n", limit=10, snapshot=True)
    assert len(page) == 10 and page.pit_id is not None
    cluster.fail_shards()
    closes = cluster.count(r"^/_pit$", method="DELETE")
    with pytest.raises(em.PartialResultsError):
        page.next_page()
    assert cluster.count(r"^/_pit$", method="DELETE") == closes + 1  # the snapshot is closed
    assert page.pit_id is None


def test_session_reads_follow_the_same_rule(
    notes: em.Repository[Note], cluster: ClusterProxy
) -> None:
    cluster.fail_shards(times=2)
    with notes.mapper.session() as session:
        with pytest.raises(em.PartialResultsError):
            session.find(Note, limit=100)
        page = session.find(Note, limit=100, partial_results=True)
        assert page.partial and sorted(d.id for d in page) == KEPT


def test_a_timed_out_shard_is_a_partial_answer(
    notes: em.Repository[Note], cluster: ClusterProxy
) -> None:
    cluster.fail_shards(timed_out=True)
    with pytest.raises(em.PartialResultsError) as raised:
        notes.find(limit=100)
    assert raised.value.shards.timed_out and raised.value.shards.failed == 0
    assert "timed out" in str(raised.value)


def test_bad_partial_results_values_are_refused_before_sending(
    notes: em.Repository[Note], cluster: ClusterProxy
) -> None:
    with pytest.raises(em.QueryValidationError, match="partial_results='yes'"):
        notes.count(partial_results="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not with an id"):
        notes.exists("n01", partial_results=True)
    assert cluster.count(r"/_search$") == 0
