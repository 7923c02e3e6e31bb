"""Re-key's audit never takes a page some shards did not answer (issue 26, item 1): a
document on a failed shard would be left under its old id, the run reported done."""

from __future__ import annotations

import pytest
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper.rekey import audit
from esmapper.testing.cluster import ClusterProxy
from tests.integration.conftest import MakeMapper

from .test_rekey import Inbox, msg, put


def test_a_partial_audit_page_is_refused(
    make_mapper: MakeMapper, cluster: ClusterProxy, es_client: Elasticsearch
) -> None:
    mapper = make_mapper(Inbox, configure=True)
    physical = mapper.spec(Inbox).physical_name()
    for n in range(12):
        put(es_client, physical, f"legacy-{n}", **msg("acme", f"m{n}", "email"))
    through = make_mapper(Inbox, url=cluster.url)
    cluster.fail_shards(path=r"^/_search$")  # the audit's point-in-time pages
    with pytest.raises(em.PartialResultsError):
        list(audit(through, Inbox))
    assert any("allow_partial_search_results=false" in r.query for r in cluster.requests)
    assert len(list(audit(through, Inbox))) == 12
