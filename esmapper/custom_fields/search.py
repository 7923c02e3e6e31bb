"""What ``tenant=`` does to a search: the filter (text or ``Q``
objects), sort and aggregations resolve logical custom-field names through the tenant's
catalog (:class:`~esmapper.custom_fields.catalog.TenantCatalog`), and the query keeps to the
tenant's documents (its ``Index.tenant_field``, or ``idx.tenant`` for a model that overrides
``tenant_key()``: :func:`~esmapper.custom_fields.catalog.tenant_path`), so two tenants whose
fields share a slot never see each other's values. Without ``tenant=`` a custom-field name
is an unknown field.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from elasticsearch.dsl import Q
from elasticsearch.dsl.query import Query

from esmapper.custom_fields._access import access_of
from esmapper.custom_fields.catalog import TenantCatalog, tenant_path
from esmapper.errors import QueryValidationError
from esmapper.query import compile_filter
from esmapper.query.fields import field_paths

if TYPE_CHECKING:
    from esmapper.custom_fields.catalog import TenantCatalog
    from esmapper.model.catalog import FieldCatalog
    from esmapper.model.info import ModelInfo

__all__ = [
    "check_tenant_aggregations",
    "logical_highlight",
    "tenant_aggregations",
    "tenant_clause",
    "tenant_source_fields",
    "translate_query",
]

#: Query types whose body is ``{field: params}`` (plus a few option keys).
_KEYED = frozenset(
    {"term", "terms", "range", "match", "match_phrase", "match_phrase_prefix",
     "match_bool_prefix", "prefix", "wildcard", "regexp", "fuzzy", "term_set", "intervals",
     "span_term", "distance_feature", "geo_distance", "geo_bounding_box", "geo_shape"}
)  # fmt: skip
#: Query types naming their fields in ``fields`` / ``default_field``.
_LISTED = frozenset({"multi_match", "query_string", "simple_query_string", "combined_fields"})


def tenant_source_fields(
    info: ModelInfo, catalog: FieldCatalog, selection: Any, *, include: bool
) -> Any:
    """``includes``/``excludes`` (``selection``: names or field masks) with the logical
    custom-field names of a ``tenant=`` search replaced (case-insensitive), a model field in
    another case by its own spelling. Included, a custom field brings its slot
    (``idx.int-1``) and what recomputing ``idx`` on a save needs (the whole
    ``custom_fields`` dict and ``Index.tenant_field`` of a ``HasCustomFields`` model; a
    virtual model's own attributes are the model's to include); excluded, its slot. Other
    names are left for the source-filter validation (unknown ones raise
    QueryValidationError there). Without ``tenant=``: unchanged."""

    if selection is None or not isinstance(catalog, TenantCatalog):
        return selection
    out: list[str] = []
    for path in field_paths(selection):
        if path in info.catalog or "*" in path or "?" in path:
            out.append(path)
            continue
        own = catalog.model_name(path)
        slot = None if own is not None else catalog.custom_path(path)
        if slot is None:
            out.append(own or path)
            continue
        out.append(slot)
        access = access_of(info) if include and "." not in path else None
        if access is not None:
            out.extend(access.source_paths(info))
    return list(dict.fromkeys(out))


def logical_highlight(
    catalog: FieldCatalog, highlight: dict[str, list[str]]
) -> dict[str, list[str]]:
    """A hit's ``highlight`` with slot paths named by their custom field again
    (``idx.string-1`` -> ``Department``)."""

    if not highlight or not isinstance(catalog, TenantCatalog):
        return highlight
    return {catalog.logical_name(key) or key: value for key, value in highlight.items()}


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


def tenant_aggregations(
    info: ModelInfo, catalog: FieldCatalog, tenant: str | None, aggs: dict[str, Any]
) -> dict[str, Any]:
    """Compiled aggregations as a ``tenant=`` search sends them: a ``global`` one refused
    (:func:`check_tenant_aggregations`), and the queries of ``filter``, ``filters`` and
    ``adjacency_matrix`` aggregations (at any depth) with their logical custom-field names
    replaced by slots, as a ``Q`` filter's are (:func:`translate_query`), and the
    ``background_filter`` of ``significant_terms``/``significant_text`` kept to the tenant's
    documents (their background set is the whole index otherwise, so other tenants' values
    of a shared slot would weigh in). Without ``tenant=``: unchanged."""

    check_tenant_aggregations(tenant, aggs)
    if tenant is None or not isinstance(catalog, TenantCatalog) or not aggs:
        return aggs
    defaults = info.index.default_search_fields if info.index is not None else None
    clause = tenant_clause(info, tenant)

    def query(body: Any) -> Any:
        if not isinstance(body, dict) or not body:
            return body
        return translate_query(Q(body), info.catalog, catalog, default_fields=defaults).to_dict()

    def level(bodies: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, raw in bodies.items():
            if not isinstance(raw, dict):
                out[name] = raw
                continue
            body = dict(raw)
            if "filter" in body:
                body["filter"] = query(body["filter"])
            for kind in ("filters", "adjacency_matrix"):
                params = body.get(kind)
                if not isinstance(params, dict):
                    continue
                named = params.get("filters")
                if isinstance(named, dict):
                    body[kind] = {**params, "filters": {k: query(v) for k, v in named.items()}}
                elif isinstance(named, list):
                    body[kind] = {**params, "filters": [query(v) for v in named]}
            for kind in ("significant_terms", "significant_text"):
                params = body.get(kind)
                if not isinstance(params, dict) or clause is None:
                    continue
                background = params.get("background_filter")
                scoped = (
                    clause if not background else {"bool": {"filter": [clause, query(background)]}}
                )
                body[kind] = {**params, "background_filter": scoped}
            for key in ("aggs", "aggregations"):
                if isinstance(body.get(key), dict):
                    body[key] = level(body[key])
            out[name] = body
        return out

    return level(aggs)


def translate_query(
    query: Query,
    model: FieldCatalog,
    tenant: TenantCatalog,
    *,
    default_fields: Sequence[str] | None = None,
) -> Query:
    """``query`` with the custom-field names of its leaf queries (``term``, ``range``,
    ``match``, ``exists``, ``multi_match`` fields, ...) replaced by their slot paths; a name
    the model declares is left alone. Compound queries (``bool``, ``nested``, ...) are
    followed. A ``query_string`` whose text names fields the model does not resolve as
    written (custom fields, a model field in another case) is compiled by the string
    filters' translator (:func:`~esmapper.query.compile_filter`, bare terms searching
    ``default_fields``); with options besides ``query`` it cannot be, and is refused
    (QueryValidationError)."""

    def rename(name: Any) -> Any:
        if not isinstance(name, str) or name in model:
            return name
        head, caret, boost = name.partition("^")
        path = tenant.model_name(head) or tenant.custom_path(head)
        return name if path is None else f"{path}{caret}{boost}"

    def text(body: dict[str, Any]) -> dict[str, Any] | None:
        return _query_string(body, model, tenant, default_fields)

    body = _walk(query.to_dict(), rename, text)
    translated: Query = Q(body)
    return translated


def _query_string(
    body: dict[str, Any],
    model: FieldCatalog,
    tenant: TenantCatalog,
    default_fields: Sequence[str] | None,
) -> dict[str, Any] | None:
    """The query replacing a ``query_string`` body whose text needs the tenant's names
    (see :func:`translate_query`), or ``None`` to keep it as it is."""

    text = body.get("query")
    if not isinstance(text, str):
        return None
    try:
        compile_filter(text, model, default_fields=default_fields)
        return None  # the model's own names, as written: Elasticsearch resolves them
    except QueryValidationError:
        pass
    try:
        compiled = compile_filter(text, tenant, default_fields=default_fields)
    except QueryValidationError:
        return None  # not esmapper's syntax: left to Elasticsearch as written
    options = sorted(set(body) - {"query"})
    if options or compiled.query is None:
        raise QueryValidationError(
            f"a query_string Q object under tenant= names custom fields in its text "
            f"({text!r}) and has options esmapper cannot keep when resolving them "
            f"({', '.join(options)}); pass the text as the filter string instead",
            field="query_string",
        )
    resolved: dict[str, Any] = compiled.query.to_dict()
    return resolved


def _walk(
    node: Any,
    rename: Callable[[Any], Any],
    text: Callable[[dict[str, Any]], dict[str, Any] | None],
) -> Any:
    if isinstance(node, list):
        return [_walk(item, rename, text) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for kind, body in node.items():
        if kind == "query_string" and isinstance(body, dict):
            replaced = text(body)
            if replaced is not None:
                if len(node) == 1:
                    return replaced
                raise QueryValidationError(
                    "a query_string needing the tenant's names must be a query of its own",
                    field="query_string",
                )
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
            out[kind] = _walk(body, rename, text)
    return out
