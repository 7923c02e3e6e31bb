"""The repository: immediate operations on one model.

Reads use the real-time GET/mget for ids and the Search API for everything else; every
write goes through the shared write pipeline (:mod:`esmapper._writes`) as a one-shot unit
of work, so signals, version checks, id checks and cache invalidation are the same as in a
session. The searches (``find`` and its relatives, ``batch_process``) live in
:mod:`esmapper._searching`. Repositories are thread-safe; get one with
``mapper.repository(Model)``.
"""

from __future__ import annotations

import datetime as _dt
import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, overload

import attrs
from elasticsearch.dsl.query import Query
from typing_extensions import Unpack

from esmapper import _patching, signals
from esmapper._cache_hooks import invalidate_query, key_entries, sees_writes, stored
from esmapper._keywords import OptionKeywords
from esmapper._limits import current as current_limits
from esmapper._limits import limited
from esmapper._pending import WriteKind, routed_id
from esmapper._reading import Reading
from esmapper._searching import _defaults
from esmapper._writes import PendingWrite, composed_id, write_documents
from esmapper.errors import (
    BulkWriteError,
    DocumentError,
    DocumentNotFoundError,
    VersionConflictError,
)
from esmapper.indexes._lookup import unrouted
from esmapper.model.partial import check_finite, check_partial
from esmapper.model.state import state_of
from esmapper.options import Options, check_expires_in, given
from esmapper.patches import PartialPatch, Patch
from esmapper.signals import ChangeType, ModifiedDocument

if TYPE_CHECKING:
    from esmapper.cache import CacheClient
    from esmapper.mapper import Mapper
    from esmapper.model import Document

__all__ = ["Repository"]

_REMOVE_SIGNALS = (
    signals.documents_removing,
    signals.documents_removed,
    signals.documents_changing,
    signals.documents_changed,
)

#: Re-loads of ``remove(ids)`` after its delete at the version loaded conflicted, when
#: neither the call nor the mapper sets ``retries``.
_REMOVE_ROUNDS = 5

#: Re-reads after a conflict of ``update_with_retry`` when neither the call nor the mapper
#: sets ``retries``.
_UPDATE_RETRIES = 3

#: A model: a subclass of :class:`~esmapper.model.Document`.
T = TypeVar("T", bound="Document")
R = TypeVar("R")


