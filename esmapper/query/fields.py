"""Field selection: ``_source`` includes/excludes, field masks and their merge."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from typing import Any

from esmapper.errors import QueryValidationError
from esmapper.model._refs import FieldRef, field_name
from esmapper.model.catalog import FieldCatalog
from esmapper.query._resolve import ID_NAMES, matches_any, unknown_field_message

__all__ = [
    "FieldSelection",
    "check_ref_owner",
    "field_paths",
    "merge_source_filter",
    "named_fields",
    "parse_field_mask",
    "validate_source_fields",
]

#: Deepest accepted parenthesis nesting in a field mask.
MAX_MASK_DEPTH = 32
_DELIMITERS = frozenset(",()")

#: What ``includes=`` / ``excludes=`` accept: names or field masks, typed field references
#: (``Employee.name``), one or an iterable of them.
FieldSelection = str | FieldRef | Iterable[str | FieldRef] | None


def check_ref_owner(ref: Any, model: type | None, keyword: str) -> None:
    """Refuse a :class:`~esmapper.model._refs.FieldRef` of a model unrelated to ``model`` (the
    one searched): ``QueryValidationError`` naming both."""
    owner = ref.model if isinstance(ref, FieldRef) else getattr(ref, "__objclass__", None)
    if model is None or not isinstance(owner, type):
        return
    if not (issubclass(model, owner) or issubclass(owner, model)):
        raise QueryValidationError(
            f"{keyword} names {owner.__name__}.{field_name(ref)}, a field of "
            f"{owner.__name__}, in a search of {model.__name__}",
            field=field_name(ref),
        )


def named_fields(selection: Any, model: type | None = None, *, keyword: str = "includes") -> Any:
    """``selection`` (``includes=`` / ``excludes=``) with each typed field reference
    (``Employee.name``, ``Employee.address.city``: see :mod:`esmapper.model._refs`) replaced
    by its field path; strings and anything else pass unchanged (checked later). A reference
    with a direction (``-Employee.age``) or of a model unrelated to ``model`` raises
    :class:`~esmapper.errors.QueryValidationError` naming ``keyword``."""
    if selection is None or isinstance(selection, str):
        return selection
    if field_name(selection) is not None:
        return _named(selection, model, keyword)
    if isinstance(selection, Iterable):
        return [_named(item, model, keyword) for item in selection]
    return selection


def _named(item: Any, model: type | None, keyword: str) -> Any:
    name = field_name(item)
    if name is None:
        return item
    if isinstance(item, FieldRef) and item.descending:
        raise QueryValidationError(
            f"{keyword} takes fields, not a sort direction: {item!r} (write {name})",
            field=name,
        )
    check_ref_owner(item, model, keyword)
    return name


def parse_field_mask(mask: str) -> list[str]:
    """The dotted paths a Google-FieldMask-style ``mask`` selects, in order, without repeats.

    ``"id,name"`` -> ``["id", "name"]``; ``"address(street,city)"`` ->
    ``["address.street", "address.city"]``; ``"results(id,program(name,id))"`` ->
    ``["results.id", "results.program.name", "results.program.id"]``. Wildcards (``address.*``,
    ``internal*``) pass through. Blank -> ``[]``. A malformed mask (empty name, unbalanced
    parentheses, nesting deeper than 32) raises
    :class:`~esmapper.errors.QueryValidationError` with the position.
    """
    return _dedupe(path for path, _ in _MaskParser(mask).parse())


class _MaskParser:
    """Recursive descent over ``list := item ("," item)*``, ``item := name ["(" list ")"]``."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def error(self, message: str) -> QueryValidationError:
        return QueryValidationError(
            f"Invalid field mask: {message} at position {self.pos}",
            position=self.pos,
            expression=self.text,
        )

    def parse(self) -> list[tuple[str, int]]:
        self.skip_spaces()
        if self.pos == len(self.text):
            return []
        paths = self.entries("", 0)
        if self.pos < len(self.text):
            raise self.error(f"unexpected {self.text[self.pos]!r}")
        return paths

    def skip_spaces(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def entries(self, prefix: str, depth: int) -> list[tuple[str, int]]:
        if depth > MAX_MASK_DEPTH:
            raise self.error(f"nested deeper than {MAX_MASK_DEPTH} levels")
        paths = self.item(prefix, depth)
        while self.pos < len(self.text) and self.text[self.pos] == ",":
            self.pos += 1
            paths.extend(self.item(prefix, depth))
        return paths

    def item(self, prefix: str, depth: int) -> list[tuple[str, int]]:
        self.skip_spaces()
        start = self.pos
        while (
            self.pos < len(self.text)
            and self.text[self.pos] not in _DELIMITERS
            and not self.text[self.pos].isspace()
        ):
            self.pos += 1
        name = self.text[start : self.pos]
        if not name or "" in name.split("."):
            self.pos = start
            raise self.error("expected a field name")
        self.skip_spaces()
        if self.pos < len(self.text) and self.text[self.pos] == "(":
            self.pos += 1
            inner = self.entries(f"{prefix}{name}.", depth + 1)
            if self.pos >= len(self.text) or self.text[self.pos] != ")":
                raise self.error("expected ')'")
            self.pos += 1
            self.skip_spaces()
            return inner
        return [(f"{prefix}{name}", start)]


def _dedupe(names: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(names))


def _expand(selection: FieldSelection) -> list[tuple[str, int, str]]:
    """(path, position, mask) for every entry; each string is read as a field mask."""
    if selection is None:
        return []
    named: Any = named_fields(selection)
    masks = [named] if isinstance(named, str) else list(named)
    out: list[tuple[str, int, str]] = []
    for mask in masks:
        if not isinstance(mask, str):
            raise TypeError(f"field selections are strings, not {type(mask)!r}")
        out.extend((path, pos, mask) for path, pos in _MaskParser(mask).parse())
    return out


def field_paths(selection: FieldSelection) -> list[str]:
    """The paths ``selection`` (names or field masks) selects, masks expanded, unchecked."""
    return [path for path, _, _ in _expand(selection)]


def validate_source_fields(fields: FieldSelection, catalog: FieldCatalog) -> list[str]:
    """The paths ``fields`` selects (masks expanded), each checked against ``catalog``.

    A plain name must be a mapped field (or ``id``/``_id``); a wildcard pattern must match
    at least one. Otherwise :class:`~esmapper.errors.QueryValidationError` naming the field,
    with close names suggested.
    """
    entries = _expand(fields)
    for path, position, mask in entries:
        if path in ID_NAMES:
            continue
        if "*" in path or "?" in path:
            if not matches_any(path, catalog):
                raise QueryValidationError(
                    f"Field pattern {path!r} matches no field",
                    field=path,
                    position=position,
                    expression=mask,
                )
        elif not _is_field(path, catalog):
            raise QueryValidationError(
                unknown_field_message(path, catalog),
                field=path,
                position=position,
                expression=mask,
            )
    return _dedupe(path for path, _, _ in entries)


def _is_field(path: str, catalog: FieldCatalog) -> bool:
    """Whether ``path`` is a field, whatever its type: one the indexes behind the alias
    map as different types (refused by a query, sort or aggregation: see
    :class:`esmapper._server_mapping.ServerCatalog`) is a field to select all the same,
    source filtering being the same for every type."""
    try:
        return catalog.get(path) is not None
    except QueryValidationError:  # mapped, differently by two indexes
        return True


def _hides(exclude: str, field: str) -> bool:
    """True when the exclude pattern would remove ``field`` (or part of it) from ``_source``."""
    return (
        exclude == field or fnmatch.fnmatchcase(field, exclude) or field.startswith(exclude + ".")
    )


def merge_source_filter(
    includes: FieldSelection,
    excludes: FieldSelection,
    *,
    required: Iterable[str] = ("id",),
    default_excludes: Iterable[str] = (),
    catalog: FieldCatalog | None = None,
) -> tuple[list[str] | None, list[str] | None]:
    """The ``_source`` ``(includes, excludes)`` to send; ``None`` where there is nothing.

    ``includes`` and ``excludes`` are field names or field masks (a string or an iterable of
    strings, from the query and from the options alike), validated against ``catalog`` when
    given. The rules:

    1. all includes are unioned, all excludes are unioned (order kept, repeats dropped);
    2. ``default_excludes`` apply only when the caller gave no exclude at all;
    3. when any restriction is active, the ``required`` fields (default ``id``) are added to
       the includes if there are includes, and removed from the excludes in every case;
    4. an include wins over an exclude: an exclude that would hide an included (or required)
       field, exactly, through a wildcard, or as its parent object, is dropped.
    """
    if catalog is not None:
        include_list = validate_source_fields(includes, catalog)
        exclude_list = validate_source_fields(excludes, catalog)
    else:
        include_list = _dedupe(path for path, _, _ in _expand(includes))
        exclude_list = _dedupe(path for path, _, _ in _expand(excludes))
    if not exclude_list:
        exclude_list = _dedupe(path for path, _, _ in _expand(list(default_excludes)))
    if not include_list and not exclude_list:
        return None, None
    required_list = _dedupe(required)
    if include_list:
        include_list = _dedupe([*include_list, *required_list])
    kept = include_list or required_list
    exclude_list = [e for e in exclude_list if not any(_hides(e, f) for f in kept)]
    return include_list or None, exclude_list or None
