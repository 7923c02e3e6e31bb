"""The field catalog: what the query layer knows about a model's fields.

A :class:`FieldCatalog` is built from an Elasticsearch mapping (``{"properties": {...}}``)
and answers, for a dotted field name as users write it in expressions (``age``,
``name.keyword``, ``address.city``, ``reviews.rating``), its type, the nested paths that
enclose it and the exact-match / sortable subfield of a text field.

Attribute names are Elasticsearch field names (snake_case everywhere), so no renaming happens
here; ``aliases`` lets an index accept friendly names for real ones.

A catalog may be *widened* with the server's mapping (:meth:`FieldCatalog.with_server`,
:mod:`esmapper._server_mapping`): a name the catalog does not declare is then looked up in
the fields the server maps (read lazily: only when such a name comes up). Declared names
always win; ``in`` and :meth:`FieldCatalog.declared_names` answer for the declared names
only, so asking them never sends a request.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import attrs

__all__ = ["FieldCatalog", "FieldInfo"]

NUMERIC_TYPES = frozenset(
    {"long", "integer", "short", "byte", "double", "float", "half_float", "scaled_float",
     "unsigned_long"}
)  # fmt: skip
#: Field types that hold exact values (usable in term, range, terms-aggregation and sort).
EXACT_TYPES = NUMERIC_TYPES | {
    "keyword", "constant_keyword", "wildcard", "date", "date_nanos", "boolean", "ip", "version"
}  # fmt: skip
INTEGER_TYPES = frozenset({"long", "integer", "short", "byte", "unsigned_long"})
DATE_TYPES = frozenset({"date", "date_nanos"})
TEXT_TYPES = frozenset({"text", "match_only_text", "search_as_you_type"})
CONTAINER_TYPES = frozenset({"object", "nested"})


@attrs.frozen(slots=True)
class FieldInfo:
    """One field of a mapping.

    ``path`` is the full dotted Elasticsearch path; ``type`` its mapping type (``object``
    for objects without an explicit type); ``nested_paths`` the enclosing ``nested`` paths,
    outermost first (empty for root fields); ``keyword`` the dotted path of an exact-match
    subfield of a text field (``name.keyword``), ``sort`` the path to sort on (the field
    itself for exact types, else its ``sort`` or ``keyword`` subfield, else ``None``).
    """

    path: str
    type: str
    nested_paths: tuple[str, ...] = ()
    keyword: str | None = None
    sort: str | None = None
    properties: Mapping[str, Any] = attrs.field(factory=dict, eq=False, repr=False)

    @property
    def nested_path(self) -> str | None:
        """The innermost enclosing nested path (``None`` at the root)."""
        return self.nested_paths[-1] if self.nested_paths else None

    @property
    def is_text(self) -> bool:
        return self.type in TEXT_TYPES

    @property
    def is_exact(self) -> bool:
        return self.type in EXACT_TYPES

    @property
    def is_numeric(self) -> bool:
        return self.type in NUMERIC_TYPES

    @property
    def is_date(self) -> bool:
        return self.type in DATE_TYPES

    @property
    def is_container(self) -> bool:
        return self.type in CONTAINER_TYPES

    @property
    def exact_path(self) -> str | None:
        """The path to use for exact matching: the field itself or its keyword subfield."""
        if self.is_exact:
            return self.path
        return self.keyword


class FieldCatalog:
    """Resolves user-facing dotted field names against a mapping.

    ``resolve`` raises ``KeyError`` for an unknown name; callers turn that into a
    :class:`~esmapper.errors.QueryValidationError` naming the field.
    """

    __slots__ = ("_aliases", "_fields", "_server")

    def __init__(
        self, mapping: Mapping[str, Any], *, aliases: Mapping[str, str] | None = None
    ) -> None:
        self._fields: dict[str, FieldInfo] = {}
        self._aliases: dict[str, str] = dict(aliases or {})
        #: the server's fields, read when first needed (see :meth:`with_server`)
        self._server: Callable[[], FieldCatalog | None] | None = None
        self._walk(mapping.get("properties", {}), prefix="", nested=())

    def _walk(self, properties: Mapping[str, Any], *, prefix: str, nested: tuple[str, ...]) -> None:
        for name, spec in properties.items():
            path = f"{prefix}{name}"
            ftype = spec.get("type", "object")
            subfields: Mapping[str, Any] = spec.get("fields", {})
            keyword = sort = None
            for sub_name, sub in subfields.items():
                if sub.get("type") in EXACT_TYPES and keyword is None and sub_name != "sort":
                    keyword = f"{path}.{sub_name}"
                if sub_name == "sort" and sub.get("type") in EXACT_TYPES:
                    sort = f"{path}.sort"
            if ftype in EXACT_TYPES:
                sort = path
            elif sort is None:
                sort = keyword
            inner_nested = (*nested, path) if ftype == "nested" else nested
            self._fields[path] = FieldInfo(
                path=path,
                type=ftype,
                nested_paths=nested,
                keyword=keyword,
                sort=sort,
                properties=spec.get("properties", {}),
            )
            for sub_name, sub in subfields.items():
                sub_path = f"{path}.{sub_name}"
                sub_type = sub.get("type", "keyword")
                self._fields[sub_path] = FieldInfo(
                    path=sub_path,
                    type=sub_type,
                    nested_paths=nested,
                    sort=sub_path if sub_type in EXACT_TYPES else None,
                )
            if "properties" in spec:
                self._walk(spec["properties"], prefix=f"{path}.", nested=inner_nested)

    def with_server(self, server: Callable[[], FieldCatalog | None]) -> FieldCatalog:
        """A copy of this catalog that looks a name it does not declare up in ``server()``
        (the fields the server maps; ``None``: none known), called only when such a name
        comes up, so a search whose names are all declared never calls it."""
        widened = copy.copy(self)
        widened._server = server
        return widened

    def declared(self, name: str) -> FieldInfo:
        """The declared field called ``name`` (an alias is followed first); ``KeyError`` if
        the catalog does not declare it (the server is not asked)."""
        name = self._aliases.get(name, name)
        return self._fields[name]

    def server_allows(self, path: str) -> bool:
        """Whether a server field at ``path`` may be resolved (a subclass keeps a subtree
        it owns to itself); asked of the name and, for a server field alias, its target."""
        return True

    def resolve(self, name: str) -> FieldInfo:
        """The field called ``name``: a declared one (:meth:`declared`), else one the
        server maps when the catalog was widened (:meth:`with_server`); ``KeyError`` if
        unknown."""
        try:
            return self.declared(name)
        except KeyError:
            found = self._server_field(name)
            if found is None:
                raise
            return found

    def _server_field(self, name: str) -> FieldInfo | None:
        if self._server is None or not self.server_allows(name):
            return None
        server = self._server()
        found = None if server is None else server.get(name)
        # a server field alias is its target: one aiming at a subtree kept apart is refused
        return found if found is not None and self.server_allows(found.path) else None

    def get(self, name: str) -> FieldInfo | None:
        try:
            return self.resolve(name)
        except KeyError:
            return None

    def __contains__(self, name: object) -> bool:
        """Whether the catalog *declares* ``name`` (never asks the server)."""
        if not isinstance(name, str):
            return False
        try:
            self.declared(name)
        except KeyError:
            return False
        return True

    def __iter__(self) -> Iterator[FieldInfo]:
        return iter(self._fields.values())

    def declared_names(self) -> list[str]:
        """Every declared dotted path, sorted."""
        return sorted(self._fields)

    def names(self) -> list[str]:
        """Every resolvable dotted path, sorted (for "did you mean" messages and wildcard
        patterns): the declared ones and, for a widened catalog, the server's (read
        when not yet known)."""
        declared = self.declared_names()
        if self._server is None:
            return declared
        server = self._server()
        if server is None:
            return declared
        extra = [
            n
            for n in server.declared_names()
            if self.server_allows(n) and self.server_allows(server._aliases.get(n, n))
        ]
        return sorted({*declared, *extra})
