"""``elasticsearch.dsl`` aggregation objects and raw aggregation dicts, checked against a
model's fields like the expression syntax.

Accepted forms (see :func:`compile_dsl_aggregations`)::

    A("terms", field="company_id")                     # named like "terms:company_id"
    [A("terms", field="company_id"), A("avg", field="age")]
    {"by_company": A("terms", field="company_id")}     # named by the key
    {"by_company": {"terms": {"field": "company_id"}, "aggs": {"age": {"avg": {...}}}}}

Every ``field`` is resolved in the catalog (an unknown name raises a
:class:`~esmapper.errors.QueryValidationError` naming it, close names suggested); the
aggregation's own ``field`` on a text field is replaced by its keyword subfield, as the
expression syntax does. Nested fields are not wrapped for you (that would change the result
names): a field under a ``nested`` path must sit inside ``A("nested", path=...)`` of that
path, and a root field inside one needs a ``reverse_nested``; otherwise Elasticsearch would
silently answer with empty buckets, so this is refused before sending.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

from elasticsearch.dsl import A
from elasticsearch.dsl.aggs import Agg
from elasticsearch.dsl.exceptions import UnknownDslObject

from esmapper.errors import QueryValidationError
from esmapper.model.catalog import FieldCatalog, FieldInfo
from esmapper.query._resolve import unknown_field_message

__all__ = ["AggregationsSpec", "compile_dsl_aggregations", "kind_of"]

#: What ``aggregations=`` accepts besides an expression string.
AggregationsSpec: TypeAlias = (
    str | Agg[Any] | Mapping[str, Agg[Any] | Mapping[str, Any]] | Sequence[Agg[Any]] | None
)

#: The name an unnamed aggregation gets is ``{op}_{field}``, with the expression syntax's
#: op where it has another name for the same aggregation.
_EXPRESSION_OPS = {"date_histogram": "date", "top_hits": "tophits"}
_META_KEYS = frozenset({"aggs", "aggregations", "meta"})
#: Kinds whose parameters are queries (their keys are field names, their values not).
_QUERY_KINDS = frozenset({"filter", "filters", "adjacency_matrix"})
#: Kinds that read the analysed text itself (no keyword subfield substitution).
_TEXT_KINDS = frozenset({"significant_text"})


def kind_of(body: Mapping[str, Any]) -> str | None:
    """The aggregation type of a raw aggregation body (``"terms"`` for ``{"terms": {...},
    "aggs": {...}}``); ``None`` when it has none."""
    return next((str(key) for key in body if key not in _META_KEYS), None)


def compile_dsl_aggregations(value: Any, catalog: FieldCatalog) -> dict[str, dict[str, Any]]:
    """The raw ``aggs`` bodies for dsl aggregation objects or dicts, keyed by result name.

    ``value`` is an ``elasticsearch.dsl`` aggregation (``A("terms", field="n")``, named
    ``terms_n`` like ``terms:n``; ``date_histogram`` is named ``date_...`` and ``top_hits``
    ``tophits``), a list of them, or a dict name -> aggregation object or raw body
    (``{"terms": {"field": "n"}, "aggs": {...}}``).

    An empty list or dict asks for no aggregations. Raises
    :class:`~esmapper.errors.QueryValidationError` for anything else (naming
    ``aggregations``), an unknown aggregation type, an unknown field or nested path, an
    object field, a nested field outside its ``nested`` aggregation, or two aggregations
    with the same name.
    """
    items: list[tuple[str, Any]]
    if isinstance(value, Agg):
        items = [(_auto_name(value), value)]
    elif isinstance(value, Mapping):
        items = list(value.items())
    elif isinstance(value, Sequence) and not isinstance(value, str | bytes | bytearray):
        items = []
        for item in value:
            if not isinstance(item, Agg):
                raise _shape_error(f"a list item {item!r}")
            items.append((_auto_name(item), item))
    else:
        raise _shape_error(repr(value))
    if not items:
        return {}
    checker = _Checker(catalog)
    out: dict[str, dict[str, Any]] = {}
    for name, agg in items:
        if not isinstance(name, str) or not name or "[" in name or ">" in name:
            raise _shape_error(f"the name {name!r} (names are non-empty, without '[' or '>')")
        if name in out:
            raise QueryValidationError(f"Duplicate aggregation name {name!r}", field=name)
        out[name] = checker.check(name, _body(name, agg), ())
    return out


def _shape_error(what: str) -> QueryValidationError:
    return QueryValidationError(
        "aggregations takes an expression such as 'terms:company_id avg:age', an"
        " elasticsearch.dsl aggregation such as A('terms', field='company_id'), a list of"
        " those, or a dict of named ones ({'by_company': {'terms': {'field': 'company_id'}}});"
        f" got {what}",
        field="aggregations",
    )


def _auto_name(agg: Agg[Any]) -> str:
    op = _EXPRESSION_OPS.get(agg.name, agg.name)
    params = agg._params
    target = params.get("field") or params.get("path")
    return f"{op}_{target}" if isinstance(target, str) and target else op


def _body(name: str, agg: Any) -> dict[str, Any]:
    """The raw body of ``agg`` (an aggregation object or a dict), parsed by the dsl so that
    an unknown type is refused."""
    if isinstance(agg, Agg):
        return agg.to_dict()
    if not isinstance(agg, Mapping):
        raise QueryValidationError(
            f"Aggregation {name!r}: expected an aggregation object or a dict such as"
            f" {{'terms': {{'field': 'x'}}}}, got {agg!r}",
            field=name,
        )
    raw = dict(agg)
    if "aggregations" in raw:
        raw.setdefault("aggs", raw.pop("aggregations"))
    try:
        return A(raw).to_dict()
    except (UnknownDslObject, ValueError) as exc:
        raise QueryValidationError(
            f"Aggregation {name!r}: {agg!r} is not an aggregation body such as"
            f" {{'terms': {{'field': 'x'}}}} ({exc})",
            field=name,
        ) from None


class _Checker:
    def __init__(self, catalog: FieldCatalog) -> None:
        self.catalog = catalog

    def check(self, name: str, body: dict[str, Any], ctx: tuple[str, ...]) -> dict[str, Any]:
        """``body`` with its fields checked (and a text field replaced by its keyword
        subfield), ``ctx`` being the nested paths of the enclosing ``nested`` aggregations."""
        kind = kind_of(body)
        if kind is None:
            raise QueryValidationError(f"Aggregation {name!r} has no type", field=name)
        params = body[kind]
        inner_ctx = ctx
        if isinstance(params, Mapping):
            if kind == "nested":
                inner_ctx = self.nested_path(name, params.get("path"), ctx)
            elif kind == "reverse_nested":
                inner_ctx = self.reverse_path(name, params.get("path"), ctx)
            params = self.params(name, kind, params, inner_ctx)
        out = {**body, kind: params}
        subs = body.get("aggs")
        if isinstance(subs, Mapping):
            out["aggs"] = {
                sub: self.check(sub, dict(sub_body), inner_ctx) for sub, sub_body in subs.items()
            }
        return out

    def params(
        self, name: str, kind: str, params: Mapping[str, Any], ctx: tuple[str, ...]
    ) -> dict[str, Any]:
        out = dict(params)
        if kind in _QUERY_KINDS:
            return out
        field = out.get("field")
        if isinstance(field, str):
            info = self.field(name, field, ctx)
            if info.is_text and kind not in _TEXT_KINDS:
                if info.keyword is None:
                    raise QueryValidationError(
                        f"Aggregation {name!r} ({kind}) needs exact values; the text field"
                        f" {field!r} has no keyword subfield",
                        field=field,
                    )
                out["field"] = info.keyword
            else:
                out["field"] = info.path  # an alias or a tenant's custom field: the real path
        for key, value in out.items():
            if key not in ("field", "script", "query"):
                self.inner_fields(name, value, ctx)
        return out

    def inner_fields(self, name: str, value: Any, ctx: tuple[str, ...]) -> None:
        """Check the ``field`` entries inside parameters (composite sources, multi_terms,
        weighted_avg)."""
        if isinstance(value, Mapping):
            for key, inner in value.items():
                if key == "field" and isinstance(inner, str):
                    self.field(name, inner, ctx)
                elif key not in ("script", "query"):
                    self.inner_fields(name, inner, ctx)
        elif isinstance(value, list):
            for inner in value:
                self.inner_fields(name, inner, ctx)

    def field(self, name: str, field: str, ctx: tuple[str, ...]) -> FieldInfo:
        info = self.resolve(name, field)
        if info.is_container:
            raise QueryValidationError(
                f"Aggregation {name!r}: cannot aggregate on {field!r}, it is an object; name one"
                " of its fields",
                field=field,
            )
        if info.nested_paths != ctx:
            if info.nested_paths:
                where = f"inside A('nested', path={info.nested_paths[-1]!r})"
            else:
                where = "inside A('reverse_nested')"
            raise QueryValidationError(
                f"Aggregation {name!r}: the field {field!r} is"
                f" {_describe(info.nested_paths)}, but the aggregation is"
                f" {_describe(ctx)}; put it {where} (or use the expression syntax, which"
                " adds the nested aggregations itself)",
                field=field,
            )
        return info

    def nested_path(self, name: str, path: Any, ctx: tuple[str, ...]) -> tuple[str, ...]:
        if not isinstance(path, str):
            raise QueryValidationError(
                f"Aggregation {name!r}: a nested aggregation needs path='...'", field=name
            )
        info = self.resolve(name, path)
        if info.type != "nested":
            raise QueryValidationError(
                f"Aggregation {name!r}: {path!r} is not a nested field", field=path
            )
        if info.nested_paths != ctx:
            raise QueryValidationError(
                f"Aggregation {name!r}: the nested path {path!r} is"
                f" {_describe(info.nested_paths)}, but the aggregation is {_describe(ctx)}",
                field=path,
            )
        return (*ctx, path)

    def reverse_path(self, name: str, path: Any, ctx: tuple[str, ...]) -> tuple[str, ...]:
        if path is None:
            return ()
        if not isinstance(path, str) or path not in ctx:
            raise QueryValidationError(
                f"Aggregation {name!r}: reverse_nested path={path!r} is not one of the"
                f" enclosing nested paths ({', '.join(ctx) or 'none'})",
                field=path if isinstance(path, str) else name,
            )
        return ctx[: ctx.index(path) + 1]

    def resolve(self, name: str, field: str) -> FieldInfo:
        info = self.catalog.get(field)
        if info is None:
            raise QueryValidationError(
                f"Aggregation {name!r}: {unknown_field_message(field, self.catalog)}",
                field=field,
            )
        return info


def _describe(paths: tuple[str, ...]) -> str:
    return f"under the nested path {paths[-1]!r}" if paths else "at the root"
