"""The reads by id of a repository: ``get``, ``get_many``, ``exists`` and ``require``.

They use the real-time GET and multi-GET of :mod:`esmapper.indexes.reads` (the one owner
of by-id requests: a time-series model's partitions, a feature's routing), read through
the document cache when the model or the call asks for it (a cached hit is a fresh
object: hydrated, or a copy of the document hydrated from that same in-process entry),
and apply to what they found the rules of the model's features (the ``visible`` point of
:mod:`esmapper._features`: a soft-delete mode, ``tenant=``); they name none of them.
:class:`Reading` sits between the searches
(:class:`~esmapper._searching.Searching`) and the writes of
:class:`~esmapper.repository.Repository`.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
from elasticsearch import NotFoundError
from typing_extensions import Unpack

from esmapper import _gcpause as _gc
from esmapper._features import Points, Visibility, check_call_options
from esmapper._keywords import CountKeywords, OptionKeywords
from esmapper._limits import limited
from esmapper._search import is_index_missing
from esmapper._searching import Searching, _defaults
from esmapper.errors import DocumentNotFoundError
from esmapper.ids import check_id
from esmapper.indexes.reads import document_exists, get_document, get_documents
from esmapper.model.state import DocState, version_of
from esmapper.options import Options, given

if TYPE_CHECKING:
    from esmapper.indexes.spec import IndexSpec
    from esmapper.model import Document

__all__ = ["Reading", "shown", "visibility"]

#: A model: a subclass of :class:`~esmapper.model.Document`.
T = TypeVar("T", bound="Document")

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


def visibility(info: Any, options: Options) -> tuple[Visibility, ...]:
    """The rules a by-id read of ``info``'s model under ``options`` applies to the
    documents it found (the features' ``visible`` point; none for most reads)."""
    hooks = info.points.visible
    if not hooks:
        return ()
    return tuple(rule for rule in (hook(options) for hook in hooks) if rule is not None)


def shown(rules: Sequence[Visibility], doc: Any) -> bool:
    """Whether ``doc`` passes every rule of :func:`visibility`."""
    return all(rule.test(doc) for rule in rules)


def only_shown(rules: Sequence[Visibility], docs: list[Any]) -> list[Any]:
    """The documents of ``docs`` that pass every rule (one filter pass per rule: a
    ``get_many`` of a soft-delete model costs one call per document, not a generator)."""
    for rule in rules:
        docs = list(filter(rule.test, docs))
    return docs


@attrs.frozen(slots=True)
class ByIdRead:
    """What a by-id read of one repository implies under one ``Options``, worked out
    once for those options (not on every call): its :func:`visibility` rules and its
    cache TTL (``Services.cache_ttl``). ``points`` and ``documents``: the model's points
    and the mapper's document cache it was worked out under (a feature registered later
    attaches new points, a cache set on the mapper later changes the TTL: the entry is then
    stale)."""

    points: Points
    documents: Any
    rules: tuple[Visibility, ...]
    ttl: _dt.timedelta | None


#: How many options' :class:`ByIdRead` a repository keeps (then it starts over).
_BY_ID_MAX = 64


class Reading(Searching[T]):
    """The reads by id of a repository (see the module docstring)."""

    #: :class:`ByIdRead` by the options they were worked out for (see :meth:`_by_id_read`)
    _by_id: dict[Options, ByIdRead]

    def _by_id_read(self, opts: Options) -> ByIdRead:
        """The rules and cache TTL of a by-id read under ``opts``, kept per options (an
        ``Options`` is immutable; a call's options are the same object call after call:
        the repository's defaults, or ``Options.merge``'s)."""
        read = self._by_id.get(opts)
        info, services = self.info, self.services
        if (
            read is None
            or read.points is not info.points
            or read.documents is not services.documents
        ):
            read = ByIdRead(
                info.points,
                services.documents,
                visibility(info, opts),
                services.cache_ttl(info, opts),
            )
            if len(self._by_id) >= _BY_ID_MAX:
                self._by_id.clear()
            self._by_id[opts] = read
        return read

    @property
    def spec(self) -> IndexSpec:
        return self.services.spec(self.model)

    @limited(_defaults)
    def get(self, id: str, **options: Unpack[OptionKeywords]) -> T | None:
        """The document with ``id`` (real-time GET), or ``None``; soft-deleted documents
        only with ``soft_deletes="all"``/``"deleted"``. Takes the options
        (:class:`~esmapper._keywords.OptionKeywords`), as every read and write by id does."""
        # no keyword (the usual call): the defaults as they are, no options built
        return self._get(id, self.options(**given(options)) if options else self.defaults)

    def _get(self, id: str, opts: Options) -> T | None:
        """:meth:`get` under ``opts`` (what a session's read runs)."""
        check_id(id)
        services, info = self.services, self.info
        check_call_options(info, opts)
        read = self._by_id_read(opts)
        ttl = read.ttl
        cached = token = None
        if ttl is not None:
            cached, token = services.cache_lookup(info, id)
        if cached is not None:
            # a copy of the document hydrated from this very entry, else hydrated
            copies = services.documents.copies  # type: ignore[union-attr]
            document = (
                self._hydrate(cached)
                if copies is None
                else copies.document(info, cached, self._hydrate)
            )
        else:
            found = get_document(services.client, self.spec, id)
            if found is None:
                return None
            raw = _hit(found)
            if ttl is not None:
                services.cache_fill(info, id, raw, token, ttl)
            document = self._hydrate(raw)
        for rule in read.rules:
            if not rule.test(document):
                return None
        return document

    @limited(_defaults)
    def get_many(self, ids: Iterable[str], **options: Unpack[OptionKeywords]) -> list[T]:
        """Documents for ``ids`` (multi-GET, real-time) in request order, missing ids
        omitted, duplicates once. Time-series models: see
        :func:`esmapper.indexes.reads.get_documents`."""
        return self._get_many(ids, self.options(**given(options)))

    @_gc.pausing  # the parsed docs and the documents all live on: no GC passes
    def _get_many(self, ids: Iterable[str], opts: Options) -> list[T]:
        """:meth:`get_many` under ``opts`` (what a session's read runs)."""
        wanted = list(dict.fromkeys(ids))
        for id in wanted:
            check_id(id)
        check_call_options(self.info, opts)
        read = self._by_id_read(opts)
        ttl = read.ttl
        hits: dict[str, dict[str, Any]] = {}
        tokens: dict[str, Any] = {}
        if ttl is not None:
            for id in wanted:
                cached, tokens[id] = self.services.cache_lookup(self.info, id)
                if cached is not None:
                    hits[id] = cached
        missing = [id for id in wanted if id not in hits]
        if missing:
            try:
                docs = get_documents(self.services.client, self.spec, missing)  # found ones
            except NotFoundError as exc:
                if not is_index_missing(exc):
                    raise
            else:
                for raw in docs:
                    if ttl is None:  # hydrated from the answer as it is
                        hits[raw["_id"]] = raw
                        continue
                    hit = _hit(raw)
                    hits[hit["_id"]] = hit
                    self.services.cache_fill(
                        self.info, hit["_id"], hit, tokens.get(hit["_id"]), ttl
                    )
        found = [self._hydrate(hits[id]) for id in wanted if id in hits]
        return only_shown(read.rules, found) if read.rules else found

    @limited(_defaults)
    def exists(
        self, id: str | None = None, *, filter: Any = _NO_FILTER, **options: Unpack[CountKeywords]
    ) -> bool:
        """Whether the document ``id`` exists (a real-time GET, with ``_source`` limited to
        ``is_deleted``), or, with ``filter=`` instead, whether any document matches (a
        near-real-time ``size=0`` search with ``terminate_after=1``; ``filter=None``
        matches every document). A soft-deleted document counts only with
        ``soft_deletes="all"``/``"deleted"``. A bad filter raises QueryValidationError
        before anything is sent; giving both ``id`` and ``filter`` (or neither) raises
        ``TypeError``. Takes the keywords of :meth:`count` (``partitions`` and
        ``partial_results`` only with ``filter=``). With ``tenant=``, another tenant's
        document does not exist (the GET reads the whole document: its tenant is the
        model's to compute).

        A search that some shards did not answer (a failed shard, a timeout): a match the
        others found is a match (``True``); none found raises
        :class:`~esmapper.errors.PartialResultsError`, or gives ``False`` with
        ``partial_results=True`` (the documents of the missing shards unknown)."""
        if filter is not _NO_FILTER:
            if id is not None:
                raise TypeError("exists() takes an id or filter=, not both")
            return self._request(filter, given(options)).exists()
        if id is None:
            raise TypeError("exists() takes an id, or filter= to test whether anything matches")
        if options.get("partitions") is not None or options.get("partial_results") is not None:
            raise TypeError(
                "exists() takes partitions= and partial_results= with filter=, not with an id"
            )
        opts = self.options(**given(options))
        check_id(id)
        check_call_options(self.info, opts)
        rules = self._by_id_read(opts).rules
        if any(rule.reads is None for rule in rules):  # a rule reads the whole document
            return self._get(id, attrs.evolve(opts, cache=False, cache_key=None)) is not None
        if not rules:
            return document_exists(self.services.client, self.spec, id)
        # the fields the rules read, only (the document built from them is partial)
        reads = sorted({name for rule in rules for name in rule.reads or ()})
        found = get_document(self.services.client, self.spec, id, source_includes=reads or None)
        return found is not None and shown(rules, self._hydrate(found))

    def _hydrate(self, raw: dict[str, Any]) -> T:
        """The document of a GET/multi-GET answer, its ``_source`` kept as the original
        (no copy: hydration copies every mutable value it hands to the document)."""
        version, condition = version_of(raw.get("_seq_no"), raw.get("_primary_term"))
        source = raw.get("_source") or {}
        state = DocState(source, raw.get("_index"), None, False, version, condition)
        document: T = self.info.from_source(source, raw["_id"], version, state)
        return document

    @limited(_defaults)
    def require(self, id: str, **options: Unpack[OptionKeywords]) -> T:
        """Like :meth:`get`, but a missing document raises :class:`DocumentNotFoundError`."""
        document = self.get(id, **options)
        if document is None:
            raise DocumentNotFoundError(id, index=self.spec.alias)
        return document
