"""tenant= keeps a call to the tenant's documents: searches, aggregations, by-query writes."""

from __future__ import annotations

from typing import Any

import pytest
from elasticsearch.dsl import A

import esmapper as em

from .models import Employee


@pytest.mark.parametrize(
    "aggs",
    [
        {"all": {"global": {}, "aggs": {"levels": {"terms": {"field": "level"}}}}},
        {"by": {"terms": {"field": "name"}, "aggs": {"inner": {"global": {}}}}},
        {"all": A("global", aggs={"levels": A("terms", field="level")})},
    ],
    ids=["top", "nested", "dsl"],
)
def test_a_global_aggregation_is_refused_under_tenant(
    fields: em.CustomFieldRepository, repo: em.Repository[Employee], aggs: Any
) -> None:
    fields.add_field("acme", "Level", "int")
    with pytest.raises(em.QueryValidationError) as refused:
        repo.search(tenant="acme", aggregations=aggs, limit=0)
    assert refused.value.field in {"all", "inner"}
    assert "global" in str(refused.value)
    repo.search(aggregations={"all": {"global": {}}}, limit=0)  # without tenant=: as before
