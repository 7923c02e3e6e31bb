"""What ``tenant=`` does to a search (FEATURES CF-10, QY-34): the filter (text or ``Q``
objects), sort and aggregations resolve logical custom-field names through the tenant's
catalog (:class:`~esmapper.custom_fields.catalog.TenantCatalog`), and the query keeps to the
tenant's documents (its ``Index.tenant_field``, or ``idx.tenant`` for a model that overrides
``tenant_key()``: :func:`~esmapper.custom_fields.catalog.tenant_path`), so two tenants whose
fields share a slot never see each other's values. Without ``tenant=`` a custom-field name
is an unknown field.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from elasticsearch.dsl import Q
from elasticsearch.dsl.query import Query

from esmapper.custom_fields.catalog import tenant_path
from esmapper.errors import QueryValidationError

if TYPE_CHECKING:
    from esmapper.custom_fields.catalog import TenantCatalog
    from esmapper.mapper import Mapper
    from esmapper.model.catalog import FieldCatalog
    from esmapper.model.info import ModelInfo

__all__ = ["check_tenant_aggregations", "tenant_clause", "tenant_view", "translate_query"]

#: Query types whose body is ``{field: params}`` (plus a few option keys).
_KEYED = frozenset(
    {"term", "terms", "range", "match", "match_phrase", "match_phrase_prefix",
     "match_bool_prefix", "prefix", "wildcard", "regexp", "fuzzy", "term_set", "intervals",
     "span_term", "distance_feature", "geo_distance", "geo_bounding_box", "geo_shape"}
)  # fmt: skip
#: Query types naming their fields in ``fields`` / ``default_field``.
_LISTED = frozenset({"multi_match", "query_string", "simple_query_string", "combined_fields"})


def tenant_view(
    mapper: Mapper, info: ModelInfo, tenant: str | None, filter: Any
) -> tuple[FieldCatalog, Any]:
    """The catalog a search of ``info``'s model compiles against, and its filter: the
    model's own (filter unchanged) without ``tenant``; with it, the model's plus the
    tenant's custom fields (their definitions loaded when not cached: one search), and a
    ``Q`` filter's logical names replaced by their slots. Raises QueryValidationError for
    ``tenant=`` on a model without custom fields."""
    if tenant is None:
        return info.catalog, filter
    if not info.custom_fields:
        raise QueryValidationError(
            f"tenant= is for models with custom fields; {info.name} has none (em.HasCustomFields)",
            field="tenant",
        )
    catalog = mapper.custom_fields(info.cls).tenant_fields(tenant).catalog()
    if isinstance(filter, Query):
        filter = translate_query(filter, info.catalog, catalog)
    return catalog, filter


def tenant_clause(info: ModelInfo, tenant: str | None) -> dict[str, Any] | None:
    """The filter clause keeping a search to ``tenant``'s documents (``None``: none)."""
    if tenant is None or not info.custom_fields:
        return None
    return {"term": {tenant_path(info): tenant}}


def check_tenant_aggregations(tenant: str | None, aggs: Any) -> None:
    """Refuse a ``global`` aggregation (at any depth) under ``tenant=``: it ignores the query,
    so the tenant and soft-delete clauses would not apply to it and its sub-aggregations
    on a custom field would bucket other tenants' values of the same slot.
    QueryValidationError naming the aggregation."""
    if tenant is None or not isinstance(aggs, dict):
        return
    for name, body in aggs.items():
        if not isinstance(body, dict):
            continue
        if "global" in body:
            raise QueryValidationError(
                f"aggregation {name!r} is a global aggregation: it ignores the query, so "
                f"tenant={tenant!r} (and the soft-delete filter) would not apply to it; use "
                "a filter aggregation, or search without tenant=",
                field=str(name),
            )
        for key in ("aggs", "aggregations"):
            check_tenant_aggregations(tenant, body.get(key))


def translate_query(query: Query, model: FieldCatalog, tenant: TenantCatalog) -> Query:
    """``query`` with the custom-field names of its leaf queries (``term``, ``range``,
    ``match``, ``exists``, ``multi_match`` fields, ...) replaced by their slot paths; a name
    the model declares is left alone. Compound queries (``bool``, ``nested``, ...) are
    followed."""

    def rename(name: Any) -> Any:
        if not isinstance(name, str) or name in model:
            return name
        head, caret, boost = name.partition("^")
        path = tenant.model_name(head) or tenant.custom_path(head)
        return name if path is None else f"{path}{caret}{boost}"

    body = _walk(query.to_dict(), rename)
    translated: Query = Q(body)
    return translated


def _walk(node: Any, rename: Callable[[Any], Any]) -> Any:
    if isinstance(node, list):
        return [_walk(item, rename) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for kind, body in node.items():
        if kind in _KEYED and isinstance(body, dict):
            out[kind] = {rename(k): v for k, v in body.items()}
        elif kind == "exists" and isinstance(body, dict):
            out[kind] = {**body, "field": rename(body.get("field"))}
        elif kind in _LISTED and isinstance(body, dict):
            changed = dict(body)
            if isinstance(body.get("fields"), list):
                changed["fields"] = [rename(f) for f in body["fields"]]
            if "default_field" in body:
                changed["default_field"] = rename(body["default_field"])
            out[kind] = changed
        else:
            out[kind] = _walk(body, rename)
    return out
