"""The reads of a :class:`~esmapper.session.Session`: ``get``, ``get_many``, ``find`` and
``find_one`` through its identity map.

A read returns the object the session already holds for a model and id (with its local
changes), else reads the store through the model's repository (the same requests a
``Repository`` read sends: a real-time GET, one ``_mget``, one search) and puts what it
loaded in the identity map. A document held in part (loaded by a ``find`` with
``includes``/``excludes``) is completed in place from the whole stored document, like
SQLAlchemy loads deferred attributes. The session's soft-delete mode, cache choice and
tenant apply to every read (a call option a feature reads, like ``tenant``, to the models
that feature applies to; what a read lets through is the features' ``visible`` point, as
for ``Repository.get``); its consistency is for its flushes.

:class:`SessionReads` is the half of the session that loads; the unit of work (adding,
removing, flushing, commit and rollback) is in :mod:`esmapper.session`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
from elasticsearch.dsl.query import Query
from typing_extensions import Unpack

from esmapper._bodies import merged, partial_changes
from esmapper._keywords import FindKeywords, FindOneKeywords, OptionKeywords
from esmapper._limits import limited
from esmapper._reading import shown, visibility
from esmapper._search import SEARCH_OPTIONS
from esmapper.model.state import state_of
from esmapper.options import Options, given, split
from esmapper.results import FindResults

if TYPE_CHECKING:
    from esmapper.mapper import Mapper
    from esmapper.model import Document
    from esmapper.repository import Repository

__all__ = ["SessionReads"]

#: A model: a subclass of :class:`~esmapper.model.Document`.
T = TypeVar("T", bound="Document")


def _defaults(session: SessionReads) -> Options:
    """The options (limits included) of a session call that gives none: the session's
    (see ``_limits``)."""
    return session.options


class SessionReads:
    """The loading half of a session (see the module docstring); the state it reads and
    the identity-map methods it calls are the session's."""

    mapper: Mapper
    options: Options
    _identity: dict[tuple[type, str], Any]
    _maybe_dirty: dict[int, Any]

    if TYPE_CHECKING:  # defined by Session

        def _check_open(self) -> None: ...
        def _adopt(self, doc: Any) -> Any: ...
        def expunge(self, doc: Document) -> None: ...

    @limited(_defaults)
    def get(self, model: type[T], id: str, **options: Unpack[OptionKeywords]) -> T | None:
        """The document ``id`` of ``model``: from the identity map, else a real-time GET.

        A document the session holds in part (loaded by a ``find`` with
        ``includes``/``excludes``) is completed first: the whole stored document is read
        and merged into the same object (see :meth:`_complete`). Takes the options, as
        ``Repository.get`` does."""
        self._check_open()
        repo = self.mapper.repository(model)
        opts = self._read_options(repo, given(options))
        found = self._identity.get((model, id))
        if found is None:
            found = repo._get(id, opts)
            if found is None:
                return None
            found = self._adopt(found)
        elif _is_partial(found) and not self._complete(found, repo._get(id, _whole(opts))):
            return None
        return found if self._visible(found, opts) else None  # type: ignore[no-any-return]

    def _complete(self, doc: Any, whole: Any) -> bool:
        """Complete the partially loaded ``doc`` from ``whole`` (the same document read
        whole, or ``None`` when it is no longer stored), like SQLAlchemy loads deferred
        attributes: the object keeps its identity and its local changes (what a save of
        it would write: assigned fields, changed loaded fields), every other field takes
        the stored value. Without local changes the object takes the stored version;
        with some it keeps the version they were made at, so a flush still detects a
        concurrent change (VersionConflictError) instead of overwriting it.

        Returns whether the object is still there to be served: a document no longer
        stored is not, and leaves the session unless it has local changes (their flush
        reports the conflict). A local change that cannot be merged (an unloaded field
        mutated in place) raises DocumentError, as its save would.
        """
        state = state_of(doc)
        assert state is not None and state.original is not None
        info = type(doc).__esmapper__
        info.normalize(doc)
        baseline = info.to_source(info.from_source(state.original, doc.id, None))
        changes = partial_changes(
            info, doc, state.original, baseline, info.to_source(doc), state.assigned or set()
        )
        loaded = state_of(whole) if whole is not None else None
        if loaded is None or loaded.original is None:
            if not changes:
                self.expunge(doc)
            return False
        source = loaded.original
        fresh = info.from_source(merged(source, changes), doc.id, None)
        for spec in info.fields:
            if not spec.stored or spec.name == "id":
                continue
            value = object.__getattribute__(fresh, spec.name)
            if object.__getattribute__(doc, spec.name) != value:  # keep what is equal
                object.__setattr__(doc, spec.name, value)
        state.original = source
        state.partial = False
        state.assigned = None
        if loaded.index is not None:
            state.index = loaded.index
        if changes:
            self._maybe_dirty[id(doc)] = doc
        else:
            state.version = loaded.version
            if info.versioned:
                object.__setattr__(doc, "version", loaded.version)
        return True

    def _visible(self, doc: Any, options: Options, *, any_tenant: bool = False) -> bool:
        """Whether the rules of a read (:func:`~esmapper._reading.visibility`: its
        soft-delete mode, its tenant, the session's; none with ``any_tenant``) let ``doc``
        (as held in the session, with its local changes) through, like ``repo.get`` does
        for stored documents."""
        info = type(doc).__esmapper__
        if not info.points.visible:
            return True
        if any_tenant:
            options = attrs.evolve(options, tenant=None)
        return shown(visibility(info, options), doc)

    @limited(_defaults)
    def get_many(
        self, model: type[T], ids: Iterable[str], **options: Unpack[OptionKeywords]
    ) -> list[T]:
        """Documents for ``ids`` (identity map first, then one mget), in request order;
        documents held in part are completed like :meth:`get` does."""
        self._check_open()
        repo = self.mapper.repository(model)
        opts = self._read_options(repo, given(options))
        wanted = list(dict.fromkeys(ids))
        partial = {
            i: self._identity[(model, i)]
            for i in wanted
            if (model, i) in self._identity and _is_partial(self._identity[(model, i)])
        }
        missing = [i for i in wanted if (model, i) not in self._identity]
        if missing or partial:
            read = repo._get_many([*missing, *partial], _whole(opts))
            loaded = {d.id: d for d in read}  # type: ignore[attr-defined]
            for i, doc in partial.items():
                self._complete(doc, loaded.pop(i, None))
            for doc in loaded.values():
                if self._visible(doc, opts, any_tenant=True):  # held whatever its tenant
                    self._adopt(doc)
        held = [self._identity[(model, i)] for i in wanted if (model, i) in self._identity]
        return [d for d in held if self._visible(d, opts) and not _is_partial(d)]

    @limited(_defaults)
    def find(
        self, model: type[T], filter: str | Query | None = None, **options: Unpack[FindKeywords]
    ) -> FindResults[T]:
        """Search like ``Repository.find`` (its keywords); hits join the identity map (a
        document already in the session is returned as that object, with its local changes;
        one it held in part is completed from a whole hit, like :meth:`get` does)."""
        self._check_open()
        repo = self.mapper.repository(model)
        kwargs = given(options)
        search_args = split(kwargs, SEARCH_OPTIONS)
        opts = self._read_options(repo, kwargs)
        # Index.default_excludes...; the session's tenant for the models a join query
        # reaches (its inner query's model may have tenants where this one has none)
        search_args = {
            **search_args,
            "source_defaults": True,
            "session_tenant": self.options.tenant,
        }
        results = repo._listing().request(filter, opts, search_args).find()
        results._replace_documents(self._adopt_hit)
        fetch = results._fetch_next
        if fetch is not None:  # later pages join the identity map too

            def adopt_next(current: FindResults[T]) -> FindResults[T] | None:
                following = fetch(current)
                if following is not None:
                    following._replace_documents(self._adopt_hit)
                return following

            results._fetch_next = adopt_next
        return results

    def _adopt_hit(self, doc: Any) -> Any:
        held = self._adopt(doc)
        if held is not doc and _is_partial(held) and not _is_partial(doc):
            self._complete(held, doc)
        return held

    @limited(_defaults)
    def find_one(
        self, model: type[T], filter: str | Query | None = None, **options: Unpack[FindOneKeywords]
    ) -> T | None:
        """The first document :meth:`find` would return, or ``None``. Takes the keywords of
        :meth:`find` but ``limit`` and ``total``."""
        results = self.find(model, filter, **options, limit=1, total=False)
        return results[0] if results else None

    def _read_options(self, repo: Repository[Any], given: dict[str, Any]) -> Options:
        """The options of a read: the repository's defaults; the session's cache choice, its
        soft-delete mode (for a model with soft deletes) and tenant (for a model one of
        whose features reads ``tenant``): a session spans models, and the others have
        neither; then what the call gave (the session's consistency is for its flushes; a
        read asks for its own)."""
        takes = repo.info.points.options
        session = {
            "cache": self.options.cache,
            "cache_key": self.options.cache_key,
            "expires_in": self.options.expires_in,
            "expires_at": self.options.expires_at,
            "read_cache": self.options.read_cache,
            "tenant": self.options.tenant if "tenant" in takes else None,
        }
        if "soft_deletes" in takes:
            session["soft_deletes"] = self.options.soft_deletes
        return repo.defaults.merge(**{**session, **given})


def _whole(options: Options) -> Options:
    """The read options that complete a partial document: whatever its soft-delete state
    and tenant (the caller's mode and ``tenant=`` are applied to the completed object)."""
    return attrs.evolve(options, soft_deletes="all", tenant=None)


def _is_partial(doc: Any) -> bool:
    """Whether ``doc`` was loaded with ``includes``/``excludes`` (see DocState.partial)."""
    state = state_of(doc)
    return state is not None and state.partial
