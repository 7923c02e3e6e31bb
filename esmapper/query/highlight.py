"""``highlight=`` of a search compiled to an Elasticsearch ``highlight`` body."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

from esmapper.errors import QueryValidationError
from esmapper.model.catalog import FieldCatalog
from esmapper.query._resolve import matches_any, resolve_field

__all__ = ["HighlightSpec", "compile_highlight", "highlight_body", "needs_version"]

#: What ``highlight=`` accepts: field names, or field name -> Elasticsearch field options.
HighlightSpec: TypeAlias = str | Sequence[str] | Mapping[str, Mapping[str, Any]] | None

_STRING_TYPES = frozenset({"keyword", "constant_keyword", "wildcard"})


def compile_highlight(spec: HighlightSpec, catalog: FieldCatalog) -> dict[str, Any] | None:
    """The ``highlight`` body for ``spec`` (``None`` when nothing is highlighted).

    ``spec`` is a field name (several separated by spaces or commas), a list of names, or a
    dict name -> the field's highlight options as Elasticsearch takes them
    (``{"title": {"number_of_fragments": 0}}``). A name may be a wildcard pattern
    (``"title*"``), which must match at least one field. ``{"title": ...}`` becomes
    ``{"fields": {"title": {...}}}`` (sent in the form of the server's version:
    :func:`highlight_body`); each hit then carries ``highlight``, a dict field -> list of
    fragments.

    Raises :class:`~esmapper.errors.QueryValidationError` for an unknown field (close names
    suggested), an object or a field that holds no text (numbers, dates: nothing to
    highlight), options that are not a dict, or a ``spec`` of another type (naming
    ``highlight``).
    """
    if spec is None:
        return None
    if isinstance(spec, str):
        fields: dict[str, Any] = dict.fromkeys(spec.replace(",", " ").split())
    elif isinstance(spec, Mapping):
        fields = dict(spec)
    elif isinstance(spec, Sequence) and not isinstance(spec, bytes | bytearray):
        fields = dict.fromkeys(spec)
    else:
        raise _shape_error(repr(spec))
    if not fields:
        return None
    out: dict[str, Any] = {}
    for name, options in fields.items():
        if not isinstance(name, str) or not name:
            raise _shape_error(f"the field name {name!r}")
        if options is not None and not isinstance(options, Mapping):
            raise QueryValidationError(
                f"highlight options of {name!r} must be a dict such as"
                f" {{'number_of_fragments': 0}}, not {options!r}",
                field=name,
            )
        out[_field_path(name, catalog)] = dict(options or {})
    return {"fields": out}


#: The first version whose specification types ``highlight.fields`` as a list of single-key
#: objects (8.18-9.0: one object keyed by field, the only form they declare).
LIST_FORM_SINCE = (9, 1)


def needs_version(highlight: Mapping[str, Any] | None) -> bool:
    """Whether the form of ``highlight`` (a :func:`compile_highlight` body) depends on the
    server's version: two or more fields (one field is a single-key object, which every
    version takes)."""
    return highlight is not None and len(highlight.get("fields") or ()) > 1


def highlight_body(highlight: Mapping[str, Any], version: tuple[int, int] | None) -> dict[str, Any]:
    """``highlight`` (a :func:`compile_highlight` body) in the form the server's version
    declares: ``"fields"`` as one object keyed by field on 8.18-9.0 (and when the version
    is unknown: every server accepts it), as a list of single-key objects (the same order)
    from 9.1, whose specification allows only that for two or more fields. Hits carry
    ``highlight`` keyed by field either way."""
    fields = highlight.get("fields")
    if version is None or version < LIST_FORM_SINCE or not isinstance(fields, Mapping):
        return dict(highlight)
    if len(fields) < 2:
        return dict(highlight)
    return {**highlight, "fields": [{name: options} for name, options in fields.items()]}


def _field_path(name: str, catalog: FieldCatalog) -> str:
    if "*" in name or "?" in name:
        if not matches_any(name, catalog):
            raise QueryValidationError(
                f"highlight: the field pattern {name!r} matches no field", field=name
            )
        return name
    info = resolve_field(catalog, name, position=None, expression=None)
    if not (info.is_text or info.type in _STRING_TYPES):
        article = "an" if info.type[0] in "aeiou" else "a"
        kind = "an object" if info.is_container else f"{article} {info.type} field"
        raise QueryValidationError(
            f"Cannot highlight {name!r}: it is {kind}; highlight a text or keyword field",
            field=name,
        )
    return info.path


def _shape_error(what: str) -> QueryValidationError:
    return QueryValidationError(
        "highlight takes a field name, a list of field names, or a dict field -> highlight"
        f" options; got {what}",
        field="highlight",
    )
