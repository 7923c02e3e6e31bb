"""The server's mapping of a model, for field resolution: what a name the model does
not declare may still mean.

A field can exist on the server without the model declaring it: added by hand with
``PUT /<index>/_mapping``, mapped by a newer deploy of another service, or mapped by a
dynamic template. A search widens the model's catalog with the fields the server maps
(:meth:`~esmapper.model.catalog.FieldCatalog.with_server`), read here:

- only when a name the catalog does not declare comes up (a search whose names are all
  declared sends nothing more);
- ``GET /<alias>/_mapping`` at most once per minute per model and mapper (:data:`REFRESH`,
  timed by the mapper's ``clock``), the mappings of every index behind the alias merged;
  a path two of them map as different types (a reindex in flight that changes a type,
  time-series partitions mapped apart; ``nested`` in one and ``object`` in the other) is
  refused with a :class:`~esmapper.errors.QueryValidationError` naming each index's type
  (:class:`ServerCatalog`), as is a field under such a path: no one query is right for both
  (``includes=``/``excludes=`` still select it: source filtering is the same for any type);
- a field alias (``type: alias``) resolves as its target (type, subfields, nested path),
  a runtime field (``mappings.runtime``) as a field of its type;
- a server that refuses the read (403), or a missing index: no server fields until the
  next read a minute later (declared names only); a read that failed otherwise (a dropped
  connection, a 5xx) raises the client's error from the search naming the field and
  is not kept (the next such search reads again): it says nothing about the field, and
  an "Unknown field" error would blame the query for the server's trouble.

:func:`forget` (``repo.refresh_mapping()``) drops what was read, so the next name not
declared reads the mapping again at once. The dynamic setting of the index does not
matter: ``GET _mapping`` lists mapped fields only, so under ``dynamic: false`` a value no
mapping covers (not searchable on the server either) stays an unknown field, and under
``dynamic: "strict"`` a field mapped by hand is found like any other.
"""

from __future__ import annotations

import datetime as _dt
import logging
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from elasticsearch import AuthorizationException, NotFoundError

from esmapper.errors import QueryValidationError
from esmapper.model.catalog import FieldCatalog, FieldInfo

if TYPE_CHECKING:
    from esmapper._context import Context
    from esmapper.model.info import ModelInfo

__all__ = ["REFRESH", "ServerCatalog", "ServerMappings", "forget", "server_fields"]

log = logging.getLogger("esmapper.query")

#: How long a server mapping read is used before the next name not declared reads it again.
REFRESH = _dt.timedelta(seconds=60)
_KEY = "esmapper.server-mapping"


class _Model:
    """One model's reads: the last one kept, and what threads waiting for a read share."""

    def __init__(self) -> None:
        self.lock = threading.Lock()  # held while this model's mapping is read
        self.read: tuple[_dt.datetime, FieldCatalog | None] | None = None
        self.tickets = 0  # threads that asked so far (taken under ServerMappings._lock)
        self.failed: tuple[int, BaseException] | None = None  # (tickets then, the error)


class ServerMappings:
    """A mapper's reads of its models' server mappings: per model, ``(read at,
    catalog)``. A model's read holds only that model's lock (a slow or failing read of
    one model's mapping never holds up another's searches); threads that asked while a
    read was under way share its failure instead of each reading again in turn (N
    waiting threads would otherwise wait up to N timeouts)."""

    def __init__(self) -> None:
        self._models: dict[type, _Model] = {}
        self._lock = threading.Lock()

    def catalog(self, ctx: Context, info: ModelInfo) -> FieldCatalog | None:
        """The fields the server maps for ``info``'s alias (``None``: none known), read when
        the last read is :data:`REFRESH` old or was never made (one ``GET
        /<alias>/_mapping``; several threads wait for one read). Raises the client's
        error of a read that failed otherwise than 403/404, in the thread that read and
        in those that asked while it was under way (nothing is kept: the next name not
        declared reads again)."""
        with self._lock:
            model = self._models.setdefault(info.cls, _Model())
            model.tickets += 1
            ticket = model.tickets
        with model.lock:
            now = ctx.clock()
            found = model.read
            if found is not None and now - found[0] < REFRESH:
                return found[1]
            failed = model.failed
            if failed is not None and failed[0] >= ticket:  # failed while this one waited
                raise failed[1]
            try:
                catalog = _read(ctx, info)  # raises what a failed read raised
            except Exception as exc:
                with self._lock:
                    model.failed = (model.tickets, exc)
                raise
            model.read, model.failed = (now, catalog), None
            return catalog

    def forget(self, model: type) -> None:
        """Drop ``model``'s read (after a read under way: what it read is dropped too)."""
        with self._lock:
            found = self._models.get(model)
        if found is not None:
            with found.lock:
                found.read = None


