"""Sort expressions compiled to an Elasticsearch ``sort`` list (QY-15)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from esmapper.errors import QueryValidationError
from esmapper.model.catalog import FieldCatalog
from esmapper.query._resolve import resolve_field

__all__ = ["compile_sort"]


def compile_sort(expr: str | Sequence[str] | None, catalog: FieldCatalog) -> list[dict[str, Any]]:
    """The ``sort`` list for ``expr``: ``"-age name"`` -> ``[{"age": {"order": "desc"}},
    {"name.keyword": {"order": "asc"}}]``.

    ``expr`` is a space-separated string or a sequence of such strings; each name may carry
    ``-`` (descending) or ``+`` (ascending, the default). ``None`` or blank gives ``[]``.

    - A text field sorts on its sortable subfield (``FieldInfo.sort``: ``.sort`` or
      ``.keyword``); a text field without one, an object, or an unknown name (with close names
      suggested) is a :class:`~esmapper.errors.QueryValidationError` with the position.
    - A field under ``nested`` paths gets ``"nested": {"path": ...}`` (one level per path,
      outermost first).
    - ``_score`` sorts best first unless written ``+_score``; ``_doc`` is index order.
    - ``id``/``_id`` sort on the mapped ``id`` field. Sorting on the ``_id`` metadata field is
      refused: Elasticsearch 8+ disables fielddata on ``_id`` by default
      (``indices.id_field_data.enabled``), so the model must map ``id`` as a keyword.
    """
    if expr is None:
        return []
    text = expr if isinstance(expr, str) else " ".join(expr)
    result: list[dict[str, Any]] = []
    for token, position in _tokens(text):
        result.append(_compile_one(token, position, text, catalog))
    return result


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
    order = "desc" if descending else "asc"
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
        kind = "an object" if info.is_container else f"a {info.type} field without a sortable"
        detail = "" if info.is_container else " (keyword or sort) subfield"
        raise QueryValidationError(
            f"Cannot sort on {name!r}: it is {kind}{detail}",
            field=name,
            position=position,
            expression=text,
        )
    clause: dict[str, Any] = {"order": order}
    if info.nested_paths:
        nested: dict[str, Any] | None = None
        for path in reversed(info.nested_paths):
            nested = {"path": path} if nested is None else {"path": path, "nested": nested}
        clause["nested"] = nested
    return {info.sort: clause}
