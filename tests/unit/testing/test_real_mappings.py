"""The ClusterProxy's account of how Elasticsearch writes a mapping back (pure)."""

from __future__ import annotations

from esmapper.testing._real_mappings import serialise_mapping


def test_values_come_back_parsed_and_defaults_left_out() -> None:
    sent = {
        "_source": {"enabled": "true"},
        "properties": {
            "k": {"type": "keyword", "index": "true", "ignore_above": "256", "meta": {}},
            "n": {"type": "nested", "include_in_root": "true", "properties": {}},
            "o": {"properties": {"x": {"type": "long", "coerce": True, "copy_to": []}}},
            "b": {"type": "binary", "doc_values": True},
        },
    }
    assert serialise_mapping(sent) == {
        "properties": {
            "b": {"type": "binary", "doc_values": True},
            "k": {"type": "keyword", "ignore_above": 256},
            "n": {"type": "nested", "include_in_root": True},
            "o": {"properties": {"x": {"type": "long"}}},
        }
    }
