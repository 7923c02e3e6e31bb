"""``find`` and ``get_many`` read the answer's bytes through a copy of the client
(``esmapper._raw_answers``), never changing the user's client; they return what the
parsed answer gives, raise what the user's client raises, and still refuse a page some
shards did not answer (a real cluster answers it with status 200)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from elasticsearch import Elasticsearch, NotFoundError
from elasticsearch.serializer import JsonSerializer, OrjsonSerializer

import esmapper as em
from esmapper import _bodies
from esmapper._raw_answers import RawJson, answer, raw_client
from esmapper.indexes import reads
from esmapper.model._wire_encode import undeclared_keys
from esmapper.model.state import state_of
from esmapper.testing.cluster import ClusterProxy
from tests.integration.conftest import MakeMapper


class Card(em.Document):
    class Index:
        name = "raw_cards"
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    title: str = em.field(em.Keyword(), default="")
    n: int = em.field(em.Integer(), default=0)


def _seen(client: Elasticsearch) -> tuple[object, ...]:
    serializers = client.transport.serializers
    return (
        client.transport,
        serializers,
        dict(serializers.serializers),
        serializers.default_serializer,
        dict(client._headers),
    )


def test_the_users_client_is_untouched_and_its_options_kept(es_url: str) -> None:
    client = Elasticsearch(es_url, serializer=OrjsonSerializer(), headers={"x-team": "a"})
    user = client.options(api_key="a2V5OnNlY3JldA==", request_timeout=7)
    before = _seen(user)
    raw = raw_client(user)
    assert raw is not None and raw is not user
    assert _seen(user) == before  # same transport, serializers, headers
    assert raw.transport is not user.transport
    assert raw.transport.node_pool is user.transport.node_pool  # the same connections
    assert raw._headers == user._headers and raw._request_timeout == 7
    info = raw.info()
    assert type(info.body) is RawJson
    assert type(user.info().body) is dict  # the user's client still parses its answers


def test_another_serializer_keeps_the_reads_on_the_users_client(es_url: str) -> None:
    assert raw_client(Elasticsearch(es_url)) is None  # the stdlib JSON serializer
    assert raw_client(Elasticsearch(es_url, serializer=JsonSerializer())) is None


def test_an_error_answer_is_raised_as_the_users_client_raises_it(
    es_url: str, index_prefix: str
) -> None:
    client = Elasticsearch(es_url, serializer=OrjsonSerializer())
    raw = raw_client(client)
    assert raw is not None

    def search(c: Elasticsearch) -> object:
        return c.search(index=f"{index_prefix}missing", query={"match_all": {}})

    raised = []
    for c in (client, raw):
        with pytest.raises(NotFoundError) as error:
            answer(lambda c=c: search(c))  # type: ignore[misc]
        raised.append((type(error.value), error.value.message, error.value.body))
    assert raised[0] == raised[1] and isinstance(raised[0][2], dict)


def test_find_and_get_many_hydrate_from_the_bytes(make_mapper: MakeMapper) -> None:
    repo = make_mapper(Card, configure=True).repository(Card)
    repo.add([Card(id=f"c{i}", title=f"t{i}", n=i) for i in range(5)], consistency="immediate")
    found = repo.find(sort="n", limit=5)
    many = repo.get_many(["c3", "nope", "c1", "c3"])
    assert [d.n for d in found] == [0, 1, 2, 3, 4] and [d.id for d in many] == ["c3", "c1"]
    for doc in [*found.documents, *many]:
        assert isinstance(state_of(doc).original_or_bytes, bytes)  # the mirror's
    assert found.hits[2].sort[0] == 2 and found.hits[2].version == state_of(found[2]).version
    many[0].title = "changed"
    assert state_of(many[0]).original == {"id": "c3", "title": "t3", "n": 3}
    repo.save(many[0])
    assert repo.get("c3").title == "changed"


def test_a_partial_page_read_as_bytes_is_still_refused(
    make_mapper: MakeMapper, cluster: ClusterProxy
) -> None:
    make_mapper(Card, configure=True).repository(Card).add(
        [Card(id=f"c{i}", n=i) for i in range(20)], consistency="immediate"
    )
    repo = make_mapper(Card, url=cluster.url).repository(Card)
    cluster.fail_shards(refuse=False)
    with pytest.raises(em.PartialResultsError) as raised:
        repo.find(limit=20)
    assert raised.value.shards.failed == 1 and raised.value.results is not None
    cluster.fail_shards(refuse=False)
    page = repo.find(limit=20, partial_results=True)
    assert page.partial and all(isinstance(d, Card) for d in page)


def test_get_many_answered_in_another_order_keeps_the_request_order(
    make_mapper: MakeMapper, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the server answers a multi-GET in the request's order (that order is then used as
    # it is); any other order still gives the documents in the request's order
    repo = make_mapper(Card, configure=True).repository(Card)
    repo.add([Card(id=f"c{i}", n=i) for i in range(4)], consistency="immediate")
    assert [d.id for d in repo.get_many(["c2", "x", "c0", "c3"])] == ["c2", "c0", "c3"]
    answered = reads.get_documents_raw

    def reversed_answer(*args: object) -> list[object]:
        return answered(*args)[::-1]  # type: ignore[arg-type]

    monkeypatch.setattr("esmapper._reading.get_documents_raw", reversed_answer)
    many = repo.get_many(["c2", "x", "c0", "c3"])
    assert [d.id for d in many] == ["c2", "c0", "c3"] and [d.n for d in many] == [2, 0, 3]
    assert all(isinstance(state_of(d).original_or_bytes, bytes) for d in many)


def test_a_save_looks_for_undeclared_keys_only_in_sources_that_may_hold_some(
    make_mapper: MakeMapper, monkeypatch: pytest.MonkeyPatch
) -> None:
    mapper = make_mapper(Card, configure=True)
    repo = mapper.repository(Card)
    repo.add([Card(id=f"c{i}", title=f"t{i}", n=i) for i in range(3)], consistency="immediate")
    client = mapper.client
    alias = repo.spec.alias
    # the last of the page (after a hit with undeclared keys, the page's rest is not checked)
    client.update(index=alias, id="c2", doc={"theirs": {"kept": [1, 2.5]}}, refresh=True)
    looked: list[Any] = []

    def counted(info: Any, original: Any) -> bool:
        looked.append(original)
        return undeclared_keys(info, original)

    monkeypatch.setattr(_bodies, "undeclared_keys", counted)
    reads_: list[Callable[[], list[Card]]] = [
        lambda: repo.find(sort="n", limit=3).documents,
        lambda: repo.get_many(["c0", "c1", "c2"]),
    ]
    for read in reads_:
        many = read()
        for doc in many:
            doc.n += 10
        repo.save(many, consistency="immediate")
    # the loading proved c0 and c1 declared-only: only c2's original was looked into
    assert len(looked) == 2 and all(b'"theirs"' in o for o in looked)
    stored = client.get(index=alias, id="c2").body["_source"]
    assert stored["theirs"] == {"kept": [1, 2.5]} and stored["n"] == 22  # kept, as before
    assert [client.get(index=alias, id=f"c{i}").body["_source"]["n"] for i in (0, 1)] == [20, 21]
