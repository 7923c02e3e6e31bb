"""The repository: immediate operations on one model.

Reads use the real-time GET/mget for ids and the Search API for everything else; every
write goes through the shared write pipeline (:mod:`esmapper._writes`) as a one-shot unit
of work, so signals, version checks, id checks and cache invalidation are the same as in a
session. The searches (``find`` and its relatives, ``batch_process``) live in
:mod:`esmapper._searching`. Repositories are thread-safe; get one with
``mapper.repository(Model)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, overload

import attrs
from elasticsearch import NotFoundError
from elasticsearch.dsl.query import Query

from esmapper import _gcpause as _gc
from esmapper import _patching, signals
from esmapper._limits import limited
from esmapper._pending import WriteKind
from esmapper._search import is_index_missing, soft_delete_clause
from esmapper._searching import Searching, _defaults
from esmapper._writes import PendingWrite, composed_id, write_documents
from esmapper.custom_fields._access import in_tenant, require_custom_fields
from esmapper.errors import DocumentNotFoundError
from esmapper.ids import check_id
from esmapper.indexes.reads import get_document, get_documents
from esmapper.model.partial import check_finite, check_partial
from esmapper.model.state import DocState, version_of
from esmapper.options import (
    Consistency,
    LogLevel,
    Options,
    SoftDeleteMode,
    Timeout,
    given,
)
from esmapper.patches import PartialPatch, Patch

if TYPE_CHECKING:
    from esmapper.indexes.spec import IndexSpec
    from esmapper.mapper import Mapper
    from esmapper.model import Document

__all__ = ["Repository"]

_REMOVE_SIGNALS = (
    signals.documents_removing,
    signals.documents_removed,
    signals.documents_changing,
    signals.documents_changed,
)

#: A model: a subclass of :class:`~esmapper.model.Document`.
T = TypeVar("T", bound="Document")
R = TypeVar("R")

#: ``exists(filter=...)`` was not given (``filter=None`` matches every document)
_NO_FILTER: Any = object()


def _hit(raw: dict[str, Any]) -> dict[str, Any]:
    """The parts of a GET/mget answer a document is built from (what the cache keeps)."""
    return {
        "_id": raw["_id"],
        "_index": raw.get("_index"),
        "_source": raw.get("_source") or {},
        "_seq_no": raw.get("_seq_no"),
        "_primary_term": raw.get("_primary_term"),
    }


def _visible(info: Any, source: dict[str, Any] | None, mode: str) -> bool:
    if not info.soft_deletes or mode == "all" or source is None:
        return True
    deleted = bool(source.get("is_deleted"))
    return deleted if mode == "deleted" else not deleted


class Repository(Searching[T]):
    """Immediate operations on the documents of ``model``. Options are keyword
    arguments of every call; see :class:`esmapper.options.Options`."""

    def __init__(self, mapper: Mapper, model: type[T]) -> None:
        self.mapper = mapper
        self.model = model
        self.info = model.__esmapper__  # type: ignore[attr-defined]
        self.defaults = Options()

    @property
    def spec(self) -> IndexSpec:
        return self.mapper.spec(self.model)

    # -- writes ------------------------------------------------------------------------

    @overload
    def add(
        self,
        docs: T,
        *,
        consistency: Consistency | None = None,
        soft_deletes: SoftDeleteMode | None = None,
        cache: bool | None = None,
        cache_key: str | None = None,
        notifications: bool | None = None,
        validate: bool | None = None,
        version_check: bool | None = None,
        timeout: Timeout | None = None,
        retries: int | None = None,
        tenant: str | None = None,
        query_log_level: LogLevel | None = None,
    ) -> T: ...
    @overload
    def add(
        self,
        docs: Sequence[T],
        *,
        consistency: Consistency | None = None,
        soft_deletes: SoftDeleteMode | None = None,
        cache: bool | None = None,
        cache_key: str | None = None,
        notifications: bool | None = None,
        validate: bool | None = None,
        version_check: bool | None = None,
        timeout: Timeout | None = None,
        retries: int | None = None,
        tenant: str | None = None,
        query_log_level: LogLevel | None = None,
    ) -> list[T]: ...
    @limited(_defaults)
    def add(
        self,
        docs: T | Sequence[T],
        *,
        consistency: Consistency | None = None,
        soft_deletes: SoftDeleteMode | None = None,
        cache: bool | None = None,
        cache_key: str | None = None,
        notifications: bool | None = None,
        validate: bool | None = None,
        version_check: bool | None = None,
        timeout: Timeout | None = None,
        retries: int | None = None,
        tenant: str | None = None,
        query_log_level: LogLevel | None = None,
    ) -> T | list[T]:
        """Create document(s): ``op_type=create``, so an existing id raises
        :class:`DuplicateDocumentError` and leaves the stored document unchanged. Sets
        ``id`` (composed from ``id_fields`` or a new ObjectId), dates and ``version``."""
        return self._write("add", docs, given(locals()))  # type: ignore[no-any-return]

    @overload
    def save(
        self,
        docs: T,
        *,
        consistency: Consistency | None = None,
        soft_deletes: SoftDeleteMode | None = None,
        cache: bool | None = None,
        cache_key: str | None = None,
        notifications: bool | None = None,
        validate: bool | None = None,
        version_check: bool | None = None,
        timeout: Timeout | None = None,
        retries: int | None = None,
        tenant: str | None = None,
        query_log_level: LogLevel | None = None,
    ) -> T: ...
    @overload
    def save(
        self,
        docs: Sequence[T],
        *,
        consistency: Consistency | None = None,
        soft_deletes: SoftDeleteMode | None = None,
        cache: bool | None = None,
        cache_key: str | None = None,
        notifications: bool | None = None,
        validate: bool | None = None,
        version_check: bool | None = None,
        timeout: Timeout | None = None,
        retries: int | None = None,
        tenant: str | None = None,
        query_log_level: LogLevel | None = None,
    ) -> list[T]: ...
    @limited(_defaults)
    def save(
        self,
        docs: T | Sequence[T],
        *,
        consistency: Consistency | None = None,
        soft_deletes: SoftDeleteMode | None = None,
        cache: bool | None = None,
        cache_key: str | None = None,
        notifications: bool | None = None,
        validate: bool | None = None,
        version_check: bool | None = None,
        timeout: Timeout | None = None,
        retries: int | None = None,
        tenant: str | None = None,
        query_log_level: LogLevel | None = None,
    ) -> T | list[T]:
        """Replace document(s) (Index API). ``Versioned`` models send
        ``if_seq_no``/``if_primary_term`` from ``version``; a stale version raises
        :class:`VersionConflictError`. A doc without id raises :class:`DocumentError`."""
        return self._write("save", docs, given(locals()))  # type: ignore[no-any-return]

    @limited(_defaults)
    def remove(
        self,
        docs: T | str | Iterable[T | str],
        *,
        consistency: Consistency | None = None,
        soft_deletes: SoftDeleteMode | None = None,
        cache: bool | None = None,
        cache_key: str | None = None,
        notifications: bool | None = None,
        validate: bool | None = None,
        version_check: bool | None = None,
        timeout: Timeout | None = None,
        retries: int | None = None,
        tenant: str | None = None,
        query_log_level: LogLevel | None = None,
    ) -> None:
        """Hard-delete documents or ids (whatever the soft-delete support); a missing id is
        a no-op. A ``Versioned`` document is deleted only at the version it holds
        (``if_seq_no``/``if_primary_term``; stale: :class:`VersionConflictError`); an id
        deletes whatever is stored. Ids are loaded first (one mget) when removal signals
        have receivers, so those see the documents' content, and with ``tenant=``: an id of
        another tenant's document is a no-op (not there for it), another tenant's document
        raises DocumentValidationError before anything is sent."""
        options = given(locals())
        items = [docs] if isinstance(docs, str | self.model) else list(docs)  # type: ignore[arg-type]
        ids = [item for item in items if isinstance(item, str)]
        opts = self.options(**options)
        loaded: dict[str, Any] | None = None
        # with tenant=, an id is loaded to know its tenant: another tenant's is not there
        if ids and (
            opts.tenant is not None
            or any(signals.has_receivers(s, self.model) for s in _REMOVE_SIGNALS)
        ):
            found = self.get_many(ids, soft_deletes="all", tenant=opts.tenant)
            loaded = {str(d.id): d for d in found}  # type: ignore[attr-defined]
        pendings = []
        for item in items:
            if not isinstance(item, str):
                pendings.append(PendingWrite("remove", item, self.info))
            elif loaded is None or item in loaded:
                doc = loaded[item] if loaded else self.info.from_source({}, item, None)
                pendings.append(PendingWrite("remove", doc, self.info, conditional=False))
        if pendings:
            write_documents(self.mapper, pendings, opts)

    def _write(
        self, kind: WriteKind, docs: T | Sequence[T], options: dict[str, Any]
    ) -> T | list[T]:
        single = isinstance(docs, self.model)
        items = [docs] if single else list(docs)  # type: ignore[arg-type]
        for item in items:
            if not isinstance(item, self.model):
                raise TypeError(f"{kind}() takes {self.model.__name__} documents, got {item!r}")
        self._run(kind, items, self.options(**options))  # (tenant= checked by the pipeline)
        return items[0] if single else items  # type: ignore[return-value]

    def _run(self, kind: WriteKind, docs: Sequence[Any], options: Options) -> None:
        if docs:
            write_documents(self.mapper, [PendingWrite(kind, d, self.info) for d in docs], options)

    # -- reads by id --------------------------------------------------------------------

    @limited(_defaults)
    def get(
        self,
        id: str,
        *,
        consistency: Consistency | None = None,
        soft_deletes: SoftDeleteMode | None = None,
        cache: bool | None = None,
        cache_key: str | None = None,
        notifications: bool | None = None,
        validate: bool | None = None,
        version_check: bool | None = None,
        timeout: Timeout | None = None,
        retries: int | None = None,
        tenant: str | None = None,
        query_log_level: LogLevel | None = None,
    ) -> T | None:
        """The document with ``id`` (real-time GET), or ``None``; soft-deleted documents
        only with ``soft_deletes="all"``/``"deleted"``."""
        return self._get(id, self.options(**given(locals())))

    def _get(self, id: str, opts: Options) -> T | None:
        """:meth:`get` under ``opts`` (what a session's read runs)."""
        check_id(id)
        mapper, info = self.mapper, self.info
        if opts.tenant is not None:
            require_custom_fields(info)
        ttl = mapper.cache_ttl(info, opts)
        token = None
        if ttl is not None:
            cached, token = mapper.cache_lookup(info, id)
            if cached is not None:
                if not _visible(info, cached.get("_source"), opts.soft_deletes):
                    return None
                # a copy of the document hydrated from this very entry, else hydrated
                copies = mapper.documents.copies  # type: ignore[union-attr]
                document = (
                    self._hydrate(cached)
                    if copies is None
                    else copies.document(info, cached, self._hydrate)
                )
                return document if opts.tenant is None else self._in_tenant(document, opts.tenant)
        if self.spec.is_time_series:
            found = get_document(self.mapper.client, self.spec, id)
            if found is None:
                return None
            raw = _hit(found)
        else:
            try:
                raw = _hit(self.mapper.client.get(index=self.spec.read_target, id=id).body)
            except NotFoundError:
                return None
        if ttl is not None:
            self.mapper.cache_fill(self.info, id, raw, token, ttl)
        if not _visible(self.info, raw.get("_source"), opts.soft_deletes):
            return None
        return self._in_tenant(self._hydrate(raw), opts.tenant)

    def _in_tenant(self, doc: T, tenant: str | None) -> T | None:
        """``doc``, or ``None`` when ``tenant=`` names another tenant than its own."""
        return doc if in_tenant(self.info, doc, tenant) else None

    @limited(_defaults)
    def get_many(
        self,
        ids: Iterable[str],
        *,
        consistency: Consistency | None = None,
        soft_deletes: SoftDeleteMode | None = None,
        cache: bool | None = None,
        cache_key: str | None = None,
        notifications: bool | None = None,
        validate: bool | None = None,
        version_check: bool | None = None,
        timeout: Timeout | None = None,
        retries: int | None = None,
        tenant: str | None = None,
        query_log_level: LogLevel | None = None,
    ) -> list[T]:
        """Documents for ``ids`` (multi-GET, real-time) in request order, missing ids
        omitted, duplicates once. Time-series models: see
        :func:`esmapper.indexes.reads.get_documents`."""
        return self._get_many(ids, self.options(**given(locals())))

    @_gc.pausing  # the parsed docs and the documents all live on: no GC passes
    def _get_many(self, ids: Iterable[str], opts: Options) -> list[T]:
        """:meth:`get_many` under ``opts`` (what a session's read runs)."""
        wanted = list(dict.fromkeys(ids))
        for id in wanted:
            check_id(id)
        if opts.tenant is not None:
            require_custom_fields(self.info)
        ttl = self.mapper.cache_ttl(self.info, opts)
        hits: dict[str, dict[str, Any]] = {}
        tokens: dict[str, Any] = {}
        if ttl is not None:
            for id in wanted:
                cached, tokens[id] = self.mapper.cache_lookup(self.info, id)
                if cached is not None:
                    hits[id] = cached
        missing = [id for id in wanted if id not in hits]
        if missing:
            try:
                if self.spec.is_time_series:  # no multi-GET through several partitions
                    docs = [
                        {**raw, "found": True}
                        for raw in get_documents(self.mapper.client, self.spec, missing)
                    ]
                else:
                    response = self.mapper.client.mget(index=self.spec.read_target, ids=missing)
                    docs = response.body["docs"]
            except NotFoundError as exc:
                if not is_index_missing(exc):
                    raise
            else:
                for raw in docs:
                    if raw.get("found"):
                        if ttl is None:  # hydrated from the answer as it is
                            hits[raw["_id"]] = raw
                            continue
                        hit = _hit(raw)
                        hits[hit["_id"]] = hit
                        self.mapper.cache_fill(
                            self.info, hit["_id"], hit, tokens.get(hit["_id"]), ttl
                        )
        info, mode = self.info, opts.soft_deletes
        filtered = info.soft_deletes and mode != "all"
        deleted_wanted = mode == "deleted"
        hydrate = self._hydrate
        found: list[T] = []
        append = found.append
        for id in wanted:
            got = hits.get(id)
            if got is None:
                continue
            if filtered:  # _visible, inline
                source = got.get("_source")
                if source is not None and bool(source.get("is_deleted")) is not deleted_wanted:
                    continue
            append(hydrate(got))
        if opts.tenant is None:
            return found
        return [d for d in found if in_tenant(self.info, d, opts.tenant)]

    @limited(_defaults)
    def exists(
        self,
        id: str | None = None,
        *,
        filter: Any = _NO_FILTER,
        partitions: tuple[Any, Any] | None = None,
        consistency: Consistency | None = None,
        soft_deletes: SoftDeleteMode | None = None,
        cache: bool | None = None,
        cache_key: str | None = None,
        notifications: bool | None = None,
        validate: bool | None = None,
        version_check: bool | None = None,
        timeout: Timeout | None = None,
        retries: int | None = None,
        tenant: str | None = None,
        query_log_level: LogLevel | None = None,
    ) -> bool:
        """Whether the document ``id`` exists (a real-time GET, with ``_source`` limited to
        ``is_deleted``), or, with ``filter=`` instead, whether any document matches (a
        near-real-time ``size=0`` search with ``terminate_after=1``; ``filter=None``
        matches every document). A soft-deleted document counts only with
        ``soft_deletes="all"``/``"deleted"``. A bad filter raises QueryValidationError
        before anything is sent; giving both ``id`` and ``filter`` (or neither) raises
        ``TypeError``. With ``tenant=``, another tenant's document does not exist (the
        GET reads the whole document: its tenant is the model's to compute)."""
        if filter is not _NO_FILTER:
            if id is not None:
                raise TypeError("exists() takes an id or filter=, not both")
            return self._request("exists", filter, given(locals(), ("partitions",))).exists()
        if id is None:
            raise TypeError("exists() takes an id, or filter= to test whether anything matches")
        if partitions is not None:
            raise TypeError("exists() takes partitions= with filter=, not with an id")
        opts = self.options(**given(locals()))
        check_id(id)
        if opts.tenant is not None:  # the tenant is the document's business: read it whole
            return self._get(id, attrs.evolve(opts, cache=False, cache_key=None)) is not None
        if self.spec.is_time_series:
            found = get_document(self.mapper.client, self.spec, id, source_includes=["is_deleted"])
            return found is not None and _visible(
                self.info, found.get("_source"), opts.soft_deletes
            )
        if not self.info.soft_deletes or opts.soft_deletes == "all":
            return bool(self.mapper.client.exists(index=self.spec.read_target, id=id))
        try:
            response = self.mapper.client.get(
                index=self.spec.read_target, id=id, source_includes=["is_deleted"]
            )
        except NotFoundError:
            return False
        return _visible(self.info, response.body.get("_source"), opts.soft_deletes)

    def _hydrate(self, raw: dict[str, Any]) -> T:
        """The document of a GET/multi-GET answer, its ``_source`` kept as the original
        (no copy: hydration copies every mutable value it hands to the document)."""
        version, condition = version_of(raw.get("_seq_no"), raw.get("_primary_term"))
        source = raw.get("_source") or {}
        state = DocState(source, raw.get("_index"), None, False, version, condition)
        document: T = self.info.from_source(source, raw["_id"], version, state)
        return document

    # -- by query and patches ------------------------------------------------------------

    @limited(_defaults)
    def patch(
        self,
        ids: str | Iterable[str],
        patch: Patch,
        *,
        consistency: Consistency | None = None,
        soft_deletes: SoftDeleteMode | None = None,
        cache: bool | None = None,
        cache_key: str | None = None,
        notifications: bool | None = None,
        validate: bool | None = None,
        version_check: bool | None = None,
        timeout: Timeout | None = None,
        retries: int | None = None,
        tenant: str | None = None,
        query_log_level: LogLevel | None = None,
    ) -> None:
        """Patch document(s) by id, whatever their soft-delete state. A missing id raises
        :class:`DocumentNotFoundError`; a conflict :class:`VersionConflictError`. A
        ``PartialPatch`` is checked against the model first (:func:`_checked`)."""
        opts = self.options(**given(locals()))
        _patching.patch_ids(self, ids, self._checked(patch, opts), opts)

    @limited(_defaults)
    def patch_all(
        self,
        filter: str | Query | None,
        patch: Patch,
        *,
        consistency: Consistency | None = None,
        soft_deletes: SoftDeleteMode | None = None,
        cache: bool | None = None,
        cache_key: str | None = None,
        notifications: bool | None = None,
        validate: bool | None = None,
        version_check: bool | None = None,
        timeout: Timeout | None = None,
        retries: int | None = None,
        tenant: str | None = None,
        query_log_level: LogLevel | None = None,
    ) -> int:
        """Patch every matching document; returns the number changed (update-by-query for
        a ScriptPatch on a model not cached, else a point-in-time scan written in batches
        with version checks: see :mod:`esmapper._patching`). A scan whose point in time is
        lost more than 10 times raises :class:`SnapshotExpiredError`. A ``PartialPatch`` is
        checked against the model first (:func:`_checked`)."""
        opts = self.options(**given(locals()))
        return _patching.patch_all(self, filter, self._checked(patch, opts), opts)

    def _checked(self, patch: Patch, options: Options) -> Patch:
        """``patch``, a ``PartialPatch`` checked against the model before anything is sent
        (:mod:`esmapper.model.partial`): an unknown field, a dotted key or a value of the
        wrong type raises :class:`DocumentValidationError` naming the field, and values
        become what the model stores (datetimes, enums, embedded objects). With
        ``validate=False`` only ``NaN``/infinities are refused (JSON has neither)."""
        if not isinstance(patch, PartialPatch):
            return patch
        if not options.validate:
            check_finite(self.info, patch.doc)
            return patch
        return attrs.evolve(patch, doc=check_partial(self.info, patch.doc))

    @limited(_defaults)
    def remove_all(
        self,
        filter: str | Query | None = None,
        *,
        consistency: Consistency | None = None,
        soft_deletes: SoftDeleteMode | None = None,
        cache: bool | None = None,
        cache_key: str | None = None,
        notifications: bool | None = None,
        validate: bool | None = None,
        version_check: bool | None = None,
        timeout: Timeout | None = None,
        retries: int | None = None,
        tenant: str | None = None,
        query_log_level: LogLevel | None = None,
    ) -> int:
        """Hard-delete matching documents (soft-delete mode applies to matching); returns
        the number removed. Uses delete-by-query when nothing listens to removals and the
        model is not cached, else a point-in-time scan (a scan whose point in time is lost
        more than 10 times raises :class:`SnapshotExpiredError`)."""
        return _patching.remove_all(self, filter, self.options(**given(locals())))

    def compose_id(self, doc: T) -> str:
        """The id :meth:`add` gives ``doc``, composed from the model's ``Index.id_fields``
        (sends nothing; raises like ``add`` for empty fields or an id over 512 bytes)."""
        return composed_id(self.info, doc)

    def invalidate_cache(self, items: T | str | Iterable[T | str]) -> None:
        """Drop cached entries: documents or ids (by-id entries), or custom cache keys
        (a string that is a key given as ``cache="..."`` to a find)."""
        listed = [items] if isinstance(items, str | self.model) else list(items)  # type: ignore[arg-type]
        ids = [i if isinstance(i, str) else i.id for i in listed]  # type: ignore[attr-defined]
        self.mapper.invalidate_ids(self.info, ids)
        if self.mapper.cache is not None:
            self.mapper.cache.remove_many([i for i in ids if isinstance(i, str)])

    def soft_delete_clause(self, mode: str) -> dict[str, Any] | None:
        return soft_delete_clause(self.info, mode)

    @limited(_defaults)
    def require(
        self,
        id: str,
        *,
        consistency: Consistency | None = None,
        soft_deletes: SoftDeleteMode | None = None,
        cache: bool | None = None,
        cache_key: str | None = None,
        notifications: bool | None = None,
        validate: bool | None = None,
        version_check: bool | None = None,
        timeout: Timeout | None = None,
        retries: int | None = None,
        tenant: str | None = None,
        query_log_level: LogLevel | None = None,
    ) -> T:
        """Like :meth:`get`, but a missing document raises :class:`DocumentNotFoundError`."""
        document = self.get(id, **given(locals()))
        if document is None:
            raise DocumentNotFoundError(id, index=self.spec.alias)
        return document

    def __repr__(self) -> str:
        return f"Repository({self.model.__name__}, alias={self.spec.alias!r})"
