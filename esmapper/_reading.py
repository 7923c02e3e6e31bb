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
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
from elasticsearch import NotFoundError
from typing_extensions import Unpack

from esmapper import _features
from esmapper import _gcpause as _gc
from esmapper._cache_hooks import add_read
from esmapper._features import Points, Visibility, check_call_options, refused_call_option
from esmapper._keywords import CountKeywords, GetKeywords, OptionKeywords
from esmapper._limits import applied, limited
from esmapper._search import is_index_missing
from esmapper._searching import Searching, _defaults
from esmapper.cache import NOT_KEPT
from esmapper.errors import DocumentNotFoundError
from esmapper.ids import check_id
from esmapper.indexes.reads import (
    document_exists,
    get_document,
    get_documents,
    get_documents_raw,
    unrouted,
)
from esmapper.model._wire_decode import hydrate
from esmapper.model.state import DocState, version_of
from esmapper.options import OPTION_NAMES, Options, given, refuse_keywords

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


def _test_of(rules: Sequence[Visibility]) -> Callable[[Any], bool] | None:
    """:func:`shown` as one test of a document (``None``: no rule; one rule: its own
    test, no loop)."""
    if not rules:
        return None
    if len(rules) == 1:
        return rules[0].test
    return lambda doc: shown(rules, doc)


def only_shown(rules: Sequence[Visibility], docs: list[Any]) -> list[Any]:
    """The documents of ``docs`` that pass every rule (one filter pass per rule: a
    ``get_many`` of a soft-delete model costs one call per document, not a generator)."""
    for rule in rules:
        docs = list(filter(rule.test, docs))
    return docs


@attrs.frozen(slots=True)
class ByIdRead:
    """What a by-id read of one repository implies under one ``Options``, worked out
    once for those options (not on every call): the ``options`` themselves, its
    :func:`visibility` rules, its cache TTL (``Services.cache_ttl``) and the alias its
    cache keys are made of. ``points`` and ``documents``: the model's points and the
    mapper's document cache it was worked out under (a feature registered later attaches
    new points, a cache set on the mapper later changes the TTL: the entry is then
    stale). ``kept``: the document cache's hit path for these options
    (:meth:`~esmapper.cache.DocumentCache.reader`), when the read is cached and its
    options pass the call-option check (:func:`~esmapper._features.refused_call_option`:
    it holds as long as ``points`` do); ``None``: every read takes the whole path.
    ``documents`` is the model's document cache (``Services.documents_of``), ``shared``
    the mapper's it was worked out under (a repository's ``set_cache_client`` or
    ``disable_cache`` drops its reads itself). ``serve``: a cached entry is served
    (``read_cache=``, by default whether the read is cached); a read cached but not
    served replaces the entry (:meth:`~esmapper.cache.DocumentCache.reserve_over`)."""

    options: Options
    points: Points
    documents: Any
    rules: tuple[Visibility, ...]
    ttl: _dt.timedelta | _dt.datetime | None
    alias: str
    kept: Callable[[str], Any] | None = None
    #: the registry's call options the check was made against (see :meth:`current`)
    calls: tuple[Any, ...] = ()
    shared: Any = None
    serve: bool = False

    def current(self, info: Any, services: Any) -> bool:
        """Whether this read still holds for the model ``info`` under the mapper's
        ``services``: the same points, document cache and registered call options."""
        return (
            self.points is info.points
            and self.shared is services.documents
            and self.calls is _features.call_options()
        )


#: How many options' :class:`ByIdRead` a repository keeps (then it starts over), and how
#: many spellings of a ``get``'s keywords.
_BY_ID_MAX = 64


def _spelling(keywords: Mapping[str, Any]) -> tuple[Any, ...]:
    """The key of several keywords of a ``get`` in :meth:`Reading._keyword_read`'s memo:
    their names, values and the values' types (``cache=1`` is not ``cache=True``)."""
    return (tuple(keywords.items()), tuple(map(type, keywords.values())))


