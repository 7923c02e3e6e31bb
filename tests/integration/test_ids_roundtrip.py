"""Ids at the 512-byte limit survive a round trip through Elasticsearch unchanged."""

from __future__ import annotations

from typing import Any

import pytest
from elasticsearch import ApiError, Elasticsearch

from esmapper.errors import IdTooLongError
from esmapper.ids import MAX_ID_BYTES, ObjectId, check_id, compose_id, decompose_id


def _write(es: Elasticsearch, index: str, id_: str, doc: dict[str, Any]) -> None:
    """What every write path does: check the id, then send the request."""
    es.index(index=index, id=check_id(id_, index=index), document=doc, refresh=True)


def _assert_round_trip(es: Elasticsearch, index: str, id_: str) -> None:
    got = es.get(index=index, id=id_)
    assert got["found"] is True
    assert got["_id"] == id_
    hits = es.search(index=index, query={"ids": {"values": [id_]}})["hits"]["hits"]
    assert [hit["_id"] for hit in hits] == [id_]
    docs = es.mget(index=index, ids=[id_])["docs"]
    assert [(doc["_id"], doc["found"]) for doc in docs] == [(id_, True)]


def _ascii_512() -> tuple[tuple[str, ...], str]:
    # Characters the URL path and the JSON body both have to carry: "/", ":", "%", space, "?".
    terms = ("acme/corp:1", "100% done?", "x" * 10)
    base = len(compose_id(*terms))
    terms = (*terms[:2], "x" * (10 + MAX_ID_BYTES - base))
    return terms, compose_id(*terms)


def _multibyte_512() -> tuple[tuple[str, ...], str]:
    terms = ("café", "日本語", "😀 𝄞", "é" * 10)
    base = len(compose_id(*terms))
    padding = MAX_ID_BYTES - base
    terms = (*terms[:3], "é" * (10 + padding // 6) + "y" * (padding % 6))
    return terms, compose_id(*terms)


@pytest.mark.parametrize("make", [_ascii_512, _multibyte_512], ids=["ascii", "multibyte"])
def test_composed_512_byte_id_round_trips(
    es_client: Elasticsearch, index_prefix: str, make: Any
) -> None:
    terms, id_ = make()
    assert len(id_.encode("utf-8")) == MAX_ID_BYTES
    index = f"{index_prefix}ids"
    _write(es_client, index, id_, {"terms": list(terms)})
    _assert_round_trip(es_client, index, id_)
    stored = es_client.get(index=index, id=id_)
    assert decompose_id(stored["_id"]) == terms
    assert stored["_source"] == {"terms": list(terms)}


def test_bulk_write_of_512_byte_id(es_client: Elasticsearch, index_prefix: str) -> None:
    _, id_ = _multibyte_512()
    index = f"{index_prefix}ids"
    response = es_client.bulk(
        operations=[{"index": {"_index": index, "_id": check_id(id_)}}, {"n": 1}], refresh=True
    )
    assert response["errors"] is False
    assert response["items"][0]["index"]["_id"] == id_
    _assert_round_trip(es_client, index, id_)


def test_verbatim_multibyte_512_byte_id(es_client: Elasticsearch, index_prefix: str) -> None:
    # A plain (not composed) id is written as is: 256 "é" are 512 bytes of UTF-8.
    id_ = "é" * 256
    index = f"{index_prefix}ids"
    _write(es_client, index, id_, {"n": 1})
    _assert_round_trip(es_client, index, id_)


def test_object_id_round_trips(es_client: Elasticsearch, index_prefix: str) -> None:
    index = f"{index_prefix}ids"
    ids = [str(ObjectId.new()) for _ in range(3)]
    for id_ in ids:
        _write(es_client, index, id_, {"n": 1})
    for id_ in ids:
        _assert_round_trip(es_client, index, id_)


@pytest.mark.parametrize(
    "make_id",
    [
        lambda: "a" * 513,
        lambda: "é" * 256 + "a",
    ],
    ids=["ascii", "multibyte"],
)
def test_513_byte_id_refused_before_any_request(
    es_client: Elasticsearch, index_prefix: str, make_id: Any
) -> None:
    index = f"{index_prefix}ids"
    with pytest.raises(IdTooLongError) as info:
        _write(es_client, index, make_id(), {"n": 1})
    assert info.value.actual == 513
    assert info.value.index == index
    with pytest.raises(IdTooLongError):
        compose_id("é" * 85, "ab")  # 513 bytes once encoded
    # No request was sent: the write would have auto-created the index.
    assert not es_client.indices.exists(index=index)


def test_server_limit_is_512_bytes(es_client: Elasticsearch, index_prefix: str) -> None:
    """The limit check_id enforces is the server's own (sent here without check_id)."""
    index = f"{index_prefix}ids"
    es_client.indices.create(index=index)
    with pytest.raises(ApiError) as info:
        es_client.index(index=index, id="é" * 256 + "a", document={"n": 1})
    assert info.value.meta.status == 400
    es_client.index(index=index, id="é" * 256, document={"n": 1}, refresh=True)
    assert es_client.count(index=index)["count"] == 1
