"""Sort expressions and dsl-style sort dicts compiled to an Elasticsearch ``sort`` list."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

from esmapper._text import article
from esmapper.errors import QueryValidationError
from esmapper.model._refs import FieldRef, field_name
from esmapper.model.catalog import FieldCatalog
from esmapper.query._resolve import resolve_field
from esmapper.query.fields import check_ref_owner

__all__ = ["SortSpec", "compile_sort", "named_sort", "sorts_on_id"]

#: What ``sort=`` accepts: an expression, a dsl-style dict, a typed field reference
#: (``Employee.name``, ``-Employee.age``), or a list of those.
SortSpec: TypeAlias = (
    str | FieldRef | Mapping[str, Any] | Sequence[str | FieldRef | Mapping[str, Any]] | None
)


def named_sort(expr: Any, model: type | None = None) -> Any:
    """``expr`` (``sort=``) with each typed field reference replaced by its sort expression:
    ``-Employee.age`` -> ``"-age"``, ``Employee.address.city`` -> ``"address.city"`` (see
    :mod:`esmapper.model._refs`); the rest passes unchanged (checked by :func:`compile_sort`).
    A reference of a model unrelated to ``model`` raises
    :class:`~esmapper.errors.QueryValidationError`."""
    if expr is None or isinstance(expr, str | Mapping):
        return expr
    if field_name(expr) is not None:
        return _sort_named(expr, model)
    if isinstance(expr, Sequence) and not isinstance(expr, bytes | bytearray):
        return [_sort_named(item, model) for item in expr]
    return expr


def _sort_named(item: Any, model: type | None) -> Any:
    name = field_name(item)
    if name is None:
        return item
    check_ref_owner(item, model, "sort")
    return item.expression if isinstance(item, FieldRef) else name


_ORDERS = ("asc", "desc")
_MODES = ("min", "max", "sum", "avg", "median")
_NUMERIC_TYPES = ("double", "long", "date", "date_nanos")
_OPTIONS = ("order", "missing", "mode", "numeric_type", "unmapped_type", "format", "nested")


def compile_sort(expr: SortSpec, catalog: FieldCatalog) -> list[dict[str, Any]]:
    """The ``sort`` list for ``expr``: ``"-age name"`` -> ``[{"age": {"order": "desc"}},
    {"name.keyword": {"order": "asc"}}]``.

    ``expr`` is one of:

    - a space- (or comma-) separated expression; each name may carry ``-`` (descending) or
      ``+`` (ascending, the default). ``None`` or blank gives ``[]``;
    - a dsl-style dict, ``{"age": "desc"}`` or ``{"age": {"order": "desc", "missing":
      "_last"}}`` (several keys sort in key order). Options: ``order`` (``asc``/``desc``),
      ``missing`` (``_first``, ``_last`` or a value), ``mode`` (``min``, ``max``, ``sum``,
      ``avg``, ``median``), ``numeric_type`` (``double``, ``long``, ``date``,
      ``date_nanos``), ``unmapped_type``, ``format`` and ``nested`` (its ``path`` must be
      the field's outermost nested path; without it the nested context is added for you);
    - a typed field reference: ``Employee.name``, ``-Employee.age`` (descending; see
      :mod:`esmapper.model._refs`);
    - a list of expressions, dicts and references, in sort order (an empty dict or list: no
      sort).

    Field names are checked like the expression syntax:

    - A text field sorts on its sortable subfield (``FieldInfo.sort``: ``.sort`` or
      ``.keyword``); a text field without one, an object, or an unknown name (with close names
      suggested) is a :class:`~esmapper.errors.QueryValidationError` with the position.
    - A field under ``nested`` paths gets ``"nested": {"path": ...}`` (one level per path,
      outermost first).
    - ``_score`` sorts best first unless written ``+_score``; ``_doc`` is index order.
    - ``id``/``_id`` sort on the mapped ``id`` field. Sorting on the ``_id`` metadata field is
      refused: Elasticsearch 8+ disables fielddata on ``_id`` by default
      (``indices.id_field_data.enabled``), so the model must map ``id`` as a keyword.

    Anything else (a number, a dict whose value is not an order or a dict of the options
    above, a list holding something other than strings and dicts) raises
    :class:`~esmapper.errors.QueryValidationError` naming ``sort``.
    """
    expr = named_sort(expr)
    if expr is None:
        return []
    if isinstance(expr, str):
        return _expression(expr, catalog)
    if isinstance(expr, Mapping):
        return _dsl(expr, catalog)
    if isinstance(expr, Sequence) and not isinstance(expr, bytes | bytearray):
        result: list[dict[str, Any]] = []
        for item in expr:
            if isinstance(item, str):
                result.extend(_expression(item, catalog))
            elif isinstance(item, Mapping):
                result.extend(_dsl(item, catalog))
            else:
                raise _shape_error(f"a list item {item!r}")
        return result
    raise _shape_error(repr(expr))


def sorts_on_id(sort: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a compiled ``sort`` list already orders by the mapped ``id`` field."""
    return any("id" in entry for entry in sort)


def _shape_error(what: str) -> QueryValidationError:
    return QueryValidationError(
        f"sort takes an expression such as '-age name', a dict such as {{'age': 'desc'}}, or"
        f" a list of those; got {what}",
        field="sort",
    )


def _expression(text: str, catalog: FieldCatalog) -> list[dict[str, Any]]:
    return [_compile_one(token, position, text, catalog) for token, position in _tokens(text)]


def _tokens(text: str) -> list[tuple[str, int]]:
    tokens: list[tuple[str, int]] = []
    start: int | None = None
    for i, char in enumerate(text + " "):
        if char.isspace() or char == ",":
            if start is not None:
                tokens.append((text[start:i], start))
                start = None
        elif start is None:
            start = i
    return tokens


def _compile_one(token: str, position: int, text: str, catalog: FieldCatalog) -> dict[str, Any]:
    descending: bool | None = None
    name = token
    if token[0] in "+-":
        descending = token[0] == "-"
        name = token[1:]
    if not name or name[0] in "+-":
        raise QueryValidationError(
            f"Invalid sort term {token!r}: expected field, -field or +field",
            position=position,
            expression=text,
        )
    if name == "_score":
        return {"_score": {"order": "asc" if descending is False else "desc"}}
    if name == "_doc":
        return {"_doc": {"order": "desc" if descending else "asc"}}
    path, nested = _target(name, catalog, position, text)
    clause: dict[str, Any] = {"order": "desc" if descending else "asc"}
    if nested is not None:
        clause["nested"] = nested
    return {path: clause}


def _target(
    name: str, catalog: FieldCatalog, position: int | None, text: str | None
) -> tuple[str, dict[str, Any] | None]:
    """The path to sort on for field ``name`` and its ``nested`` context (``None`` at the
    root); a :class:`QueryValidationError` if the field cannot be sorted on."""
    if name in ("id", "_id"):
        if "id" not in catalog:
            raise QueryValidationError(
                f"Cannot sort on {name!r}: Elasticsearch does not sort on the _id metadata"
                " field (no fielddata since 8.0); map an 'id' keyword field to sort by id",
                field=name,
                position=position,
                expression=text,
            )
        name = "id"
    info = resolve_field(catalog, name, position=position, expression=text)
    if info.is_container or info.sort is None:
        kind = (
            "an object"
            if info.is_container
            else f"{article(str(info.type))} field without a sortable"
        )
        detail = "" if info.is_container else " (keyword or sort) subfield"
        raise QueryValidationError(
            f"Cannot sort on {name!r}: it is {kind}{detail}",
            field=name,
            position=position,
            expression=text,
        )
    nested: dict[str, Any] | None = None
    for path in reversed(info.nested_paths):
        nested = {"path": path} if nested is None else {"path": path, "nested": nested}
    return info.sort, nested


# -- dsl-style dicts -------------------------------------------------------------------------


def _dsl(spec: Mapping[str, Any], catalog: FieldCatalog) -> list[dict[str, Any]]:
    return [_dsl_one(name, value, catalog) for name, value in spec.items()]


def _dsl_one(name: Any, value: Any, catalog: FieldCatalog) -> dict[str, Any]:
    if not isinstance(name, str) or not name:
        raise _shape_error(f"the dict key {name!r} (keys are field names)")
    if isinstance(value, str):
        options: dict[str, Any] = {"order": value}
    elif isinstance(value, Mapping):
        options = dict(value)
    else:
        raise _option_error(
            name, f"{value!r}: the value is 'asc', 'desc' or a dict of sort options"
        )
    unknown = [key for key in options if key not in _OPTIONS]
    if unknown:
        raise _option_error(
            name, f"unknown option {unknown[0]!r}; sort options are {', '.join(_OPTIONS)}"
        )
    order = options.get("order", "desc" if name == "_score" else "asc")
    if not isinstance(order, str) or order.lower() not in _ORDERS:
        raise _option_error(name, f"order={order!r} is not 'asc' or 'desc'")
    clause: dict[str, Any] = {"order": order.lower()}
    if name in ("_score", "_doc"):
        if len(options) > ("order" in options):
            raise _option_error(name, f"{name} takes only an order")
        return {name: clause}
    try:
        path, nested = _target(name, catalog, None, None)
    except QueryValidationError as exc:
        raise _option_error(name, str(exc)) from None
    _check_options(name, options)
    clause.update((k, v) for k, v in options.items() if k not in ("order", "nested"))
    if "nested" in options:
        clause["nested"] = _user_nested(name, options["nested"], nested)
    elif nested is not None:
        clause["nested"] = nested
    return {path: clause}


def _check_options(name: str, options: Mapping[str, Any]) -> None:
    missing = options.get("missing", "_last")
    if not isinstance(missing, str | int | float):  # a bool is an int
        raise _option_error(name, f"missing={missing!r}: use '_first', '_last' or a value")
    for key, allowed in (("mode", _MODES), ("numeric_type", _NUMERIC_TYPES)):
        if key in options and options[key] not in allowed:
            raise _option_error(
                name, f"{key}={options[key]!r} is not one of {', '.join(map(repr, allowed))}"
            )
    for key in ("unmapped_type", "format"):
        if key in options and not isinstance(options[key], str):
            raise _option_error(name, f"{key}={options[key]!r} is not a string")


def _user_nested(name: str, given: Any, derived: dict[str, Any] | None) -> dict[str, Any]:
    """A caller's ``nested`` option (it may add a ``filter``), checked against the field."""
    if derived is None:
        raise _option_error(name, "the field is not under a nested path; drop 'nested'")
    if not isinstance(given, Mapping) or given.get("path") != derived["path"]:
        raise _option_error(
            name, f"nested={given!r}: its path must be {derived['path']!r} (the field's)"
        )
    return dict(given)


def _option_error(name: str, why: str) -> QueryValidationError:
    return QueryValidationError(f"Invalid sort on {name!r}: {why}", field=name)
