"""The ClusterProxy's point-in-time rules: a missing index answers 404 unless
``ignore_unavailable=true`` (as on Elasticsearch), and an alias of several indexes covers
all of them (the local server opens it on the first one)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from elasticsearch import Elasticsearch, NotFoundError

from esmapper.testing.cluster import ClusterProxy


@pytest.fixture
def through(cluster: ClusterProxy) -> Iterator[Elasticsearch]:
    client = Elasticsearch(cluster.url, request_timeout=30)
    yield client
    client.close()


@pytest.fixture
def days(es_client: Elasticsearch, index_prefix: str) -> list[str]:
    """Three indexes ``<prefix>day-<n>`` with one document each, all under the alias
    ``<prefix>days``."""
    names = [f"{index_prefix}day-{n}" for n in range(3)]
    for n, name in enumerate(names):
        es_client.indices.create(index=name, aliases={f"{index_prefix}days": {}})
        es_client.index(index=name, id=str(n), document={"n": n}, refresh=True)
    return names


def _ids_in(client: Elasticsearch, pit_id: str) -> list[str]:
    page = client.search(pit={"id": pit_id, "keep_alive": "1m"}, sort=[{"n": "asc"}])
    client.close_point_in_time(id=pit_id)
    return [hit["_id"] for hit in page["hits"]["hits"]]


def test_a_missing_index_answers_404_without_ignore_unavailable(
    through: Elasticsearch, days: list[str], index_prefix: str
) -> None:
    missing = f"{index_prefix}day-9"
    with pytest.raises(NotFoundError) as raised:
        through.open_point_in_time(index=[days[0], missing, days[1]], keep_alive="1m")
    assert raised.value.error == "index_not_found_exception"
    error = raised.value.body["error"]
    assert error["reason"] == f"no such index [{missing}]"
    assert error["index"] == missing


def test_ignore_unavailable_skips_the_missing_index(
    through: Elasticsearch, days: list[str], index_prefix: str
) -> None:
    pit = through.open_point_in_time(
        index=[days[0], f"{index_prefix}day-9", days[2]], keep_alive="1m", ignore_unavailable=True
    )
    assert _ids_in(through, pit["id"]) == ["0", "2"]


def test_wildcards_and_existing_names_open_as_before(
    through: Elasticsearch, days: list[str], index_prefix: str
) -> None:
    pit = through.open_point_in_time(index=f"{index_prefix}day-*", keep_alive="1m")
    assert _ids_in(through, pit["id"]) == ["0", "1", "2"]
    pit = through.open_point_in_time(index=days[1], keep_alive="1m")
    assert _ids_in(through, pit["id"]) == ["1"]


def test_an_alias_of_several_indexes_covers_all_of_them(
    through: Elasticsearch, es_client: Elasticsearch, days: list[str], index_prefix: str
) -> None:
    alias = f"{index_prefix}days"
    # the local server alone: its first index only
    direct = es_client.open_point_in_time(index=alias, keep_alive="1m")
    assert len(_ids_in(es_client, direct["id"])) == 1
    # as on Elasticsearch: every index of the alias
    pit = through.open_point_in_time(index=alias, keep_alive="1m")
    assert _ids_in(through, pit["id"]) == ["0", "1", "2"]
    updated = through.update_by_query(
        index=alias, script={"source": "ctx._source.n += 10"}, refresh=True
    )
    assert updated["updated"] == 3
    assert (
        through.delete_by_query(index=alias, query={"match_all": {}}, refresh=True)["deleted"] == 3
    )
    assert es_client.count(index=alias)["count"] == 0


def test_the_rules_can_be_switched_off(es_url: str, days: list[str], index_prefix: str) -> None:
    with ClusterProxy(
        es_url, lifetime=60, missing_index_pit=False, aliases_cover_every_index=False
    ) as kind:
        client = Elasticsearch(kind.url)
        pit = client.open_point_in_time(index=[days[0], f"{index_prefix}day-9"], keep_alive="1m")
        assert _ids_in(client, pit["id"]) == ["0"]  # the local server skips the missing one
        client.close()