def _read(ctx: Context, info: ModelInfo) -> FieldCatalog | None:
    alias = ctx.spec(info.cls).alias
    try:
        body: dict[str, Any] = dict(ctx.client.indices.get_mapping(index=alias).body)
    except AuthorizationException:
        log.info("%s: the server refused GET %s/_mapping; declared fields only", info.name, alias)
        return None
    except NotFoundError:
        return None
    properties: dict[str, Any] = {}
    kinds: dict[str, dict[str, list[str]]] = {}  # path -> what it is -> the indexes saying so
    for index in sorted(body, reverse=True):  # the last name first (usually the newest)
        mapping = (body[index] or {}).get("mappings") or {}
        # a runtime field is searched like a mapped field of its type (and shadows one)
        runtime = {
            name: {"type": spec.get("type", "keyword")}
            for name, spec in (mapping.get("runtime") or {}).items()
        }
        mapped = {**(mapping.get("properties") or {}), **runtime}
        _merge(properties, mapped)
        _kinds(kinds, mapped, "", index)
    # a field alias (``type: alias``) is its target's field: type, subfields, nested path
    aliases = _field_aliases(properties, "")
    aliases.update(info.index.aliases if info.index is not None else {})
    conflicts = {
        path: ", ".join(
            f"{kind} ({', '.join(sorted(indexes))})" for kind, indexes in sorted(found.items())
        )
        for path, found in kinds.items()
        if len(found) > 1
    }
    return ServerCatalog(
        {"properties": properties}, aliases=aliases, alias=alias, conflicts=conflicts
    )


class ServerCatalog(FieldCatalog):
    """The fields the indexes behind an alias map, merged; a path they map differently
    (``text`` on one, ``keyword`` on another; ``nested`` and ``object``) is refused by
    name: no one query, sort or aggregation is right on both."""

    __slots__ = ("_alias", "_conflicts")

    def __init__(
        self,
        mapping: Mapping[str, Any],
        *,
        aliases: Mapping[str, str],
        alias: str,
        conflicts: Mapping[str, str],
    ) -> None:
        super().__init__(mapping, aliases=aliases)
        self._alias = alias
        self._conflicts = dict(conflicts)

    def declared(self, name: str) -> FieldInfo:
        """The server field called ``name``; :class:`~esmapper.errors.QueryValidationError`
        when the indexes behind the alias map it, or an object or nested path enclosing
        it, differently (``KeyError``: not mapped)."""
        path = self._aliases.get(name, name)
        parts = path.split(".")
        for end in range(1, len(parts) + 1):  # the field, or an object enclosing it
            prefix = ".".join(parts[:end])
            conflict = self._conflicts.get(prefix)
            if conflict is not None:
                raise QueryValidationError(
                    f"field {prefix!r} is mapped differently by the indexes behind "
                    f"{self._alias}: {conflict}; declare it in the model or query one index",
                    field=name,
                )
        return super().declared(name)


def _field_aliases(properties: Mapping[str, Any], prefix: str) -> dict[str, str]:
    """``alias path -> target path`` of the field aliases among ``properties``."""
    found: dict[str, str] = {}
    for name, spec in properties.items():
        path = f"{prefix}{name}"
        if spec.get("type") == "alias" and isinstance(spec.get("path"), str):
            found[path] = spec["path"]
        if "properties" in spec:
            found.update(_field_aliases(spec["properties"], f"{path}."))
    return found


def _kinds(
    kinds: dict[str, dict[str, list[str]]], properties: Mapping[str, Any], prefix: str, index: str
) -> None:
    """Record under ``kinds`` what ``index`` maps each path of ``properties`` as."""
    for name, spec in properties.items():
        path = f"{prefix}{name}"
        kind = str(spec.get("type", "object"))
        if kind == "alias":  # two aliases of one name differ by their target
            kind = f"alias of {spec.get('path')}"
        kinds.setdefault(path, {}).setdefault(kind, []).append(index)
        for sub_name, sub in (spec.get("fields") or {}).items():  # multi-fields: name.raw
            sub_kind = str(sub.get("type", "keyword"))
            kinds.setdefault(f"{path}.{sub_name}", {}).setdefault(sub_kind, []).append(index)
        if "properties" in spec:
            _kinds(kinds, spec["properties"], f"{path}.", index)


def _merge(into: dict[str, Any], properties: dict[str, Any]) -> None:
    """Add to ``into`` the paths of ``properties`` it does not have yet (what is there wins)."""
    for name, spec in properties.items():
        have = into.get(name)
        if have is None:
            into[name] = spec
        elif "properties" in spec and "properties" in have:
            inner = dict(have["properties"])
            _merge(inner, spec["properties"])
            into[name] = {**have, "properties": inner}


def _mappings(ctx: Context) -> ServerMappings:
    return ctx.extension(_KEY, ServerMappings)


def server_fields(ctx: Context, info: ModelInfo) -> Callable[[], FieldCatalog | None]:
    """What widens a search's catalog: reads (when due) the server fields of ``info``."""
    return lambda: _mappings(ctx).catalog(ctx, info)


def forget(ctx: Context, model: type) -> None:
    """Drop the server mapping read for ``model``: the next name it does not declare reads
    it again (nothing is sent now)."""
    _mappings(ctx).forget(model)
