"""The ClusterProxy's standing rules: how each makes the local server answer like a real
cluster, and that rules see (and may change) what is forwarded."""

from __future__ import annotations

from elasticsearch import Elasticsearch

from esmapper.testing._rules import Exchange, Reply, json_reply
from esmapper.testing.cluster import ClusterProxy
from esmapper.testing.faults import FaultProxy


def test_mappings_come_back_without_the_object_type(
    cluster: ClusterProxy, es_client: Elasticsearch, index_prefix: str
) -> None:
    index = f"{index_prefix}people"
    mapping = {
        "properties": {
            "address": {"type": "object", "properties": {"city": {"type": "keyword"}}},
            "tags": {"type": "keyword"},
        }
    }
    es_client.indices.create(index=index, mappings=mapping)
    through = Elasticsearch(cluster.url)
    echoed = through.indices.get_mapping(index=index)[index]["mappings"]["properties"]
    assert echoed["address"] == {"properties": {"city": {"type": "keyword"}}}
    assert echoed["tags"] == {"type": "keyword"}


def test_mappings_come_back_without_defaults(
    cluster: ClusterProxy, es_client: Elasticsearch, index_prefix: str
) -> None:
    index = f"{index_prefix}people"
    mapping = {
        "dynamic": False,
        "_routing": {"required": False},
        "dynamic_templates": [
            {
                "slots": {
                    "path_match": ["idx.a-*"],
                    "match_mapping_type": "*",
                    "mapping": {"type": "keyword", "index": True},
                }
            }
        ],
        "properties": {
            "name": {
                "type": "text",
                "norms": True,
                "copy_to": "all",
                "fields": {"raw": {"type": "keyword", "doc_values": True, "ignore_above": 256}},
            },
            "all": {"type": "text", "index": False},
            "born": {"type": "date", "format": "strict_date_optional_time||epoch_millis"},
            "skills": {"type": "nested", "include_in_parent": False, "properties": {}},
            "extra": {"type": "object", "enabled": False},
            "open": {"type": "object", "dynamic": True, "enabled": True},
        },
    }
    es_client.indices.create(index=index, mappings=mapping)
    through = Elasticsearch(cluster.url)
    for answer in (through.indices.get_mapping(index=index), through.indices.get(index=index)):
        echoed = answer[index]["mappings"]
        assert echoed == {
            "dynamic": "false",
            "dynamic_templates": [
                {"slots": {"path_match": "idx.a-*", "mapping": {"type": "keyword", "index": True}}}
            ],
            "properties": {
                "all": {"type": "text", "index": False},
                "born": {"type": "date"},
                "extra": {"type": "object", "enabled": False},
                "name": {
                    "type": "text",
                    "copy_to": ["all"],
                    "fields": {"raw": {"type": "keyword", "ignore_above": 256}},
                },
                "open": {"type": "object", "dynamic": "true"},
                "skills": {"type": "nested"},
            },
        }


class _Teapot:
    """Answers searches itself and marks every other answer."""

    def before(self, exchange: Exchange) -> Reply | None:
        if exchange.path.endswith("/_search"):
            return json_reply(418, {"error": "teapot", "status": 418})
        exchange.params["pretty"] = "true"
        return None

    def after(self, exchange: Exchange, reply: Reply) -> Reply:
        body = reply.json()
        if isinstance(body, dict):
            body["seen_params"] = sorted(exchange.params)
            return json_reply(reply.status, body)
        return reply


def test_a_rule_answers_or_rewrites_and_can_be_removed(es_url: str) -> None:
    with FaultProxy(es_url, lifetime=60) as proxy:
        client = Elasticsearch(proxy.url)
        rule = _Teapot()
        proxy.add_rule(rule)
        assert client.options(ignore_status=418).search(index="x").meta.status == 418
        assert client.info()["seen_params"] == ["pretty"]
        proxy.remove_rule(rule)
        assert "seen_params" not in client.info()
