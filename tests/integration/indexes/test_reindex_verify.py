"""The verify phase of a version bump: ids are compared only when the counts cannot prove
that the new index holds nothing the old one no longer has."""

from __future__ import annotations

from elasticsearch import Elasticsearch

from esmapper.indexes import ReindexProgress, reindex
from esmapper.testing.faults import FaultProxy
from tests.integration.conftest import MakeMapper

from .models import ItemV1, ItemV2, ItemV2Scripted
from .writes import after_the_copy


def id_searches(proxy: FaultProxy) -> int:
    """The id scrolls started: ``POST /<index>/_search`` (not the searches comparing the
    ``updated_utc`` of changed documents, which ask for that field alone)."""
    return sum(
        1
        for r in proxy.requests
        if r.path.endswith("/_search") and "_source_includes" not in r.query
    )


def _seed(make_mapper: MakeMapper, count: int) -> list[str]:
    mapper = make_mapper(ItemV1)
    mapper.configure_indexes()
    return [d.id for d in mapper.repository(ItemV1).add([ItemV1(n=i) for i in range(count)])]


def test_dated_model_with_adds_and_saves_during_the_run_skips_the_id_comparison(
    make_mapper: MakeMapper, proxy: FaultProxy, es_client: Elasticsearch, index_prefix: str
) -> None:
    ids = _seed(make_mapper, 30)
    mapper = make_mapper(ItemV2, url=proxy.url)
    repo = mapper.repository(ItemV2)

    def during(report: ReindexProgress) -> None:
        if report.phase == "copy" and report.message:  # after the copy, before the block
            doc = repo.get(ids[3])
            assert doc is not None
            doc.n = 1003
            repo.save(doc)
            repo.add(ItemV2(id="late", n=99))

    result = reindex(mapper, ItemV2, progress=during)
    assert (result.status, result.removed, result.old_count, result.new_count) == (
        "reindexed",
        0,
        31,
        31,
    )
    assert id_searches(proxy) == 0  # equal counts proved there was nothing to delete
    v2 = f"{index_prefix}items-v2"
    assert es_client.get(index=v2, id="late")["_source"]["n"] == 99
    assert es_client.get(index=v2, id=ids[3])["_source"]["n"] == 1003


def test_dated_model_with_deletes_during_the_run_compares_ids_and_drops_them(
    make_mapper: MakeMapper, proxy: FaultProxy, es_client: Elasticsearch, index_prefix: str
) -> None:
    ids = _seed(make_mapper, 30)
    mapper = make_mapper(ItemV2, url=proxy.url)
    repo = mapper.repository(ItemV2)

    def during(report: ReindexProgress) -> None:
        if report.phase == "copy" and report.message:
            repo.remove(ids[:4])
            repo.add(ItemV2(id="late", n=99))

    result = reindex(mapper, ItemV2, progress=during)
    assert (result.status, result.removed, result.old_count, result.new_count) == (
        "reindexed",
        4,
        27,
        27,
    )
    v2 = f"{index_prefix}items-v2"
    assert id_searches(proxy) >= 2  # the id scroll of both indexes
    for id in ids[:4]:
        assert not es_client.options(ignore_status=404).get(index=v2, id=id)["found"]
    assert es_client.get(index=v2, id="late")["_source"]["n"] == 99


def test_a_scripted_bump_with_writes_during_the_run_compares_ids(
    make_mapper: MakeMapper, proxy: FaultProxy, es_client: Elasticsearch, index_prefix: str
) -> None:
    _seed(make_mapper, 12)
    progress = after_the_copy(es_client, f"{index_prefix}items")
    result = reindex(make_mapper(ItemV2Scripted, url=proxy.url), ItemV2Scripted, progress=progress)
    assert (result.status, result.removed, result.new_count) == ("reindexed", 0, 12)
    assert id_searches(proxy) >= 2  # the id scroll of both indexes