class Repository(Reading[T]):
    """Immediate operations on the documents of ``model``. Options are keyword
    arguments of every call: see :class:`esmapper.options.Options`; each call's keywords
    are one of the ``TypedDict`` classes of :mod:`esmapper._keywords`."""

    def __init__(self, mapper: Mapper, model: type[T]) -> None:
        self.mapper = mapper
        self.services = mapper.services
        self.model = model
        self.info = model.__esmapper__  # type: ignore[attr-defined]
        self.defaults = Options()
        self._by_id = {}
        self._by_cache = {}
        self._by_keyword = {"cache": self._by_cache}
        self._by_keywords = {}

    # -- writes ------------------------------------------------------------------------

    @overload
    def add(self, docs: T, **options: Unpack[OptionKeywords]) -> T: ...
    @overload
    def add(self, docs: Sequence[T], **options: Unpack[OptionKeywords]) -> list[T]: ...
    @limited(_defaults)
    def add(self, docs: T | Sequence[T], **options: Unpack[OptionKeywords]) -> T | list[T]:
        """Create document(s): ``op_type=create``, so an existing id raises
        :class:`DuplicateDocumentError` and leaves the stored document unchanged. Sets
        ``id`` (composed from ``id_fields`` or a new ObjectId), dates and ``version``."""
        return self._write("add", docs, given(options))  # type: ignore[no-any-return]

    @overload
    def save(self, docs: T, **options: Unpack[OptionKeywords]) -> T: ...
    @overload
    def save(self, docs: Sequence[T], **options: Unpack[OptionKeywords]) -> list[T]: ...
    @limited(_defaults)
    def save(self, docs: T | Sequence[T], **options: Unpack[OptionKeywords]) -> T | list[T]:
        """Replace document(s) (Index API). ``Versioned`` models send
        ``if_seq_no``/``if_primary_term`` from ``version``; a stale version raises
        :class:`VersionConflictError`. A doc without id raises :class:`DocumentError`. With
        ``tenant=``, a document stored under another tenant, or one that would move to
        another tenant, raises DocumentValidationError before anything is sent (judged by
        the stored copy: see :mod:`esmapper.custom_fields._tenancy`)."""
        return self._write("save", docs, given(options))  # type: ignore[no-any-return]

    @limited(_defaults)
    def remove(self, docs: T | str | Iterable[T | str], **options: Unpack[OptionKeywords]) -> None:
        """Hard-delete documents or ids (whatever the soft-delete support); a missing id is
        a no-op. A ``Versioned`` document is deleted only at the version it holds
        (``if_seq_no``/``if_primary_term``; stale: :class:`VersionConflictError`); an id
        deletes whatever is stored. Ids are loaded first (one mget) when removal signals
        have receivers, when the repository's ``invalidate_cache_for`` needs the content,
        or with ``tenant=``; such an id is then deleted at the version loaded, so the
        receivers see the content that is deleted: one changed meanwhile (a conflict) is
        loaded again (not from the cache; in real time, a child by the routing its first
        load found) and deleted at its new version, the "-ing" receivers called again with
        it, up to 5 rounds (the call's ``retries=``), then
        :class:`VersionConflictError` names the ids that kept changing (not deleted). With
        ``tenant=``: an id of another tenant's document is a no-op (not there for it), and
        a document stored under another tenant (whatever the object says) raises
        DocumentValidationError before anything is sent (see
        :mod:`esmapper.custom_fields._tenancy`)."""
        items = self._items("remove", docs, ids_too=True)
        ids = [item for item in items if isinstance(item, str)]
        opts = self.options(**given(options))
        # the features' check of removals by id, before anything is loaded (one rule
        # whichever path follows: a child's plain id is refused)
        by_id = [PendingWrite("remove", None, self.info, id, conditional=False) for id in ids]
        _patching.check_by_id(self.services, self.info, opts, by_id)
        # with tenant=, an id is loaded to know its tenant: another tenant's is not there
        # its custom cache keys are made of the content (invalidate_cache_for sees it)
        if not ids or not (
            opts.tenant is not None
            or any(signals.has_receivers(s, self.model) for s in _REMOVE_SIGNALS)
            or sees_writes(self.services, self.info)
        ):
            pendings = [
                PendingWrite("remove", item, self.info)
                if not isinstance(item, str)
                else PendingWrite(
                    "remove", self.info.from_source({}, item, None), self.info, conditional=False
                )
                for item in items
            ]
            if pendings:
                write_documents(self.services, pendings, opts)
            return
        loaded = self._load_for_removal(ids, opts, cached=True)
        # an id whose shard it does not tell (a child's plain id) was searched for,
        # near-real-time: not found is no proof it is missing, so it is written as
        # without the load (the model's check refuses it, naming the routing it needs)
        unknown = set(unrouted(self.spec, [id for id in ids if id not in loaded]))
        pendings = []
        for item in items:
            if not isinstance(item, str):
                pendings.append(PendingWrite("remove", item, self.info))
            elif item in loaded:
                pendings.append(self._guarded_removal(loaded[item]))
            elif item in unknown:
                doc = self.info.from_source({}, item, None)
                pendings.append(PendingWrite("remove", doc, self.info, conditional=False))
        conflicted = self._remove_loaded(pendings, opts, set(loaded))
        for _round in range(current_limits().retry_rounds(_REMOVE_ROUNDS)):
            if not conflicted:
                return
            # read again by the id the delete was routed by (a child's with its parent's
            # routing): a real-time read, never the near-real-time search a plain id needs,
            # which would show the same stale copy until the next refresh
            reread = [routed_id(p) for p in conflicted]
            again = self._load_for_removal(reread, opts, cached=False)
            retry = [self._guarded_removal(again[id]) for id in reread if id in again]
            conflicted = self._remove_loaded(retry, opts, set(again)) if retry else []
        if conflicted:
            ids = [str(p.doc.id) for p in conflicted]
            raise VersionConflictError(
                f"remove on {self.info.name}: {len(ids)} document(s) kept changing "
                "concurrently and were not removed",
                ids=ids,
                index=self.spec.alias,
                error_type="version_conflict_engine_exception",
            )

    def _load_for_removal(self, ids: list[str], opts: Options, *, cached: bool) -> dict[str, T]:
        """The stored documents among ``ids`` as ``remove`` deletes them (soft-deleted ones
        too; under the call's tenant); ``cached=False``: read from the server."""
        extra: dict[str, Any] = {} if cached else {"cache": False}
        found = self.get_many(ids, soft_deletes="all", tenant=opts.tenant, **extra)
        return {str(d.id): d for d in found}  # type: ignore[attr-defined]

    def _guarded_removal(self, doc: T) -> PendingWrite:
        """The delete of a loaded document at the version it was loaded at."""
        state = state_of(doc)
        guard = state.version if state is not None else None
        return PendingWrite("remove", doc, self.info, conditional=False, guard=guard)

    def _remove_loaded(
        self, pendings: list[PendingWrite], opts: Options, guarded: set[str]
    ) -> list[PendingWrite]:
        """Write ``pendings``; those of the ids among ``guarded`` (deleted at the version
        loaded) that got a version conflict. Any other failure raises as the write raised
        it."""
        if not pendings:
            return []
        try:
            write_documents(self.services, pendings, opts)
        except (BulkWriteError, DocumentError) as exc:
            conflicts = [str(f.id) for f in exc.failures if f.status == 409]
            if not exc.failures or len(conflicts) != len(exc.failures):
                raise
            if not set(conflicts) <= guarded:
                raise
            return [p for p in pendings if str(p.doc.id) in set(conflicts)]
        return []

    def _write(
        self, kind: WriteKind, docs: T | Sequence[T], options: dict[str, Any]
    ) -> T | list[T]:
        single = isinstance(docs, self.model)
        items = self._items(kind, docs)
        self._run(kind, items, self.options(**options))  # (tenant= checked by the pipeline)
        return items[0] if single else items  # type: ignore[return-value]

    def _items(self, kind: str, docs: Any, *, ids_too: bool = False) -> list[Any]:
        """``docs`` (one document, or an iterable of them; ids too for ``remove``) as a
        list, each checked: anything else raises TypeError naming the call and the item."""
        accepted = (str, self.model) if ids_too else self.model
        one = isinstance(docs, accepted) or not isinstance(docs, Iterable)
        items = [docs] if one else list(docs)
        for item in items:
            if not isinstance(item, accepted):
                what = f"{self.model.__name__} documents" + (" or ids" if ids_too else "")
                raise TypeError(f"{kind}() takes {what}, got {item!r}")
        return items

    def _run(self, kind: WriteKind, docs: Sequence[Any], options: Options) -> None:
        if docs:
            write_documents(
                self.services, [PendingWrite(kind, d, self.info) for d in docs], options
            )

    @limited(_defaults)
    def update_with_retry(
        self, id: str, fn: Callable[[T], bool | None], **options: Unpack[OptionKeywords]
    ) -> T:
        """Read document ``id``, let ``fn`` change it, and save it with its version check;
        when another writer saved it in between (:class:`VersionConflictError`), read it
        again and call ``fn`` again on the fresh copy (the reference's
        optimistic-locking helper). Returns the document as saved.

        ``fn(doc)`` changes ``doc`` in place; returning ``False`` means "no change": nothing
        is saved and the document is returned as read. Each attempt is a real-time GET
        (never the cache) and a save through the whole write pipeline (validation, signals,
        dates), under the call's options. ``retries`` (the option, default the mapper's
        ``max_retries``) bounds the re-reads after a conflict; the last conflict is raised.
        Raises :class:`DocumentNotFoundError` when ``id`` is missing (or hidden by the
        soft-delete mode), ``TypeError`` for a model without ``em.Versioned`` (its saves
        carry no version, so another writer's change would be overwritten silently, not
        retried), and whatever ``fn`` or the save raises otherwise (a save whose outcome is
        unknown is never retried)."""
        if not self.info.versioned:
            raise TypeError(
                f"update_with_retry needs a versioned model: {self.model.__name__} does not "
                "derive from em.Versioned, so a save cannot tell that another writer changed "
                "the document in between"
            )
        given_options = given(options)
        read_options = {k: v for k, v in given_options.items() if k != "cache"}
        for attempt in itertools.count():
            doc = self.get(id, cache=False, **read_options)
            if doc is None:
                raise DocumentNotFoundError(id, index=self.info.name)
            if fn(doc) is False:
                return doc
            try:
                return self.save(doc, **given_options)
            except VersionConflictError:
                if attempt >= current_limits().retry_rounds(_UPDATE_RETRIES):
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    # -- by query and patches ------------------------------------------------------------

    @limited(_defaults)
    def patch(
        self, ids: str | Iterable[str], patch: Patch, **options: Unpack[OptionKeywords]
    ) -> None:
        """Patch document(s) by id, whatever their soft-delete state. A missing id raises
        :class:`DocumentNotFoundError`; a conflict :class:`VersionConflictError`. A
        ``PartialPatch`` is checked against the model first (:func:`_checked`). With
        ``tenant=``, another tenant's id is missing, whatever the patch type. A patch that
        turns ``is_deleted`` from false to true publishes ``REMOVED``, like a save."""
        opts = self.options(**given(options))
        _patching.patch_ids(self._listing(), ids, self._checked(patch, opts), opts)

    @limited(_defaults)
    def patch_all(
        self, filter: str | Query | None, patch: Patch, **options: Unpack[OptionKeywords]
    ) -> int:
        """Patch every matching document; returns the number changed (update-by-query for
        a ScriptPatch on a model not cached, else a point-in-time scan written in batches
        with version checks: see :mod:`esmapper._patching`). A scan whose point in time is
        lost more than 10 times raises :class:`SnapshotExpiredError`. A ``PartialPatch`` is
        checked against the model first (:func:`_checked`). On a cluster the
        update-by-query runs as a task followed to its end: ``timeout=`` cancels it when it
        passes (:class:`OutcomeUnknownError`), so does Ctrl-C; documents it refused raise
        :class:`BulkWriteError`, matches changed meanwhile :class:`VersionConflictError`.
        A task someone else cancelled (``POST _tasks/<id>/_cancel``) raises
        :class:`OutcomeUnknownError` with ``error_type="task_cancelled"`` and how many it
        patched: running it again re-applies the script to those too (safe only for a
        script that sets values)."""
        opts = self.options(**given(options))
        checked = self._checked(patch, opts)
        try:
            return _patching.patch_all(self._listing(), filter, checked, opts)
        finally:
            invalidate_query(self.services, self.info, filter, ChangeType.SAVED)

    def _checked(self, patch: Patch, options: Options) -> Patch:
        """``patch``, a ``PartialPatch`` checked against the model before anything is sent
        (:mod:`esmapper.model.partial`): an unknown field, a dotted key or a value of the
        wrong type raises :class:`DocumentValidationError` naming the field, and values
        become what the model stores (datetimes, enums, embedded objects). With
        ``validate=False`` only ``NaN``/infinities are refused (JSON has neither)."""
        if not isinstance(patch, PartialPatch):
            return patch
        _patching.check_patch(self.services, self.info, patch, options)  # the tenant rule
        if not options.validate:
            check_finite(self.info, patch.doc)
            return patch
        return attrs.evolve(patch, doc=check_partial(self.info, patch.doc))

    @limited(_defaults)
    def remove_all(
        self, filter: str | Query | None = None, **options: Unpack[OptionKeywords]
    ) -> int:
        """Hard-delete matching documents (soft-delete mode applies to matching); returns
        the number removed. Uses delete-by-query when nothing listens to removals and the
        model is not cached, else a point-in-time scan (a scan whose point in time is lost
        more than 10 times raises :class:`SnapshotExpiredError`). On a cluster the
        delete-by-query runs as a task followed to its end, run again for version
        conflicts only once it ended: ``timeout=`` cancels it when it passes
        (:class:`OutcomeUnknownError`), so does Ctrl-C (see :mod:`esmapper._patching`). A
        task someone else cancelled (``POST _tasks/<id>/_cancel``) raises
        :class:`OutcomeUnknownError` with ``error_type="task_cancelled"`` and how many it
        removed; running the call again removes the rest."""
        opts = self.options(**given(options))
        try:
            return _patching.remove_all(self._listing(), filter, opts)
        finally:
            invalidate_query(self.services, self.info, filter, ChangeType.REMOVED)

    def compose_id(self, doc: T) -> str:
        """The id :meth:`add` gives ``doc``, composed from the model's ``Index.id_fields``
        (sends nothing; raises like ``add`` for empty fields or an id over 512 bytes)."""
        return composed_id(self.info, doc)

    def invalidate_cache(self, items: T | str | Iterable[T | str]) -> None:
        """Drop cached entries: documents or ids (by-id entries), or custom cache keys
        (a ``cache_key=`` of a search, a key of :meth:`add_to_cache_with_keys`); a string
        is dropped as both. Sends nothing to Elasticsearch; removes the keys from the
        model's cache client and the mapper's (another mapper sharing it may cache the
        model there: :meth:`set_cache_client`, :meth:`disable_cache`); nothing without
        one."""
        listed = [items] if isinstance(items, str | self.model) else list(items)  # type: ignore[arg-type]
        ids = [i if isinstance(i, str) else i.id for i in listed]  # type: ignore[attr-defined]
        self.services.invalidate_ids(self.info, ids)
        keys = [i for i in ids if isinstance(i, str)]
        for documents in self.services.written_caches(self.info):
            documents.client.remove_many(keys)

    # -- cache hooks and settings (override the hooks in a subclass) -------------------

    def invalidate_cache_for(
        self, documents: list[ModifiedDocument], change_type: ChangeType
    ) -> None:
        """Hook: called after every write of this model's documents (add, save, remove,
        patches, the per-document writes of ``patch_all``/``remove_all``, session
        flushes), whatever its outcome, once per change type, after their by-id entries
        were removed. Each :class:`~esmapper.signals.ModifiedDocument` holds the
        document written (``value``) and the stored one it replaced (``original``, when
        known; see :mod:`esmapper._cache_hooks`). Override it to drop custom keys made of
        the documents' content, from both sides (:func:`esmapper.union_original_and_modified`),
        with :meth:`invalidate_cache`. Does nothing here; an exception is logged."""

    def invalidate_cache_by_query(
        self, filter: str | Query | None, change_type: ChangeType
    ) -> None:
        """Hook: called after every :meth:`patch_all` (``SAVED``) and :meth:`remove_all`
        (``REMOVED``) with the caller's ``filter``, whatever their outcome: drop the custom
        keys a change of the matching documents makes stale (a cached list of them). Does
        nothing here; an exception is logged."""

    def add_to_cache(
        self, documents: list[T], *, expires_in: float | None, dirty_read: bool
    ) -> None:
        """Hook: called with the documents a cached read fetched from Elasticsearch (by
        id: stored in the cache, ``dirty_read=False``; ``find``/``find_one``: ``dirty_read``
        unless the search refreshed first), ``expires_in`` the seconds their entries live
        (``None``: the cache client's default). Override it to cache them under keys of
        your own with :meth:`add_to_cache_with_keys`. Does nothing here; an exception is
        logged."""

    def add_to_cache_with_keys(
        self,
        entries: Mapping[str, T | Sequence[T]],
        *,
        expires_in: float | _dt.timedelta | None = None,
    ) -> None:
        """Cache documents under keys of your own (``{"email:ann@example.com": doc}``): each
        stored as the page a ``find``/``find_one`` given that ``cache_key=`` serves. A
        key, a document of another model, one not stored yet or loaded in part raise
        ``TypeError``/``ValueError`` before anything is stored. ``expires_in``: seconds or a
        ``timedelta`` (``None``: the cache client's default). Nothing without a cache
        client; drop them with :meth:`invalidate_cache` (from :meth:`invalidate_cache_for`)."""
        seconds = check_expires_in(expires_in)
        made = key_entries(self.info, entries)
        cache = self.services.cache_of(self.info)
        if cache is None:
            return
        for key, value in made:
            cache.set(key, value, seconds)
        stored([key for key, _value in made])

    def set_cache_client(self, client: CacheClient) -> None:
        """Cache this model's documents, custom keys and recently soft-deleted ids in
        ``client`` instead of the mapper's cache client (every read and write of the
        model, sessions included). Call it in the subclass's ``__init__`` (register the
        subclass: ``mapper.register(Model, repository=MyRepository)``). Writes still drop
        the model's entries and keys (:meth:`invalidate_cache`) from the mapper's cache
        client as well: other mappers or processes sharing it may cache the model there."""
        needed = ("get", "set", "compare_and_set", "remove_many", "remove_by_prefix")
        if not all(callable(getattr(client, name, None)) for name in needed):
            raise TypeError(f"set_cache_client() takes a CacheClient, got {client!r}")
        self.services.use_cache(self.model, client)
        self._forget_reads()

    def disable_cache(self) -> None:
        """No caching for this model in this mapper: reads never read or fill a cache
        (``cache=True`` is ignored). Writes still drop the model's entries from the
        mapper's cache client, and the hooks still run (:meth:`invalidate_cache` removes
        keys there): other mappers or processes sharing that client may cache the model."""
        self.services.use_cache(self.model, None)
        self._forget_reads()

    def _forget_reads(self) -> None:
        """Drop what the by-id reads worked out under the previous cache client."""
        self._by_id.clear()
        for memo in self._by_keyword.values():
            memo.clear()
        self._by_keywords.clear()

    def __repr__(self) -> str:
        return f"Repository({self.model.__name__}, alias={self.spec.alias!r})"
