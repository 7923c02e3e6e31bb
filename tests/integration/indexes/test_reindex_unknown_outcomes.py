"""Reindex requests whose answer is lost: the state is read back, nothing is resent blindly,
and the index the alias points at is never deleted. Deletes made during a reindex never
come back, whatever the counts."""

from __future__ import annotations

from typing import Any

import pytest
from elasticsearch import Elasticsearch

from esmapper.indexes import ReindexError, ReindexProgress, find_leftovers, reindex
from esmapper.testing.faults import FaultProxy
from tests.integration.conftest import MakeMapper

from .models import ItemV1, ItemV2, PlainV1, PlainV2, PlainV2Dropping

# How a request's answer is lost: dropped before the server got the request, dropped after
# the server applied it, or cut short after the server applied it.
LOST_AFTER = ["drop_after", "truncate"]
LOST = ["drop_before", *LOST_AFTER]


def lose(
    proxy: FaultProxy, how: str, *, path: str, method: str | None = None, skip: int = 0
) -> None:
    """Script the loss of the answer to the next request matching ``path``/``method``."""
    if how == "truncate":
        proxy.truncate_response(path=path, method=method, skip=skip)
    else:
        after = how == "drop_after"
        proxy.drop_connection(path=path, method=method, skip=skip, after_forwarding=after)


def ids_of(es: Elasticsearch, index: str) -> set[str]:
    es.indices.refresh(index=index)
    hits = es.search(index=index, size=1000, source=False)["hits"]["hits"]
    return {h["_id"] for h in hits}


def aliased(es: Elasticsearch, alias: str) -> list[str]:
    return sorted(es.options(ignore_status=404).indices.get_alias(name=alias).body)


def seed(make_mapper: MakeMapper, model: type[Any], count: int) -> set[str]:
    mapper = make_mapper(model)
    mapper.configure_indexes()
    return {d.id for d in mapper.repository(model).add([model(n=i) for i in range(count)])}


@pytest.mark.parametrize("how", LOST_AFTER)
def test_a_swap_applied_but_unanswered_is_a_success(
    how: str,
    make_mapper: MakeMapper,
    proxy: FaultProxy,
    es_client: Elasticsearch,
    index_prefix: str,
) -> None:
    ids = seed(make_mapper, ItemV1, 20)
    alias, v1, v2 = f"{index_prefix}items", f"{index_prefix}items-v1", f"{index_prefix}items-v2"
    lose(proxy, how, path=r"^/_aliases$", method="POST", skip=1)  # 1: the run's claim

    result = reindex(make_mapper(ItemV2, url=proxy.url), ItemV2)

    assert (result.status, result.swapped, result.old_deleted) == ("reindexed", True, True)
    assert aliased(es_client, alias) == [v2]
    assert ids_of(es_client, v2) == ids
    assert not es_client.indices.exists(index=v1)
    assert proxy.count(r"^/_aliases$", method="POST") == 2  # the claim, the swap never resent


def test_a_swap_lost_before_the_server_rolls_back(
    make_mapper: MakeMapper, proxy: FaultProxy, es_client: Elasticsearch, index_prefix: str
) -> None:
    ids = seed(make_mapper, ItemV1, 20)
    alias, v1, v2 = f"{index_prefix}items", f"{index_prefix}items-v1", f"{index_prefix}items-v2"
    lose(proxy, "drop_before", path=r"^/_aliases$", method="POST", skip=1)
    mapper = make_mapper(ItemV2, url=proxy.url)

    with pytest.raises(ReindexError, match="did not happen"):
        reindex(mapper, ItemV2)

    assert aliased(es_client, alias) == [v1]
    assert ids_of(es_client, v1) == ids
    assert not es_client.indices.exists(index=v2)
    repo = mapper.repository(ItemV2)  # not write-blocked any more
    repo.add(ItemV2(n=99), consistency="immediate")
    assert repo.count() == 21
    # the claim, the swap (never resent), the rollback's release of its marker and its
    # remove_index of the new index (conditioned on the alias still naming v1)
    assert proxy.count(r"^/_aliases$", method="POST") == 4


def test_a_lost_swap_with_the_alias_on_neither_index_deletes_nothing(
    make_mapper: MakeMapper, proxy: FaultProxy, es_client: Elasticsearch, index_prefix: str
) -> None:
    ids = seed(make_mapper, ItemV1, 20)
    alias, v1, v2 = f"{index_prefix}items", f"{index_prefix}items-v1", f"{index_prefix}items-v2"
    lose(proxy, "drop_before", path=r"^/_aliases$", method="POST", skip=1)

    def someone_removes_the_alias(report: ReindexProgress) -> None:
        if report.phase == "swap" and report.done == 0:
            es_client.indices.delete_alias(index=v1, name=alias)

    with pytest.raises(ReindexError, match="nothing was deleted"):
        reindex(make_mapper(ItemV2, url=proxy.url), ItemV2, progress=someone_removes_the_alias)

    assert ids_of(es_client, v1) == ids
    assert ids_of(es_client, v2) == ids


