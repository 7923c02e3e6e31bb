"""The repository: immediate operations on one model (API.md §3).

Reads use the real-time GET/mget for ids and the Search API for everything else; every
write goes through the shared write pipeline (:mod:`esmapper._writes`) as a one-shot unit
of work, so signals, version checks, id checks and cache invalidation are the same as in a
session. Repositories are thread-safe; get one with ``mapper.repository(Model)``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

from elasticsearch import NotFoundError
from elasticsearch.dsl.query import Query

from esmapper import _patching, _scan, signals
from esmapper._search import SearchRequest, is_index_missing, soft_delete_clause
from esmapper._writes import PendingWrite, composed_id, write_documents
from esmapper.errors import DocumentNotFoundError, QueryValidationError
from esmapper.ids import check_id
from esmapper.indexes.reads import get_document, get_documents
from esmapper.model.state import DocState
from esmapper.options import Options
from esmapper.patches import Patch
from esmapper.results import FindResults

if TYPE_CHECKING:
    from esmapper.indexes.spec import IndexSpec
    from esmapper.mapper import Mapper

__all__ = ["Repository"]

_REMOVE_SIGNALS = (
    signals.documents_removing,
    signals.documents_removed,
    signals.documents_changing,
    signals.documents_changed,
)

T = TypeVar("T")


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


class Repository(Generic[T]):
    """Immediate operations on the documents of ``model``. Options (API.md §5) are keyword
    arguments of every call; see :class:`esmapper.options.Options`."""

    def __init__(self, mapper: Mapper, model: type[T]) -> None:
        self.mapper = mapper
        self.model = model
        self.info = model.__esmapper__  # type: ignore[attr-defined]
        self.defaults = Options()

    @property
    def spec(self) -> IndexSpec:
        return self.mapper.spec(self.model)

    def options(self, **overrides: Any) -> Options:
        return self.defaults.merge(**overrides)

    # -- writes ------------------------------------------------------------------------

    @overload
    def add(self, docs: T, **options: Any) -> T: ...
    @overload
    def add(self, docs: Sequence[T], **options: Any) -> list[T]: ...
    def add(self, docs: T | Sequence[T], **options: Any) -> T | list[T]:
        """Create document(s): ``op_type=create``, so an existing id raises
        :class:`DuplicateDocumentError` and leaves the stored document unchanged. Sets
        ``id`` (composed from ``id_fields`` or a new ObjectId), dates and ``version``."""
        return self._write("add", docs, options)  # type: ignore[no-any-return]

    @overload
    def save(self, docs: T, **options: Any) -> T: ...
    @overload
    def save(self, docs: Sequence[T], **options: Any) -> list[T]: ...
    def save(self, docs: T | Sequence[T], **options: Any) -> T | list[T]:
        """Replace document(s) (Index API). ``Versioned`` models send
        ``if_seq_no``/``if_primary_term`` from ``version``; a stale version raises
        :class:`VersionConflictError`. A doc without id raises :class:`DocumentError`."""
        return self._write("save", docs, options)  # type: ignore[no-any-return]

    def remove(self, docs: T | str | Iterable[T | str], **options: Any) -> None:
        """Hard-delete documents or ids (whatever the soft-delete support); a missing id is
        a no-op. A ``Versioned`` document is deleted only at the version it holds
        (``if_seq_no``/``if_primary_term``; stale: :class:`VersionConflictError`); an id
        deletes whatever is stored. Ids are loaded first (one mget) when removal signals
        have receivers, so those see the documents' content."""
        items = [docs] if isinstance(docs, str | self.model) else list(docs)  # type: ignore[arg-type]
        ids = [item for item in items if isinstance(item, str)]
        loaded: dict[str, Any] | None = None
        if ids and any(signals.has_receivers(s, self.model) for s in _REMOVE_SIGNALS):
            loaded = {d.id: d for d in self.get_many(ids, soft_deletes="all")}  # type: ignore[attr-defined]
        pendings = []
        for item in items:
            if not isinstance(item, str):
                pendings.append(PendingWrite("remove", item, self.info))
            elif loaded is None or item in loaded:
                doc = loaded[item] if loaded else self.info.from_source({}, item, None)
                pendings.append(PendingWrite("remove", doc, self.info, conditional=False))
        if pendings:
            write_documents(self.mapper, pendings, self.options(**options))

    def _write(self, kind: str, docs: T | Sequence[T], options: dict[str, Any]) -> Any:
        single = isinstance(docs, self.model)
        items = [docs] if single else list(docs)  # type: ignore[arg-type]
        for item in items:
            if not isinstance(item, self.model):
                raise TypeError(f"{kind}() takes {self.model.__name__} documents, got {item!r}")
        self._run(kind, items, self.options(**options))
        return items[0] if single else items  # type: ignore[no-any-return]

    def _run(self, kind: str, docs: Sequence[Any], options: Options) -> None:
        if docs:
            write_documents(self.mapper, [PendingWrite(kind, d, self.info) for d in docs], options)

    # -- reads by id --------------------------------------------------------------------

    def get(self, id: str, **options: Any) -> T | None:
        """The document with ``id`` (real-time GET), or ``None``; soft-deleted documents
        only with ``soft_deletes="all"``/``"deleted"``."""
        opts = self.options(**options)
        check_id(id)
        ttl = self.mapper.cache_ttl(self.info, opts)
        token = None
        if ttl is not None:
            cached, token = self.mapper.cache_lookup(self.info, id)
            if cached is not None:
                if not _visible(self.info, cached.get("_source"), opts.soft_deletes):
                    return None
                return self._hydrate(cached)
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
        return self._hydrate(raw)

    def get_many(self, ids: Iterable[str], **options: Any) -> list[T]:
        """Documents for ``ids`` (multi-GET, real-time) in request order, missing ids
        omitted, duplicates once. Time-series models: see
        :func:`esmapper.indexes.reads.get_documents`."""
        opts = self.options(**options)
        wanted = list(dict.fromkeys(ids))
        for id in wanted:
            check_id(id)
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
                        hit = _hit(raw)
                        hits[hit["_id"]] = hit
                        if ttl is not None:
                            self.mapper.cache_fill(
                                self.info, hit["_id"], hit, tokens.get(hit["_id"]), ttl
                            )
        return [
            self._hydrate(hits[id])
            for id in wanted
            if id in hits and _visible(self.info, hits[id].get("_source"), opts.soft_deletes)
        ]

    def exists(self, id: str, **options: Any) -> bool:
        """Whether ``id`` exists (real-time; a soft-deleted document counts only with
        ``soft_deletes="all"``/``"deleted"``)."""
        opts = self.options(**options)
        check_id(id)
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
        seq_no = raw.get("_seq_no")
        version = None if seq_no is None else f"{raw['_primary_term']}:{seq_no}"
        source = raw.get("_source") or {}
        document: T = self.info.from_source(source, raw["_id"], version)
        object.__setattr__(
            document, "_esm_state", DocState(source, raw.get("_index"), version=version)
        )
        return document

    # -- search ------------------------------------------------------------------------

    def search(self, filter: str | Query | None = None, **kwargs: Any) -> SearchRequest:
        """The compiled :class:`SearchRequest` (validated; nothing is sent yet)."""
        search_keys = {
            "partitions",
            "sort",
            "aggregations",
            "limit",
            "page",
            "search_after",
            "includes",
            "excludes",
            "snapshot",
        }
        search_args = {k: kwargs.pop(k) for k in list(kwargs) if k in search_keys}
        return SearchRequest(
            self.mapper, self.info, self.options(**kwargs), filter=filter, **search_args
        )

    def find(self, filter: str | Query | None = None, **kwargs: Any) -> FindResults[T]:
        """Search (near-real-time): ``filter`` in Lucene syntax or a ``Q`` object, ``sort``,
        ``aggregations``, ``limit`` (default 10, max 10,000), ``page`` (1-based),
        ``search_after`` (``True`` or a token), ``snapshot`` (page through a point in time:
        ``True`` keeps it alive 5 minutes between page requests, ``"90s"``/``"10m"``/a
        ``timedelta`` that long; every ``next_page()`` extends it),
        ``includes``/``excludes``, ``partitions=(start, end)`` (time-series models: search
        only the dated partitions of that period; FEATURES IX-11). Raises
        QueryValidationError before sending anything; ``next_page()`` of a snapshot whose
        point in time is gone raises :class:`SnapshotExpiredError`."""
        return self.search(filter, **kwargs).find()

    def find_one(self, filter: str | Query | None = None, **kwargs: Any) -> T | None:
        """The first document :meth:`find` would return, or ``None``."""
        kwargs["limit"] = 1
        results = self.find(filter, **kwargs)
        return results.hits[0].document if results.hits else None

    def count(self, filter: str | Query | None = None, **options: Any) -> int:
        """The number of matching documents (exact; soft-delete mode applies)."""
        return self.search(filter, **options).count()

    def aggregate(
        self, aggregations: str, filter: str | Query | None = None, **options: Any
    ) -> Any:
        """Only the aggregations of a search (``size=0``)."""
        return self.search(filter, aggregations=aggregations, **options).aggregate_only()

    # -- by query and patches ------------------------------------------------------------

    def patch(self, ids: str | Iterable[str], patch: Patch, **options: Any) -> None:
        """Patch document(s) by id, whatever their soft-delete state. A missing id raises
        :class:`DocumentNotFoundError`; a conflict :class:`VersionConflictError`."""
        _patching.patch_ids(self, ids, patch, self.options(**options))

    def patch_all(self, filter: str | Query | None, patch: Patch, **options: Any) -> int:
        """Patch every matching document; returns the number changed (update-by-query for
        a ScriptPatch on a model not cached, else a point-in-time scan written in batches
        with version checks: see :mod:`esmapper._patching`). A scan whose point in time is
        lost more than 10 times raises :class:`SnapshotExpiredError`."""
        return _patching.patch_all(self, filter, patch, self.options(**options))

    def remove_all(self, filter: str | Query | None = None, **options: Any) -> int:
        """Hard-delete matching documents (soft-delete mode applies to matching); returns
        the number removed. Uses delete-by-query when nothing listens to removals and the
        model is not cached, else a point-in-time scan (a scan whose point in time is lost
        more than 10 times raises :class:`SnapshotExpiredError`)."""
        return _patching.remove_all(self, filter, self.options(**options))

    def batch_process(
        self,
        filter: str | Query | None,
        fn: Callable[[list[T]], bool | None],
        batch_size: int = 100,
        **options: Any,
    ) -> int:
        """Call ``fn`` with batches of matching documents until they run out or ``fn``
        returns ``False``; returns the number of documents given to ``fn``.

        Sends ``POST /<alias>/_pit?keep_alive=K``, one search per batch (``pit`` with the
        same ``keep_alive``, so each batch extends the point in time; sorted by ``sort``,
        if given, then ``id``; ``search_after`` the previous batch) and ``DELETE /_pit`` at
        the end, also when ``fn`` stops or raises. ``K`` is ``snapshot=`` (``"5m"`` by
        default; ``"30m"``, a ``timedelta``): the longest ``fn`` may take on one batch.
        Other keyword arguments are those of :meth:`find` (``sort``, ``includes``,
        ``search_after=token`` to start after a document) and the options.

        Raises ``ValueError`` for a ``batch_size`` outside 1..10000 and
        :class:`QueryValidationError` for a bad filter, sort or ``snapshot`` (before
        anything is sent). When the point in time is gone anyway (``fn`` took longer than
        ``K``, or it was closed) raises :class:`SnapshotExpiredError` with ``processed``,
        ``pages`` and ``last_sort``/``search_after``: ``batch_process(filter, fn,
        search_after=err.search_after)`` continues after the last document ``fn`` got. It
        does not reopen a point in time by itself: a new one shows documents written since
        the run began, which ``fn`` would then see, in the same run.
        """
        if batch_size < 1 or batch_size > 10_000:
            raise ValueError("batch_size must be between 1 and 10000")
        snapshot = options.pop("snapshot", True)
        if snapshot is False:
            raise QueryValidationError(
                "batch_process always pages through a point in time; snapshot= sets its "
                "keep-alive (e.g. snapshot='10m')",
                field="snapshot",
            )
        return _scan.scan(
            self,
            filter,
            lambda hits: fn([hit.document for hit in hits]),
            limit=batch_size,
            snapshot=True if snapshot is None else snapshot,
            **options,
        )

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

    def require(self, id: str, **options: Any) -> T:
        """Like :meth:`get`, but a missing document raises :class:`DocumentNotFoundError`."""
        document = self.get(id, **options)
        if document is None:
            raise DocumentNotFoundError(id, index=self.spec.alias)
        return document

    def __repr__(self) -> str:
        return f"Repository({self.model.__name__}, alias={self.spec.alias!r})"
