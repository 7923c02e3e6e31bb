"""Field-name resolution shared by the filter, sort, aggregation and field-selection compilers.

Every compiler turns a user-written field name into a :class:`~esmapper.model.catalog.FieldInfo`
the same way, and reports an unknown name the same way: a
:class:`~esmapper.errors.QueryValidationError` naming the field, the position and up to three
close names (``difflib``).
"""

from __future__ import annotations

import difflib
import fnmatch

from esmapper.errors import QueryValidationError
from esmapper.model.catalog import FieldCatalog, FieldInfo

__all__ = [
    "ID_NAMES",
    "is_document_id",
    "matches_any",
    "resolve_field",
    "suggest",
    "unknown_field_message",
]

#: Names that mean "the document id" in expressions (``id`` only when the mapping has no
#: ``id`` field of its own).
ID_NAMES = frozenset({"_id", "id"})


def is_document_id(name: str, catalog: FieldCatalog) -> bool:
    """True when ``name`` designates the Elasticsearch ``_id`` rather than a mapped field.

    ``_id`` always does; ``id`` does unless the mapping has a field called ``id``.
    """
    if name == "_id":
        return True
    return name == "id" and name not in catalog


def matches_any(pattern: str, catalog: FieldCatalog) -> bool:
    """Whether the wildcard ``pattern`` matches a field: a declared one first, the server's
    (:meth:`FieldCatalog.names`) only when none does (so a pattern of declared fields sends
    nothing)."""
    if any(fnmatch.fnmatchcase(n, pattern) for n in catalog.declared_names()):
        return True
    return any(fnmatch.fnmatchcase(n, pattern) for n in catalog.names())


def suggest(name: str, catalog: FieldCatalog) -> list[str]:
    """Up to three mapped names close to ``name`` (for "did you mean" messages): declared
    ones and, in a catalog widened with the server's mapping, the server's."""
    return difflib.get_close_matches(name, catalog.names(), n=3, cutoff=0.6)


def unknown_field_message(name: str, catalog: FieldCatalog) -> str:
    """The message of an unknown-field error: the name and, when any, close names."""
    message = f"Unknown field {name!r}"
    close = suggest(name, catalog)
    if close:
        message += "; did you mean " + " or ".join(repr(c) for c in close) + "?"
    return message


def resolve_field(
    catalog: FieldCatalog,
    name: str,
    *,
    position: int | None,
    expression: str | None,
) -> FieldInfo:
    """The catalog entry for ``name``; a ``QueryValidationError`` if the name is unknown.

    The error names the field, carries ``position`` (0-based offset in ``expression``) and
    suggests close names.
    """
    try:
        return catalog.resolve(name)
    except KeyError:
        raise QueryValidationError(
            unknown_field_message(name, catalog),
            field=name,
            position=position,
            expression=expression,
        ) from None
