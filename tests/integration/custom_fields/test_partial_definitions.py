"""Custom-field definitions are never read from a listing some shards did not answer (issue
26, item 1): a definition missing from it would free its name and slot for another field,
and a count of another application's definitions too low would delete them with the index."""

from __future__ import annotations

import pytest
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper.testing._real_shards import shard_of
from esmapper.testing.cluster import ClusterProxy

from .models import Employee, Ticket
from .virtual_models import Contact

DEFINITIONS = r"esmapper-custom-fields/_search$"


def definition_ids(es_client: Elasticsearch, alias: str) -> list[str]:
    es_client.indices.refresh(index=alias)
    hits = es_client.search(index=alias, size=100, source=False)["hits"]["hits"]
    return sorted(str(h["_id"]) for h in hits)


def test_a_partial_listing_of_a_tenants_definitions_is_refused(
    mapper: em.Mapper, cluster: ClusterProxy, es_client: Elasticsearch, es_url: str,
    index_prefix: str,
) -> None:  # fmt: skip
    for name in ("Level", "Rank", "Grade"):
        mapper.custom_fields(Employee).add_field("acme", name, "int")
    alias = mapper.spec(em.CustomFieldDefinition).alias
    [first, *_] = definition_ids(es_client, alias)
    with em.Mapper(cluster.url, models=[Employee, Ticket], index_prefix=index_prefix) as through:
        cluster.fail_shards(path=DEFINITIONS, shard=shard_of(first))  # that one is lost
        with pytest.raises(em.PartialResultsError):
            through.custom_fields(Employee).get_field_mapping("acme")
        assert sorted(through.custom_fields(Employee).get_field_mapping("acme")) == [
            "grade",
            "level",
            "rank",
        ]


def test_a_partial_count_of_another_applications_definitions_keeps_the_index(
    mapper: em.Mapper, cluster: ClusterProxy, es_client: Elasticsearch, es_url: str,
    index_prefix: str,
) -> None:  # fmt: skip
    mapper.custom_fields(Employee).add_field("acme", "Level", "int")
    with em.Mapper(es_url, models=[Contact], index_prefix=index_prefix) as other:
        other.configure_indexes()
        other.custom_fields(Contact).add_field("acme/x", "Level", "int")
    alias = mapper.spec(em.CustomFieldDefinition).alias
    es_client.indices.refresh(index=alias)
    hits = es_client.search(index=alias, query={"term": {"entity_type": "Contact"}})["hits"]
    [theirs] = [str(h["_id"]) for h in hits["hits"]]
    with em.Mapper(cluster.url, models=[Employee, Ticket], index_prefix=index_prefix) as through:
        cluster.fail_shards(path=r"esmapper-custom-fields/_count$", shard=shard_of(theirs))
        with pytest.raises(em.PartialResultsError):
            through.delete_indexes([Employee, Ticket])
    assert es_client.indices.exists_alias(name=alias)
    assert theirs in definition_ids(es_client, alias)
