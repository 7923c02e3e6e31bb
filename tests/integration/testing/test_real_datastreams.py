"""The ClusterProxy's data-stream rule: a regular index named like Elasticsearch's
built-in data streams (``logs-*-*``, ``metrics-*-*``, ``synthetics-*-*``, ``traces-*-*``)
is refused, by ``PUT /<name>`` and by a write that would create it, unless a template of
higher priority claims the name."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from elasticsearch import BadRequestError, Elasticsearch

from esmapper.testing.cleanup import delete_prefixed
from esmapper.testing.cluster import ClusterProxy


@pytest.fixture
def through(cluster: ClusterProxy) -> Iterator[Elasticsearch]:
    client = Elasticsearch(cluster.url, request_timeout=30)
    yield client
    client.close()


@pytest.fixture
def stem(es_client: Elasticsearch, index_prefix: str) -> Iterator[str]:
    """A unique ``<prefix>`` to put after ``logs-`` etc. (those names deleted after)."""
    yield index_prefix
    for kind in ("logs-", "metrics-", "synthetics-", "traces-"):
        delete_prefixed(es_client, f"{kind}{index_prefix}")


def test_creating_an_index_a_data_stream_template_claims_is_refused(
    through: Elasticsearch, es_client: Elasticsearch, stem: str
) -> None:
    name = f"logs-{stem}app-v1"
    with pytest.raises(BadRequestError) as raised:
        through.indices.create(index=name)
    assert raised.value.error == "illegal_argument_exception"
    assert raised.value.body["error"]["reason"] == (
        f"cannot create index with name [{name}], because it matches with template [logs] "
        "that creates data streams only, use create data stream api instead"
    )
    assert not es_client.indices.exists(index=name)
    through.indices.create(index=f"{stem}logs-app-v1")  # not the pattern: created


def test_a_template_of_higher_priority_wins(
    through: Elasticsearch, es_client: Elasticsearch, stem: str
) -> None:
    name = f"metrics-{stem}app-v1-2026.03"
    template: dict[str, Any] = {
        "index_patterns": [f"metrics-{stem}app-v1-*"],
        "template": {"settings": {}},
    }
    es_client.indices.put_index_template(name=f"metrics-{stem}low", priority=90, **template)
    with pytest.raises(BadRequestError):
        through.indices.create(index=name)
    es_client.indices.put_index_template(name=f"metrics-{stem}high", priority=501, **template)
    through.indices.create(index=name)
    assert es_client.indices.exists(index=name)


def test_writes_that_would_create_such_an_index_fail(
    through: Elasticsearch, es_client: Elasticsearch, stem: str, index_prefix: str
) -> None:
    claimed = f"traces-{stem}svc-default"
    with pytest.raises(BadRequestError) as raised:
        through.index(index=claimed, id="1", document={"n": 1})
    assert raised.value.body["error"]["reason"] == (
        "only write ops with an op_type of create are allowed in data streams"
    )
    answer = through.bulk(
        operations=[
            {"index": {"_index": claimed, "_id": "1"}},
            {"n": 1},
            {"create": {"_index": claimed, "_id": "2"}},
            {"n": 2},
            {"index": {"_index": f"{index_prefix}plain", "_id": "3"}},
            {"n": 3},
        ],
        refresh=True,
    )
    items = answer["items"]
    assert answer["errors"] is True
    assert [next(iter(item.values()))["status"] for item in items] == [400, 400, 201]
    assert items[0]["index"]["error"]["type"] == "illegal_argument_exception"
    assert items[1]["create"]["error"]["type"] == "document_parsing_exception"
    assert not es_client.indices.exists(index=claimed)
    assert es_client.count(index=f"{index_prefix}plain")["count"] == 1
    # an existing index of that name (made before the rule) takes writes as usual
    es_client.indices.create(index=claimed)
    through.index(index=claimed, id="4", document={"n": 4})


def test_the_rule_can_be_switched_off(es_url: str, stem: str) -> None:
    with ClusterProxy(es_url, lifetime=60, data_stream_templates=False) as kind:
        client = Elasticsearch(kind.url)
        client.indices.create(index=f"synthetics-{stem}a-b")
        client.close()