@pytest.mark.parametrize("how", LOST)
def test_a_lost_create_of_the_new_index_is_read_back(
    how: str,
    make_mapper: MakeMapper,
    proxy: FaultProxy,
    es_client: Elasticsearch,
    index_prefix: str,
) -> None:
    ids = seed(make_mapper, ItemV1, 20)
    alias, v2 = f"{index_prefix}items", f"{index_prefix}items-v2"
    lose(proxy, how, path=rf"^/{v2}$", method="PUT")
    mapper = make_mapper(ItemV2, url=proxy.url)

    result = reindex(mapper, ItemV2)
    assert result.status == "reindexed"
    assert aliased(es_client, alias) == [v2]
    assert ids_of(es_client, v2) == ids
    # resent (deliberately) only when reading back showed it was not applied
    assert proxy.count(rf"^/{v2}$", method="PUT") == (2 if how == "drop_before" else 1)


@pytest.mark.parametrize("how", LOST)
def test_lost_answers_to_the_write_block_the_marker_and_a_copy_pass_are_read_back_or_rerun(
    how: str,
    make_mapper: MakeMapper,
    proxy: FaultProxy,
    es_client: Elasticsearch,
    index_prefix: str,
) -> None:
    ids = seed(make_mapper, ItemV1, 20)
    v1, v2 = f"{index_prefix}items-v1", f"{index_prefix}items-v2"
    lose(proxy, how, path=r"/_block/write$", method="PUT")
    lose(proxy, how, path=rf"^/{v1}/_mapping$", method="PUT")  # the write block's marker
    # the first _reindex is the copy pass (the probe for the tasks API is read-only)
    lose(proxy, how, path=r"^/_reindex$", method="POST")

    result = reindex(make_mapper(ItemV2, url=proxy.url), ItemV2)

    assert (result.status, result.swapped) == ("reindexed", True)
    assert ids_of(es_client, v2) == ids
    assert proxy.pending_faults == 0
    assert proxy.count(r"/_block/write$", method="PUT") == (2 if how == "drop_before" else 1)
    # the block's marker (resent only when not applied), then the leftover marker
    assert proxy.count(rf"^/{v1}/_mapping$", method="PUT") == (3 if how == "drop_before" else 2)
    assert not es_client.indices.exists(index=v1)
    # the rerun pass's figures miss what the lost one wrote: the new index was counted
    assert proxy.count(rf"^/{v2}/_count$") == 1
    assert result.new_count == result.old_count == 20


@pytest.mark.parametrize("how", LOST)
def test_a_lost_bulk_of_deletes_is_settled_by_reading_the_ids_again(
    how: str,
    make_mapper: MakeMapper,
    proxy: FaultProxy,
    es_client: Elasticsearch,
    index_prefix: str,
) -> None:
    ids = sorted(seed(make_mapper, PlainV1, 30))
    v1, v2 = f"{index_prefix}plain_items-v1", f"{index_prefix}plain_items-v2"
    lose(proxy, how, path=r"^/_bulk$")

    def delete_after_the_copy(report: ReindexProgress) -> None:
        if report.phase == "copy" and report.message:
            for id_ in ids[:5]:
                es_client.delete(index=v1, id=id_, refresh=True)

    result = reindex(make_mapper(PlainV2, url=proxy.url), PlainV2, progress=delete_after_the_copy)

    assert (result.status, result.removed, result.new_count) == ("reindexed", 5, 25)
    assert ids_of(es_client, v2) == set(ids[5:])
    assert proxy.pending_faults == 0


def test_a_delete_during_the_copy_is_not_resurrected_when_a_script_drops_documents(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    seed(make_mapper, PlainV1, 30)
    v1, v2 = f"{index_prefix}plain_items-v1", f"{index_prefix}plain_items-v2"
    es_client.indices.refresh(index=v1)
    by_n = {
        h["_source"]["n"]: h["_id"] for h in es_client.search(index=v1, size=100)["hits"]["hits"]
    }
    assert len(by_n) == 30
    deleted = by_n[5]  # a document the script keeps

    def hard_delete_during_the_copy(report: ReindexProgress) -> None:
        if report.phase == "copy" and report.message:  # copied, not yet write-blocked
            es_client.delete(index=v1, id=deleted, refresh=True)

    result = reindex(
        make_mapper(PlainV2Dropping), PlainV2Dropping, progress=hard_delete_during_the_copy
    )

    # the script dropped n = 0, 10, 20: the new index has fewer documents than the old one
    assert (result.status, result.old_count, result.new_count) == ("reindexed", 29, 26)
    assert result.removed == 1
    resurrected = ids_of(es_client, v2) - ids_of(es_client, v1)
    assert len(resurrected) == 0
    assert deleted not in ids_of(es_client, v2)
    assert ids_of(es_client, v2) == {by_n[n] for n in range(30) if n % 10 and n != 5}
    # kept for inspection, and marked so: migrate reports it but never deletes it
    mapper = make_mapper(PlainV2Dropping)
    (kept,) = find_leftovers(es_client, mapper.spec(PlainV2Dropping))
    assert (kept.index, kept.docs, kept.deletable) == (v1, 29, False)
    assert kept.keep == f"{v2} has 26 documents, fewer than its 29"
