"""Writes to one document are applied in the order they were given, also when an earlier
one is answered 429/503 and retried (issue 25, item 6): the result equals the one without
the fault. FaultProxy fails a chosen item of the first ``_bulk`` request; the writer
retries it."""

from __future__ import annotations

from typing import Any

import pytest
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper.bulk import BulkAction, BulkWriter
from esmapper.testing.faults import FaultProxy
from tests.integration.conftest import MakeMapper


class Memo(em.Document):
    class Index:
        name = "memos"

    text: str = em.field(em.Keyword(), default="")


class Ticket(em.Document, em.Versioned):
    class Index:
        name = "tickets"

    text: str = em.field(em.Keyword(), default="")


def _item(op: str, id: str) -> Any:
    """A FaultProxy item selector: the items of ``op`` on ``id``."""

    def select(position: int, meta: dict[str, Any]) -> bool:
        return op in meta and meta[op].get("_id") == id

    return select


def _mapper(make_mapper: MakeMapper, proxy: FaultProxy, *models: type, **opts: Any) -> em.Mapper:
    return make_mapper(*models, url=proxy.url, configure=True, sleep=lambda _s: None, **opts)


@pytest.mark.parametrize("status", [429, 503])
def test_a_retried_save_is_not_applied_after_a_later_save_of_the_same_id(
    make_mapper: MakeMapper, proxy: FaultProxy, es_client: Elasticsearch, status: int
) -> None:
    mapper = _mapper(make_mapper, proxy, Memo)
    repo = mapper.repository(Memo)
    proxy.fail_bulk_items(lambda pos, meta: pos == 0, status=status)
    repo.save([Memo(id="x", text="first"), Memo(id="x", text="second")])
    assert proxy.pending_faults == 0
    stored = es_client.get(index=repo.spec.alias, id="x")
    assert stored["_source"]["text"] == "second"


def test_a_session_replace_whose_delete_is_retried_stores_the_new_document(
    make_mapper: MakeMapper, proxy: FaultProxy, es_client: Elasticsearch
) -> None:
    mapper = _mapper(make_mapper, proxy, Ticket)
    repo = mapper.repository(Ticket)
    repo.add(Ticket(id="t", text="old"), consistency="immediate")
    proxy.fail_bulk_items(_item("delete", "t"), status=429)
    with mapper.session() as s:
        old = s.get(Ticket, "t")
        assert old is not None
        s.remove(old)
        new = s.add(Ticket(id="t", text="new"))
    assert proxy.pending_faults == 0
    stored = es_client.get(index=repo.spec.alias, id="t")
    assert stored["_source"]["text"] == "new"
    assert new.version == f"{stored['_primary_term']}:{stored['_seq_no']}"


def test_with_several_bulk_threads_a_retried_write_keeps_its_place_before_later_ones(
    make_mapper: MakeMapper, proxy: FaultProxy, es_client: Elasticsearch
) -> None:
    mapper = _mapper(make_mapper, proxy, Memo, bulk_concurrency=3, bulk_chunk_size=4)
    repo = mapper.repository(Memo)
    docs = [Memo(id=f"m{i}", text=f"v{i}") for i in range(10)]
    # chunks of 4: [m0 m1 m2 x1] [x2 m5 x3 m7] [m8 m9]; x2 fails in the second request
    docs[3] = Memo(id="x", text="x1")
    docs[4] = Memo(id="x", text="x2")
    docs[6] = Memo(id="x", text="x3")
    proxy.fail_bulk_items(lambda pos, meta: pos == 0, status=503, skip=1)
    repo.save(docs)
    assert proxy.pending_faults == 0
    stored = es_client.get(index=repo.spec.alias, id="x")
    assert stored["_source"]["text"] == "x3"
    es_client.indices.refresh(index=repo.spec.alias)
    assert es_client.count(index=repo.spec.alias)["count"] == 8


def test_the_bulk_writer_never_sends_one_document_twice_in_a_request(
    proxy: FaultProxy, es_client: Elasticsearch, index_prefix: str
) -> None:
    index = f"{index_prefix}order"
    client = Elasticsearch(proxy.url)
    try:
        writer = BulkWriter(client, sleep=lambda _s: None, concurrency=2, chunk_size=50)
        actions = [
            BulkAction("index", index, "a", {"v": 1}),
            BulkAction("index", index, "b", {"v": 1}),
            BulkAction("index", index, "a", {"v": 2}),
            BulkAction("delete", index, "b"),
            BulkAction("create", index, "b", {"v": 3}),
        ]
        proxy.fail_bulk_items([0, 1], status=429)
        outcomes = writer.write(actions)
        assert [o.status for o in outcomes] == [201, 201, 200, 200, 201]
        for request in proxy.requests:
            assert request.bulk_items is None or request.bulk_items <= 2
        assert es_client.get(index=index, id="a")["_source"] == {"v": 2}
        assert es_client.get(index=index, id="b")["_source"] == {"v": 3}
    finally:
        client.close()


@pytest.mark.parametrize("applied", [False, True], ids=["lost-request", "lost-answer"])
def test_a_write_without_an_answer_is_not_resent_over_a_later_write_of_its_document(
    make_mapper: MakeMapper, proxy: FaultProxy, es_client: Elasticsearch, applied: bool
) -> None:
    """The first save of "x" gets no answer (its request dropped, or its answer lost);
    the second is applied. Reading "x" back finds the second: the first must not be sent
    again over it (it was applied before the second, or is replaced by it anyway)."""
    mapper = _mapper(make_mapper, proxy, Memo)
    repo = mapper.repository(Memo)
    proxy.drop_connection(path=r"/_bulk$", after_forwarding=applied)
    repo.save([Memo(id="x", text="first"), Memo(id="x", text="second")])
    assert proxy.pending_faults == 0
    stored = es_client.get(index=repo.spec.alias, id="x")
    assert stored["_source"]["text"] == "second"