#: The keywords ``get`` takes (checked where its keywords are first resolved).
_GET_KEYWORDS: frozenset[str] = frozenset({"id", *OPTION_NAMES})


class Reading(Searching[T]):
    """The reads by id of a repository (see the module docstring)."""

    #: :class:`ByIdRead` by the options they were worked out for (see :meth:`_by_id_read`)
    _by_id: dict[Options, ByIdRead]
    #: ``(the value's type, the defaults it was merged into, ByIdRead)`` by the name and
    #: the value of a ``get``'s one keyword (see :meth:`_keyword_read`)
    _by_keyword: dict[str, dict[Any, tuple[type, Options, ByIdRead]]]
    #: ``_by_keyword["cache"]`` (the cached get's own spelling, looked up in :meth:`get`)
    _by_cache: dict[Any, tuple[type, Options, ByIdRead]]
    #: ``(None, the defaults they were merged into, ByIdRead)`` by the :func:`_spelling`
    #: of a ``get``'s several keywords
    _by_keywords: dict[tuple[Any, ...], tuple[None, Options, ByIdRead]]

    def _by_id_read(self, opts: Options) -> ByIdRead:
        """The rules and cache TTL of a by-id read under ``opts``, kept per options (an
        ``Options`` is immutable; a call's options are the same object call after call:
        the repository's defaults, or ``Options.merge``'s)."""
        read = self._by_id.get(opts)
        info, services = self.info, self.services
        if read is None or not read.current(info, services):
            points, calls = info.points, _features.call_options()
            documents = services.documents_of(info)
            ttl = services.cache_ttl(info, opts)  # (a TTL only with a document cache)
            alias = services.spec(self.model).alias
            rules = visibility(info, opts)
            kept = None
            serve = documents is not None and (
                ttl is not None if opts.read_cache is None else opts.read_cache
            )
            if serve and documents is not None and refused_call_option(info, opts) is None:
                kept = documents.reader(alias, info, self._hydrate, _test_of(rules))
            read = ByIdRead(
                opts, points, documents, rules, ttl, alias, kept, calls, services.documents, serve
            )
            if len(self._by_id) >= _BY_ID_MAX:
                self._by_id.clear()
            self._by_id[opts] = read
        return read

    def _keyword_read(self, keywords: Mapping[str, Any]) -> ByIdRead:
        """The :class:`ByIdRead` of a ``get`` given ``keywords`` (not empty): the same
        spelling call after call is one lookup (its keywords were checked and merged into
        the repository's defaults the first time, :meth:`_keywords_worked_out`; an entry
        holds the defaults it was merged into, and the repository's new defaults or a
        stale read are worked out again). An unknown keyword raises ``TypeError`` listing
        those ``get`` takes, a bad value ``ValueError`` (nothing is kept of them)."""
        if len(keywords) == 1:  # the usual spelling
            (name,) = keywords
            return self._one_keyword_read(name, keywords[name])
        try:
            entry = self._by_keywords.get(_spelling(keywords))
        except TypeError:  # an unhashable value
            entry = None
        if entry is not None and entry[1] is self.defaults:
            read = entry[2]
            if read.current(self.info, self.services):
                return read
        return self._keywords_worked_out(keywords)

    def _one_keyword_read(self, name: str, value: Any) -> ByIdRead:
        """:meth:`_keyword_read` of one keyword: kept by its name, then its value (and the
        value's type: ``cache=1`` is not ``cache=True``, equal and one dict key)."""
        try:
            entry = self._by_keyword[name].get(value)
        except (KeyError, TypeError):  # a name not seen yet, an unhashable value
            entry = None
        if entry is not None and entry[0] is type(value) and entry[1] is self.defaults:
            read = entry[2]
            if read.current(self.info, self.services):
                return read
        return self._keywords_worked_out({name: value})

    def _keywords_worked_out(self, keywords: Mapping[str, Any]) -> ByIdRead:
        """:meth:`_keyword_read` of a spelling not kept (or kept stale): checked, merged
        into the defaults and kept for the next call (one keyword by its name, then its
        value and the value's type; several by :func:`_spelling`)."""
        if not _GET_KEYWORDS.issuperset(keywords):
            refuse_keywords("get", keywords, _GET_KEYWORDS)
        base = self.defaults
        read = self._by_id_read(base.merge(**given(keywords)))
        if isinstance(keywords.get("cache"), str):  # deprecated: warns on every call
            return read
        try:
            if len(keywords) == 1:
                [(name, value)] = keywords.items()
                memo = self._by_keyword.setdefault(name, {})
                if len(memo) >= _BY_ID_MAX:
                    memo.clear()
                memo[value] = (type(value), base, read)
            else:
                if len(self._by_keywords) >= _BY_ID_MAX:
                    self._by_keywords.clear()
                self._by_keywords[_spelling(keywords)] = (None, base, read)
        except TypeError:  # an unhashable value (a valid one: merged above): not kept
            pass
        return read

    @property
    def spec(self) -> IndexSpec:
        return self.services.spec(self.model)

    def get(
        self, id: str, *, cache: bool | None = None, **options: Unpack[GetKeywords]
    ) -> T | None:
        """The document with ``id`` (real-time GET), or ``None``; soft-deleted documents
        only with ``soft_deletes="all"``/``"deleted"``. Takes the options
        (``cache`` and :class:`~esmapper._keywords.GetKeywords`), as every read and write
        by id does; an unknown keyword raises ``TypeError`` listing those it takes. A
        cache hit sends nothing (``timeout``/``retries`` bound the GET of a miss)."""
        if options:  # one lookup of their spelling (see _keyword_read)
            read = self._keyword_read(options if cache is None else {"cache": cache, **options})
        elif cache is None:  # no keyword (a model cached by default): the defaults
            read = self._by_id_read(self.defaults)
        else:  # get(id, cache=True): no dict of keywords
            try:
                entry = self._by_cache.get(cache)
            except TypeError:
                entry = None
            if (
                entry is not None
                and entry[0] is type(cache)
                and entry[1] is self.defaults
                and entry[2].current(self.info, self.services)
            ):
                read = entry[2]
            else:
                read = self._one_keyword_read("cache", cache)
        # a hit kept in process: read.kept (worked out once for the options: their
        # call-option check passed then), without check_id: the key is <alias>:<id>, the
        # alias fixed, so an entry under it exists only for that very id, and only a read
        # or get_many that checked it fills one (an id of another type, or anything not
        # kept, takes the whole path, which checks it before it asks the cache)
        kept = read.kept
        if kept is not None and type(id) is str:
            document = kept(id)  # (the rules applied: None when they refuse it)
            if document is not NOT_KEPT:
                return document  # type: ignore[no-any-return]
        return self._read_by_id(id, read)

    def _get(self, id: str, opts: Options) -> T | None:
        """:meth:`get` under ``opts`` (what a session's read runs)."""
        return self._read_by_id(id, self._by_id_read(opts))

    def _read_by_id(self, id: str, read: ByIdRead) -> T | None:
        """:meth:`get` as ``read`` says: from the document cache when its TTL is set (a
        hit: one lookup, and a copy of the document kept for that entry or a hydration),
        else (or on a miss) one real-time GET under the options' limits; then the rules.
        (:meth:`get` serves a hit kept in process before it comes here.)"""
        check_id(id)
        info = self.info
        check_call_options(info, read.options)
        document: T | None
        if read.serve:  # a hit served (reserved for the fill when the read is cached)
            cached = read.ttl is not None
            document, token = read.documents.read(
                read.alias, id, info, self._hydrate, reserve=cached
            )
            if document is None:
                document = self._fetch(id, read, token)
        elif read.ttl is not None:  # read_cache=False: read, and replace the entry
            document = self._fetch(id, read, read.documents.reserve_over(read.alias, id))
        else:
            document = self._fetch(id, read, None)
        if document is None:
            return None
        for rule in read.rules:
            if not rule.test(document):
                return None
        return document

    def _fetch(self, id: str, read: ByIdRead, token: Any) -> T | None:
        """The document ``id`` from a real-time GET (``None``: not found), under the
        ``timeout``/``retries`` of ``read.options`` (a ``None`` keeps the enclosing
        call's: :func:`esmapper._limits.applied`); cached with the reservation ``token``
        when the read is cached."""
        opts = read.options
        if opts.timeout is None and opts.retries is None:
            found = get_document(self.services.client, self.spec, id)
        else:
            with applied(opts.timeout, opts.retries):
                found = get_document(self.services.client, self.spec, id)
        if found is None:
            return None
        raw = _hit(found)
        if read.ttl is None:
            return self._hydrate(raw)
        filled = read.documents.fill(read.alias, id, raw, token, read.ttl)
        document = self._hydrate(raw)
        if filled and self.info.cls in self.services.custom_keys:
            keyed = self._keyed([document])
            add_read(self.services, self.info, keyed, read.ttl, dirty_read=False, alias=read.alias)
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
        if (
            ttl is None
            and not read.serve
            and not self.spec.is_time_series
            and not unrouted(self.spec, wanted)
        ):
            as_bytes = self.services.raw_client
            if as_bytes is not None:  # the answer's bytes, straight into documents
                found = self._read_raw(as_bytes, wanted)
                return only_shown(read.rules, found) if read.rules else found
        hits: dict[str, dict[str, Any]] = {}
        tokens: dict[str, Any] = {}
        if read.serve:  # (reserved for the fills when the read is cached)
            for id in wanted:
                cached, tokens[id] = read.documents.lookup(read.alias, id, reserve=ttl is not None)
                if cached is not None:
                    hits[id] = cached
        elif ttl is not None:  # read_cache=False: read them all, replace the entries
            for id in wanted:
                tokens[id] = read.documents.reserve_over(read.alias, id)
        filled: list[str] = []
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
                    token = tokens.get(hit["_id"])
                    if read.documents.fill(read.alias, hit["_id"], hit, token, ttl):
                        filled.append(hit["_id"])
        found = [self._hydrate(hits[id]) for id in wanted if id in hits]
        if filled and self.info.cls in self.services.custom_keys:
            just = set(filled)
            fetched = [doc for doc in found if doc.id in just]  # type: ignore[attr-defined]
            keyed = self._keyed(fetched)
            add_read(self.services, self.info, keyed, ttl, dirty_read=False, alias=read.alias)
        return only_shown(read.rules, found) if read.rules else found

    def _read_raw(self, raw: Any, wanted: list[str]) -> list[T]:
        """The documents of ``wanted`` (in that order, missing ones omitted) from one
        ``_mget`` on the raw client copy, hydrated from the answer's bytes
        (:func:`esmapper.model._wire_decode.hydrate`)."""
        if not wanted:
            return []
        try:
            docs = get_documents_raw(raw, self.spec, wanted)
        except NotFoundError as exc:
            if not is_index_missing(exc):
                raise
            return []
        if docs and type(docs[0]) is dict:  # the envelope refused the answer
            found = {doc["_id"]: doc for doc in docs if doc.get("found")}
            return [self._hydrate(found[id]) for id in wanted if id in found]
        if [doc._id for doc in docs] == wanted:  # in the request's order, as answered
            ordered = [doc for doc in docs if doc.found]
        else:
            by_id = {doc._id: doc for doc in docs if doc.found}
            ordered = [by_id[id] for id in wanted if id in by_id]
        return hydrate(self.info, ordered, False, by_id=True)

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
            return self._request(filter, given(options), documents=False).exists()
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
