"""Aggregation expressions compiled to raw aggregation bodies.

``compile_aggregations("terms:company_id avg:age date:created_utc~1M", catalog)`` returns the
``aggs`` part of a search body, keyed by result name (``{op}_{field}``, the field as written)::

    {"terms_company_id": {"terms": {"field": "company_id"}},
     "avg_age": {"avg": {"field": "age"}},
     "date_created_utc": {"date_histogram": {"field": "created_utc",
                                             "calendar_interval": "1M"}}}

Operations: ``terms`` (``~N`` size, ``^N`` min_doc_count, ``@include:x @exclude:y @missing:v
@min:N``, sub-aggregations, ``+op:f``/``-op:f`` children order the buckets), ``date``
(date_histogram: ``~1d/1w/1M/1q/1y`` calendar, ``~5m``/``~12h``/``~2d`` fixed, default ``1d``;
``^Europe/Paris`` time zone; sub-aggregations), ``missing`` (sub-aggregations), ``min``,
``max``, ``avg``, ``sum``, ``stats``, ``percentiles`` (``~25,50,99`` percents),
``cardinality``, and ``tophits:_`` (``~N`` size; only inside a bucket aggregation, named
``tophits``). Aggregations on fields under a ``nested`` path are grouped under ONE
``nested_{path}`` aggregation per level; a sub-aggregation on a root field under a
nested bucket goes under one ``reverse_nested``. Results are parsed by
:func:`parse_aggregations`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from esmapper.errors import QueryValidationError
from esmapper.model.catalog import FieldCatalog, FieldInfo
from esmapper.query._agg_syntax import AggSpec, parse_aggregation_expression
from esmapper.query._dsl_aggs import AggregationsSpec, compile_dsl_aggregations
from esmapper.query._resolve import resolve_field
from esmapper.query.aggregates import parse_aggregations

__all__ = ["compile_aggregations", "parse_aggregations"]

BUCKET_OPS = frozenset({"terms", "date", "missing"})
METRIC_OPS = frozenset({"min", "max", "avg", "sum", "stats", "percentiles"})
ORDERABLE_OPS = frozenset({"min", "max", "avg", "sum", "cardinality"})
ALL_OPS = BUCKET_OPS | METRIC_OPS | {"cardinality", "tophits"}
#: The calendar intervals ``~`` accepts as a unit or a word.
_CALENDAR = {
    "d": "1d", "w": "1w", "M": "1M", "q": "1q", "y": "1y",
    "minute": "1m", "hour": "1h", "day": "1d", "week": "1w",
    "month": "1M", "quarter": "1q", "year": "1y",
}  # fmt: skip
_INTERVAL = re.compile(r"(\d+)(ms|s|m|h|d|w|M|q|y)")


def compile_aggregations(
    expr: AggregationsSpec, catalog: FieldCatalog
) -> dict[str, dict[str, Any]]:
    """The raw aggregation bodies for ``expr``, keyed by result name (``{}`` for blank/None).

    ``expr`` is an expression (below), or ``elasticsearch.dsl`` aggregation objects or raw
    aggregation dicts (see :func:`~esmapper.query._dsl_aggs.compile_dsl_aggregations`).

    Raises :class:`~esmapper.errors.QueryValidationError` with the position for a syntax
    error, an unknown operation, an unknown field (close names suggested), an operation that
    does not fit the field type (e.g. ``avg`` on a keyword, ``terms`` on a text field without
    a keyword subfield), a bad modifier or option, or two aggregations with the same name.
    """
    if expr is None:
        return {}
    if not isinstance(expr, str):
        return compile_dsl_aggregations(expr, catalog)
    if not expr.strip():
        return {}
    specs = parse_aggregation_expression(expr)
    return _Compiler(expr, catalog).level(specs, (), parent=None)


class _Compiler:
    def __init__(self, text: str, catalog: FieldCatalog) -> None:
        self.text = text
        self.catalog = catalog

    def error(self, message: str, position: int | None, field: str | None = None) -> Exception:
        return QueryValidationError(message, field=field, position=position, expression=self.text)

    def level(
        self, specs: Sequence[AggSpec], ctx: tuple[str, ...], parent: AggSpec | None
    ) -> dict[str, dict[str, Any]]:
        """The aggregations of one level, inside the nested paths ``ctx``.

        Aggregations on fields deeper in nested paths are grouped under one
        ``nested_{path}`` per path; those on fields outside ``ctx`` (a root field under a
        nested bucket) under one ``reverse_nested`` (``reverse_nested_{path}`` when going
        back to an outer nested path rather than to the root).
        """
        out: dict[str, dict[str, Any]] = {}
        groups: dict[tuple[str, ...], list[AggSpec]] = {}
        for spec in specs:
            if spec.op not in ALL_OPS:
                raise self.error(
                    f"Unknown aggregation {spec.op!r}; expected one of"
                    f" {', '.join(sorted(ALL_OPS))}",
                    spec.op_position,
                )
            if spec.order is not None and parent is None:
                raise self.error(
                    "a +/- prefix orders the buckets of a terms aggregation; use it inside"
                    " terms:(field -avg:other)",
                    spec.op_position,
                )
            info = self.field(spec, parent)
            paths = info.nested_paths if info is not None else ctx
            if paths[: len(ctx)] != ctx:  # outside the current nested object: go back up
                common = 0
                while common < len(paths) and paths[common] == ctx[common]:
                    common += 1
                groups.setdefault(paths[:common], []).append(spec)
            elif len(paths) > len(ctx):
                groups.setdefault(paths[: len(ctx) + 1], []).append(spec)
            else:
                self.put(out, self.name(spec), self.body(spec, info, paths), spec)
        for target, members in groups.items():
            inner = self.level(members, target, parent)
            if len(target) > len(ctx):
                name, agg = f"nested_{target[-1]}", {"nested": {"path": target[-1]}}
            elif target:
                name, agg = f"reverse_nested_{target[-1]}", {"reverse_nested": {"path": target[-1]}}
            else:
                name, agg = "reverse_nested", {"reverse_nested": {}}
            self.put(out, name, {**agg, "aggs": inner}, members[0])
        return out

    def put(self, out: dict[str, Any], name: str, body: dict[str, Any], spec: AggSpec) -> None:
        if name in out:
            raise self.error(f"Duplicate aggregation name {name!r}", spec.op_position)
        out[name] = body

    @staticmethod
    def name(spec: AggSpec) -> str:
        return "tophits" if spec.op == "tophits" else f"{spec.op}_{spec.field}"

    def field(self, spec: AggSpec, parent: AggSpec | None) -> FieldInfo | None:
        """The field of ``spec`` (``None`` for ``tophits:_``), checked against the op."""
        if spec.op == "tophits":
            if spec.field != "_":
                raise self.error("write tophits:_ (top hits take no field)", spec.field_position)
            if parent is None or parent.op not in BUCKET_OPS:
                raise self.error(
                    "tophits:_ is only allowed inside a bucket aggregation, e.g."
                    " terms:(company_id tophits:_)",
                    spec.op_position,
                )
            return None
        info = resolve_field(
            self.catalog, spec.field, position=spec.field_position, expression=self.text
        )
        if info.is_container:
            raise self.error(
                f"Cannot aggregate on {spec.field!r}: it is an object; name one of its fields",
                spec.field_position,
                spec.field,
            )
        return info

    def exact(self, spec: AggSpec, info: FieldInfo) -> str:
        path = info.exact_path
        if path is None:
            raise self.error(
                f"{spec.op}:{spec.field} needs an exact value; the text field {spec.field!r} has"
                " no keyword subfield",
                spec.field_position,
                spec.field,
            )
        return path

    def body(self, spec: AggSpec, info: FieldInfo | None, ctx: tuple[str, ...]) -> dict[str, Any]:
        """The body of one aggregation (with its sub-aggregations and order)."""
        if spec.children and spec.op not in BUCKET_OPS:
            raise self.error(
                f"{spec.op} takes no sub-aggregations (only {', '.join(sorted(BUCKET_OPS))} do)",
                spec.children[0].op_position,
            )
        if spec.options and spec.op != "terms":
            raise self.error(
                f"@{spec.options[0].name} is only valid in terms:(...)", spec.options[0].position
            )
        if spec.order is not None and spec.op not in ORDERABLE_OPS:
            raise self.error(
                f"only single-value metrics ({', '.join(sorted(ORDERABLE_OPS))}) can order"
                " buckets (+op:field / -op:field)",
                spec.op_position,
            )
        self.check_modifiers(spec)
        if info is None:  # tophits
            size = self.integer(spec.modifier, spec.modifier_position, "size", minimum=1)
            return {"top_hits": {} if size is None else {"size": size}}
        if spec.op == "terms":
            agg: dict[str, Any] = {"terms": self.terms(spec, info)}
        elif spec.op == "date":
            agg = {"date_histogram": self.date(spec, info)}
        elif spec.op in ("cardinality", "missing"):
            agg = {spec.op: {"field": self.exact(spec, info)}}
        else:
            agg = {spec.op: self.metric(spec, info)}
        if spec.children:
            agg["aggs"] = self.level(spec.children, ctx, parent=spec)
            order = [
                self.order_key(child, spec, agg["aggs"]) for child in spec.children if child.order
            ]
            if order:
                agg["terms"]["order"] = order
        return agg

    def order_key(
        self, child: AggSpec, parent: AggSpec, siblings: dict[str, Any]
    ) -> dict[str, str]:
        """``{name: "asc"|"desc"}`` for a child that orders the buckets of ``parent``."""
        if parent.op != "terms":
            raise self.error("only terms buckets can be ordered (+op / -op)", child.op_position)
        name = self.name(child)
        if name not in siblings:
            raise self.error(
                "cannot order buckets by an aggregation on a nested field", child.op_position
            )
        return {name: str(child.order)}

    def check_modifiers(self, spec: AggSpec) -> None:
        if spec.modifier is not None and spec.op not in ("terms", "date", "percentiles", "tophits"):
            raise self.error(f"'~' is not valid on {spec.op}", spec.modifier_position)
        if spec.boost is not None and spec.op not in ("terms", "date"):
            raise self.error(f"'^' is not valid on {spec.op}", spec.boost_position)

    def integer(
        self, value: str | None, position: int | None, what: str, *, minimum: int
    ) -> int | None:
        if value is None:
            return None
        if not value.isdigit() or int(value) < minimum:
            raise self.error(f"{what} must be an integer >= {minimum}, not {value!r}", position)
        return int(value)

    def terms(self, spec: AggSpec, info: FieldInfo) -> dict[str, Any]:
        body: dict[str, Any] = {"field": self.exact(spec, info)}
        size = self.integer(spec.modifier, spec.modifier_position, "terms size (~N)", minimum=1)
        if size is not None:
            body["size"] = size
        min_count = self.integer(spec.boost, spec.boost_position, "min_doc_count (^N)", minimum=0)
        for option in spec.options:
            if option.name in ("include", "exclude"):
                body.setdefault(option.name, []).append(option.value)
            elif option.name == "missing":
                body["missing"] = option.value
            elif option.name == "min":
                min_count = self.integer(option.value, option.position, "@min", minimum=0)
            else:
                raise self.error(
                    f"Unknown option @{option.name}; terms accepts @include, @exclude, @missing"
                    " and @min",
                    option.position,
                )
        if min_count is not None:
            body["min_doc_count"] = min_count
        return body

    def date(self, spec: AggSpec, info: FieldInfo) -> dict[str, Any]:
        if not info.is_date:
            raise self.error(
                f"date:{spec.field} needs a date field; {spec.field!r} is {info.type}",
                spec.field_position,
                spec.field,
            )
        body: dict[str, Any] = {"field": info.path}
        key, interval = self.interval(spec.modifier or "1d", spec.modifier_position)
        body[key] = interval
        if spec.boost is not None:
            body["time_zone"] = spec.boost
        return body

    def interval(self, text: str, position: int | None) -> tuple[str, str]:
        """(``calendar_interval`` | ``fixed_interval``, value) for a ``~`` interval."""
        if text in _CALENDAR:
            return "calendar_interval", _CALENDAR[text]
        match = _INTERVAL.fullmatch(text)
        if match is None or int(match.group(1)) < 1:
            raise self.error(
                f"Invalid interval {text!r}: use 1d, 1w, 1M, 1q, 1y (calendar) or a fixed"
                " interval such as 30s, 5m, 12h, 2d",
                position,
            )
        count, unit = int(match.group(1)), match.group(2)
        if unit in ("w", "M", "q", "y"):
            if count != 1:
                raise self.error(
                    f"Invalid interval {text!r}: weeks, months, quarters and years only come"
                    " as 1w, 1M, 1q, 1y",
                    position,
                )
            return "calendar_interval", text
        if count == 1 and unit == "d":
            return "calendar_interval", text
        return "fixed_interval", text

    def metric(self, spec: AggSpec, info: FieldInfo) -> dict[str, Any]:
        if not (info.is_numeric or info.is_date or info.type == "boolean"):
            raise self.error(
                f"{spec.op}:{spec.field} needs a numeric or date field; {spec.field!r} is"
                f" {info.type}",
                spec.field_position,
                spec.field,
            )
        body: dict[str, Any] = {"field": info.path}
        if spec.op == "percentiles" and spec.modifier is not None:
            percents: list[float] = []
            for part in spec.modifier.split(","):
                try:
                    value = float(part)
                except ValueError:
                    value = -1.0
                if not 0 <= value <= 100:
                    raise self.error(
                        f"percentiles (~) are numbers from 0 to 100 separated by commas, not"
                        f" {spec.modifier!r}",
                        spec.modifier_position,
                    )
                percents.append(value)
            body["percents"] = percents
        return body
