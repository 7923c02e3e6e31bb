"""The field mappings of one entity type's tenants: their active custom-field definitions,
compiled (:class:`~esmapper.custom_fields.catalog.TenantFields`) and cached.

A tenant's mapping is loaded by one search of its definitions (by id, 1000 a page), kept
in the mapper's cache client for :data:`MAPPING_TTL` (which other processes sharing the
client see, invalidations included) and compiled once per loaded mapping (a per-process
memo). :class:`FieldMappings` also counts the changes made through the repository that
owns it, so a write can tell whether the mapping it used changed while it was in flight.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from elasticsearch import NotFoundError

from esmapper._shards import search_all
from esmapper.custom_fields.catalog import TenantFields
from esmapper.custom_fields.definition import CustomFieldDefinition

if TYPE_CHECKING:
    from esmapper._context import Context
    from esmapper.model.info import ModelInfo

__all__ = ["MAPPING_TTL", "FieldMappings"]

#: How long a tenant's field mapping stays cached.
MAPPING_TTL = _dt.timedelta(minutes=15)
_PAGE = 1000
_MEMO_SIZE = 4096


class FieldMappings:
    """The cached field mappings of ``info``'s tenants (the definitions repository's)."""

    def __init__(self, ctx: Context, info: ModelInfo) -> None:
        self.ctx = ctx
        self.entity_info = info
        self.entity_type: str = info.name
        self._memo: dict[str, tuple[Any, TenantFields]] = {}
        self._memo_lock = threading.Lock()
        #: definition changes made through the repository, per tenant ("" counts every
        #: tenant's): what a write compares after sending (see :meth:`changed_since`)
        self._changes: dict[str, int] = {}

    @property
    def cache_alias(self) -> str:
        """Where the cache client keeps the entity type's mappings (one entry per tenant)."""
        return f"customfield:{self.ctx.index_prefix}{self.entity_type}"

    @property
    def alias(self) -> str:
        """The alias of the definitions' index."""
        return str(self.ctx.spec(CustomFieldDefinition).alias)

    def tenant_fields(self, tenant: str, *, max_age: float | None = None) -> TenantFields:
        """As the repository's ``tenant_fields`` says (its public face)."""
        documents = self.ctx.documents
        token = None
        if documents is not None:
            cached, token = documents.lookup(self.cache_alias, tenant)
            if cached is not None:
                if max_age is None or time.time() - cached.get("loaded_at", 0.0) <= max_age:
                    return self._compiled(tenant, cached)
                self.drop(tenant)  # stale, not changed: load it again
                return self.tenant_fields(tenant)
        raw = {"definitions": self.load(tenant), "loaded_at": time.time()}
        if documents is not None:
            documents.fill(self.cache_alias, tenant, raw, token, MAPPING_TTL)
        return self._compiled(tenant, raw)

    def _compiled(self, tenant: str, raw: dict[str, Any]) -> TenantFields:
        with self._memo_lock:
            memo = self._memo.get(tenant)
            if memo is not None and memo[0] is raw:
                return memo[1]
        fields = TenantFields(
            self.entity_info,
            tenant,
            [CustomFieldDefinition.from_hit(hit) for hit in raw["definitions"]],
            _stamp(raw),
        )
        with self._memo_lock:
            if len(self._memo) >= _MEMO_SIZE:
                self._memo.clear()
            self._memo[tenant] = (raw, fields)
        return fields

    def load(self, tenant: str, *, every: bool = False, refresh: bool = False) -> list[Any]:
        """The stored definitions of ``tenant`` as raw hits (active ones, or ``every`` one),
        by id, 1000 a page."""
        filters: list[dict[str, Any]] = [
            {"term": {"entity_type": self.entity_type}},
            {"term": {"tenant_key": tenant}},
        ]
        if not every:
            filters.append({"term": {"is_deleted": False}})
        alias = self.alias
        if refresh:
            self.refresh()
        hits: list[Any] = []
        after: list[Any] | None = None
        while True:
            body: dict[str, Any] = {
                "query": {"bool": {"filter": filters}},
                "size": _PAGE,
                "sort": [{"id": "asc"}],
                "seq_no_primary_term": True,
            }
            if after is not None:
                body["search_after"] = after
            try:  # every shard: a definition missing here would free its name and slot
                response = search_all(
                    self.ctx.client,
                    what=f"the custom-field definitions of tenant {tenant!r} in {alias}",
                    index=alias,
                    body=body,
                ).body
            except NotFoundError:
                return hits
            page = response["hits"]["hits"]
            hits.extend(
                {k: h.get(k) for k in ("_id", "_index", "_source", "_seq_no", "_primary_term")}
                for h in page
            )
            if len(page) < _PAGE:
                return hits
            after = page[-1]["sort"]

    def refresh(self) -> None:
        with contextlib.suppress(NotFoundError):
            self.ctx.client.indices.refresh(index=self.alias)

    def changes(self, tenant: str) -> int:
        """How many times this repository invalidated ``tenant``'s mapping (a definition
        changed): read it before :meth:`tenant_fields`, pass it to :meth:`changed_since`."""
        with self._memo_lock:
            return self._changes.get(tenant, 0) + self._changes.get("", 0)

    def changed_since(self, fields: TenantFields, changes: int) -> bool:
        """Whether where the tenant's values are indexed (names, types, slots) may have
        changed since ``fields`` was read (after :meth:`changes` returned ``changes``):
        compared with the mapping the cache client holds now, loaded again (one search)
        when a change invalidated it, here or in a process sharing the cache client.
        Without a cache client only this repository's changes are seen."""
        tenant = fields.tenant
        if self.changes(tenant) == changes:
            documents = self.ctx.documents
            if documents is None:
                return False
            cached = documents.client.get(documents.key(self.cache_alias, tenant))
            if isinstance(cached, Mapping) and "definitions" in cached:
                return bool(_stamp(cached) != fields.stamp)
        return bool(self.tenant_fields(tenant).stamp != fields.stamp)

    def invalidate(self, tenant: str | None = None) -> None:
        """As the repository's ``invalidate`` says; counted by :meth:`changes`."""
        with self._memo_lock:
            key = "" if tenant is None else tenant
            self._changes[key] = self._changes.get(key, 0) + 1
        self.drop(tenant)

    def drop(self, tenant: str | None) -> None:
        documents = self.ctx.documents
        if documents is not None:
            if tenant is None:
                documents.invalidate_all(self.cache_alias)
            else:
                documents.invalidate(self.cache_alias, [tenant])
        with self._memo_lock:
            if tenant is None:
                self._memo.clear()
            else:
                self._memo.pop(tenant, None)


def _stamp(raw: Mapping[str, Any]) -> tuple[tuple[Any, ...], ...]:
    """What of a cached mapping decides where values are indexed: each active
    definition's id, name, former names, type and slot. (Not its ``data``, process mode
    or order: a write computed with the former ones is what it would have been had it
    come just before the change, which recomputes no stored document either.)"""
    out = []
    for hit in raw.get("definitions") or ():
        source = hit.get("_source") or {}
        out.append(
            (
                hit.get("_id"),
                str(source.get("name", "")).lower(),
                tuple(str(n).lower() for n in source.get("former_names") or ()),
                source.get("index_type"),
                source.get("index_slot"),
            )
        )
    return tuple(sorted(out, key=repr))
