"""The scans that decide writes (``remove_all``, ``patch_all`` and ``batch_process``) never
act on a page some shards did not answer (issue 26, item 1): every page asks for a complete
answer (``allow_partial_search_results=false``), is checked anyway, and a shard failure
raises ``PartialResultsError``; the documents of the failed shard are neither skipped nor
taken for gone."""

from __future__ import annotations

import pytest

import esmapper as em
from esmapper.testing._real_shards import shard_of
from esmapper.testing.cluster import ClusterProxy
from tests.integration.conftest import MakeMapper


class Card(em.Document):
    class Index:
        name = "partial_cards"
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    kind: str = em.field(em.Keyword(), default="")
    n: int = em.field(em.Integer(), default=0)


IDS = [f"c{i:02d}" for i in range(30)]
LOST = {i for i in IDS if shard_of(i) == 0}


@pytest.fixture
def seeded(make_mapper: MakeMapper) -> em.Repository[Card]:
    repo = make_mapper(Card, configure=True).repository(Card)
    repo.add([Card(id=i, kind="new", n=n) for n, i in enumerate(IDS)], consistency="immediate")
    return repo


@pytest.fixture
def cards(
    make_mapper: MakeMapper, cluster: ClusterProxy, seeded: em.Repository[Card]
) -> em.Repository[Card]:
    return make_mapper(Card, url=cluster.url).repository(Card)


def page_searches(cluster: ClusterProxy) -> list[str]:
    """The query strings of the scan's page searches (``POST /_search`` in a point in
    time)."""
    return [r.query for r in cluster.requests if r.path == "/_search"]


def test_remove_all_over_a_partial_page_removes_nothing(
    cards: em.Repository[Card], seeded: em.Repository[Card], cluster: ClusterProxy
) -> None:
    cluster.fail_shards(times=3)
    with pytest.raises(em.PartialResultsError) as raised:
        cards.remove_all(cache=True)  # the per-document path: a scan, then deletes
    assert raised.value.shards.failed == 1
    assert seeded.count(consistency="immediate") == len(IDS)
    assert cluster.count(r"/_bulk$") == 0
    assert cluster.count(r"^/_pit$", method="DELETE") == 1  # the scan's point in time


def test_patch_all_over_a_partial_page_patches_nothing(
    cards: em.Repository[Card], seeded: em.Repository[Card], cluster: ClusterProxy
) -> None:
    cluster.fail_shards(times=3)
    with pytest.raises(em.PartialResultsError):
        cards.patch_all(None, em.PartialPatch({"kind": "patched"}))
    assert seeded.count("kind:patched", consistency="immediate") == 0
    assert cluster.count(r"/_bulk$") == 0


def test_batch_process_stops_at_a_partial_page(
    cards: em.Repository[Card], cluster: ClusterProxy
) -> None:
    given: list[str] = []
    cluster.fail_shards(path=r"^/_search$", skip=1, times=3)  # the second page fails
    with pytest.raises(em.PartialResultsError):
        cards.batch_process(None, lambda docs: given.extend(d.id for d in docs), batch_size=10)
    assert given == IDS[:10]  # the first page, whole; nothing of the partial one
    assert cluster.count(r"^/_pit$", method="DELETE") == 1


def test_every_page_of_a_scan_asks_for_a_complete_answer(
    cards: em.Repository[Card], cluster: ClusterProxy
) -> None:
    assert cards.batch_process(None, lambda docs: None, batch_size=10) == len(IDS)
    queries = page_searches(cluster)
    assert len(queries) >= 3
    assert all("allow_partial_search_results=false" in q for q in queries)


def test_a_partial_page_the_server_answers_anyway_is_refused(
    cards: em.Repository[Card], seeded: em.Repository[Card], cluster: ClusterProxy
) -> None:
    # a server that does not honour allow_partial_search_results=false in some case
    cluster.fail_shards(refuse=False, timed_out=True)
    with pytest.raises(em.PartialResultsError) as raised:
        cards.remove_all(cache=True)
    assert raised.value.shards.timed_out
    assert seeded.count(consistency="immediate") == len(IDS)
    assert cluster.count(r"^/_pit$", method="DELETE") == 1
