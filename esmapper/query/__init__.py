"""The query layer: filter, sort, aggregation and field-selection expressions.

Pure functions (no HTTP) that validate user expressions against a model's
:class:`~esmapper.model.catalog.FieldCatalog` and compile them into what Elasticsearch
expects, raising :class:`~esmapper.errors.QueryValidationError` (field, position) before
anything is sent:

- :func:`compile_filter` -- Lucene filter text -> ``elasticsearch.dsl`` query;
- :func:`compile_sort` -- ``"-age name"`` or ``{"age": "desc"}`` -> a ``sort`` list;
- :func:`compile_aggregations` / :func:`parse_aggregations` -- ``"terms:company_id avg:age"``
  or ``A("terms", field="company_id")`` -> ``aggs`` bodies, and the response -> typed
  :class:`Aggregations`;
- :func:`compile_highlight` -- ``highlight=["name"]`` -> a ``highlight`` body;
- :func:`merge_source_filter` / :func:`parse_field_mask` -- ``_source`` selection;
- :func:`escape_query_value` -- user input made literal inside a filter.
"""

from esmapper.query.aggregates import (
    Aggregate,
    Aggregations,
    Bucket,
    BucketAggregate,
    PercentilesAggregate,
    SingleBucketAggregate,
    StatsAggregate,
    TopHitsAggregate,
    ValueAggregate,
    parse_aggregations,
)
from esmapper.query.aggregations import compile_aggregations
from esmapper.query.escape import escape_query_value
from esmapper.query.fields import merge_source_filter, parse_field_mask, validate_source_fields
from esmapper.query.filter import CompiledFilter, compile_filter
from esmapper.query.highlight import compile_highlight
from esmapper.query.sort import compile_sort

__all__ = [
    "Aggregate",
    "Aggregations",
    "Bucket",
    "BucketAggregate",
    "CompiledFilter",
    "PercentilesAggregate",
    "SingleBucketAggregate",
    "StatsAggregate",
    "TopHitsAggregate",
    "ValueAggregate",
    "compile_aggregations",
    "compile_filter",
    "compile_highlight",
    "compile_sort",
    "escape_query_value",
    "merge_source_filter",
    "parse_aggregations",
    "parse_field_mask",
    "validate_source_fields",
]
