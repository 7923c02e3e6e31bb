"""The :class:`Services`: what a step of the core and a feature use, without the mapper.

The :class:`~esmapper.mapper.Mapper` builds one in ``__init__`` and hands it (not itself)
to the write pipeline, the reads, the search, the by-query writes and the features: the
client (bounded by the current call's ``timeout=``, :mod:`esmapper._limits`), the bulk
writer, the document and key-value caches, the bus, the registry of index specs, the
clock, the server version and a per-mapper home for a feature's state: the one
declaration of what they get (``esmapper._context.Context`` is a type-only alias of it).
Two members need the facade, so the mapper installs narrow callbacks: ``repository(model)``
(a repository holds the ``Mapper``) and the hooks of :meth:`Services.register` (before a
write creates a first index: the migrations' install decision; after a model is
registered: the models it brings along). It sits in the indexes layer: it makes the
:class:`~esmapper.indexes.spec.IndexSpec` of a model.

Not for the features (the mapper's and the by-id reads' own): ``register`` and the
callbacks, ``base_client`` (use :attr:`Services.client`, bounded by the call's
``timeout=``) and ``cache_lookup``/``cache_fill``.
"""

from __future__ import annotations

import datetime as _dt
import logging
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
from elasticsearch import Elasticsearch

from esmapper import signals
from esmapper._limits import current as current_limits
from esmapper._raw_answers import raw_client
from esmapper._server_version import ServerVersion
from esmapper.bus import BlinkerMessageBus, MessageBus
from esmapper.cache import CacheClient, DocumentCache
from esmapper.errors import IndexConfigurationError
from esmapper.indexes.spec import IndexSpec
from esmapper.model.info import DEFAULT_CACHE_LIFETIME, ModelInfo
from esmapper.options import Options

if TYPE_CHECKING:
    from esmapper.bulk import BulkWriter
    from esmapper.repository import Repository

__all__ = ["DEFAULT_CACHE_TTL", "Services"]

_S = TypeVar("_S")

log = logging.getLogger("esmapper.repository")

#: Cache lifetime of an operation that asks for caching on a model without a default
#: (also what ``class Index: cache = True`` means).
DEFAULT_CACHE_TTL = DEFAULT_CACHE_LIFETIME


def _nothing(*_: object) -> None:
    return None


@attrs.define(slots=True, eq=False, repr=False)
class Services:
    """The client, writer, caches, bus, index specs and clock of one mapper."""

    #: the base client (:attr:`client` is the view bounded by the call's timeout)
    base_client: Elasticsearch
    #: the bulk writer every document write goes through
    writer: BulkWriter
    #: the ``index_prefix`` of every index and alias name
    index_prefix: str
    #: the current time (aware UTC unless a test injected otherwise)
    clock: Callable[[], _dt.datetime]
    #: the key-value cache (``None``: off)
    cache: CacheClient | None
    #: the bus ``entity_changed`` messages are published on
    bus: MessageBus
    #: the default of the reads' ``partial_results=``
    partial_results: bool = False
    #: the migration classes and modules ``migrate`` runs
    migrations: list[type] = attrs.Factory(list)
    #: the document cache (``None``: caching is off); made from ``cache``
    documents: DocumentCache | None = attrs.field(init=False)
    #: the repository of a model: the facade's (installed by the mapper)
    repository_of: Callable[[type], Repository[Any]] | None = None
    #: called right before a write creates one of the models' indexes
    before_create: Callable[[], None] = _nothing
    #: called after a model is registered (the models it brings along)
    registered: Callable[[ModelInfo], None] = _nothing
    #: a model's own document cache, set by its repository (``set_cache_client``,
    #: ``disable_cache``): ``None`` for a model whose caching is off; a model not in it
    #: uses :attr:`documents`
    own_documents: dict[type, DocumentCache | None] = attrs.field(init=False, factory=dict)
    #: a model's custom cache keys: the repository whose class overrides the hooks of
    #: :mod:`esmapper._cache_hooks` (installed by the mapper)
    custom_keys: dict[type, Any] = attrs.field(init=False, factory=dict)
    #: the models of :attr:`custom_keys` whose repository overrides
    #: ``invalidate_cache_for`` (what a write loads the originals for)
    write_hooks: set[type] = attrs.field(init=False, factory=set)
    _specs: dict[type, IndexSpec] = attrs.field(init=False, factory=dict)
    _extensions: dict[str, Any] = attrs.field(init=False, factory=dict)
    _lock: threading.Lock = attrs.field(init=False, factory=threading.Lock)
    #: the models whose notification delay the bus could not honour (warned once)
    _undelayed: set[type] = attrs.field(init=False, factory=set)
    _version: ServerVersion = attrs.field(init=False, factory=ServerVersion)
    #: ``(base_client, its raw copy or None)`` (see :attr:`raw_client`)
    _raw: tuple[Elasticsearch, Elasticsearch | None] | None = attrs.field(init=False, default=None)

    def __attrs_post_init__(self) -> None:
        self.documents = DocumentCache(self.cache) if self.cache is not None else None

    @property
    def client(self) -> Elasticsearch:
        """The client; inside a call given ``timeout=``, a view of it with that
        ``request_timeout`` (see :mod:`esmapper._limits`)."""
        timeout = current_limits().timeout
        if timeout is None:
            return self.base_client
        return self.base_client.options(request_timeout=timeout)

    @property
    def raw_client(self) -> Elasticsearch | None:
        """The copy of the base client whose JSON answers are their bytes, for the hot
        reads (:func:`esmapper._raw_answers.raw_client`: made once per base client, the
        user's client untouched), bounded by the call's timeout as :attr:`client` is;
        ``None`` when the base client cannot have one (then read through :attr:`client`)."""
        made = self._raw
        if made is None or made[0] is not self.base_client:
            made = self._raw = (self.base_client, raw_client(self.base_client))
        raw = made[1]
        if raw is None:
            return None
        timeout = current_limits().timeout
        return raw if timeout is None else raw.options(request_timeout=timeout)

    def server_version(self) -> tuple[int, int] | None:
        """The server's ``(major, minor)``: ``GET /`` once (:mod:`esmapper._server_version`)."""
        return self._version.get(self.base_client)

    # -- the index specs ---------------------------------------------------------------

    def register(self, model: type) -> IndexSpec:
        """Register a Document class; a second model on the same alias raises
        :class:`IndexConfigurationError`, a class that is no Document ``TypeError``."""
        info: ModelInfo | None = getattr(model, "__esmapper__", None)
        if info is None or not info.is_document:
            raise TypeError(f"{model!r} is not an esmapper Document")
        with self._lock:
            if model in self._specs:
                return self._specs[model]
            # the base client: ``self.client`` may be a view with the timeout of the call
            # that happens to register the model, which must not stick to it
            spec = IndexSpec(
                info,
                self.index_prefix,
                client=self.base_client,
                clock=self.clock,
                before_create=self.before_create,
            )
            for other in self._specs.values():
                if other.alias.lower() == spec.alias.lower() and not _share(info, other.info):
                    raise IndexConfigurationError(
                        f"{model.__name__} and {other.info.name} both use index {spec.alias!r}",
                        index=spec.alias,
                    )
            self._specs[model] = spec
            bind = getattr(self.bus, "bind_model", None)
            if bind is not None:  # a distributed bus names models in its messages
                bind(model)
        self.registered(info)
        return spec

    @property
    def models(self) -> list[type]:
        """The registered models, in registration order."""
        return list(self._specs)

    def spec(self, model: type) -> IndexSpec:
        """The :class:`IndexSpec` of a registered model (registering it on first use)."""
        spec = self._specs.get(model)
        return spec if spec is not None else self.register(model)

    def repository(self, model: type[_S]) -> Repository[_S]:  # type: ignore[type-var]
        """The mapper's repository of ``model`` (the callback the mapper installed)."""
        if self.repository_of is None:
            raise TypeError("these services belong to no mapper: no repositories")
        return self.repository_of(model)

    def extension(self, key: str, factory: Callable[[], _S]) -> _S:
        """The state a feature keeps for this mapper under ``key``, made by ``factory``
        the first time (thread-safe)."""
        found = self._extensions.get(key)
        if found is None:
            with self._lock:
                found = self._extensions.get(key)
                if found is None:
                    found = self._extensions[key] = factory()
        return found  # type: ignore[no-any-return]

    # -- side channels (cache and notifications) ---------------------------------------

    def publish(self, model: type, message: signals.EntityChanged, options: Options) -> None:
        """Publish an ``entity_changed`` message through the bus, after the model's
        ``Index.notification_delay`` when it has one and the bus supports delays
        (``supports_delay``); a bus that does not gets it at once, with one warning per
        model (never dropped)."""
        info = getattr(model, "__esmapper__", None)
        index = None if info is None else info.index
        delay = None if index is None else index.notification_delay
        if delay is None:
            self.bus.publish(model, message, options=options)
        elif getattr(self.bus, "supports_delay", False):
            self.bus.publish(model, message, options=options, delay=delay.total_seconds())
        else:
            if model not in self._undelayed:
                self._undelayed.add(model)
                log.warning(
                    "%s: Index.notification_delay is %s, but the bus %r cannot delay "
                    "messages (no supports_delay): they are delivered at once",
                    model.__name__,
                    delay,
                    self.bus,
                )
            self.bus.publish(model, message, options=options)

    def has_subscribers(self, model: type) -> bool:
        """Whether publishing for ``model`` can reach anyone (the in-process bus without
        receivers cannot, so no messages are built)."""
        if not isinstance(self.bus, BlinkerMessageBus):
            return True
        return signals.has_receivers(signals.entity_changed, model) or signals.has_receivers(
            signals.before_publish_entity_changed, model
        )

    def documents_of(self, info: ModelInfo) -> DocumentCache | None:
        """The document cache of ``info``'s model: its own (its repository's
        ``set_cache_client``; ``None`` after ``disable_cache``), else the mapper's."""
        own = self.own_documents
        if own and info.cls in own:
            return own[info.cls]
        return self.documents

    def cache_of(self, info: ModelInfo) -> CacheClient | None:
        """The cache client of ``info``'s model (see :meth:`documents_of`)."""
        documents = self.documents_of(info)
        return None if documents is None else documents.client

    def written_caches(self, info: ModelInfo) -> tuple[DocumentCache, ...]:
        """The document caches a write of ``info``'s model invalidates: its own (its
        repository's ``set_cache_client``) and the mapper's. A model given a client of its
        own, or none (``disable_cache``), still drops what the mapper's client holds of
        it: other mappers or processes sharing that client may cache it there."""
        shared = self.documents
        own = self.own_documents
        mine = own.get(info.cls) if own else None
        if mine is None:
            return () if shared is None else (shared,)
        if shared is None or shared.client is mine.client:
            return (mine,)
        return (mine, shared)

    def use_cache(self, model: type, client: CacheClient | None) -> None:
        """Give ``model`` its own cache client (``None``: no caching at all for it)."""
        self.own_documents[model] = None if client is None else DocumentCache(client)

    def cache_ttl(self, info: ModelInfo, options: Options) -> _dt.timedelta | _dt.datetime | None:
        """How long a by-id read of ``info`` (or a search's response under ``cache_key``)
        is cached under ``options`` (``None``: not): the call's ``expires_in`` (a
        ``timedelta``) or ``expires_at`` (the ``datetime`` it expires at, turned into
        seconds when stored: :func:`esmapper.cache.seconds_left`), else the model's
        lifetime."""
        if options.cache is False or self.documents_of(info) is None:
            return None
        if options.expires_in is not None:
            return _dt.timedelta(seconds=options.expires_in)
        if options.expires_at is not None:
            return options.expires_at
        default = info.index.cache if info.index is not None else None
        if options.cache is None and options.cache_key is None:
            return default
        return default or DEFAULT_CACHE_TTL

    def is_cached(self, info: ModelInfo) -> bool:
        """Whether ``info``'s model is cached by default (``class Index: cache = ...``)."""
        return (
            self.documents_of(info) is not None
            and info.index is not None
            and bool(info.index.cache)
        )

    def cache_lookup(self, info: ModelInfo, id: str) -> tuple[dict[str, Any] | None, Any]:
        """``(cached raw hit or None, token for cache_fill)``."""
        documents = self.documents_of(info)
        assert documents is not None
        return documents.lookup(self.spec(info.cls).alias, id)

    def cache_fill(
        self,
        info: ModelInfo,
        id: str,
        hit: dict[str, Any],
        token: Any,
        ttl: _dt.timedelta | _dt.datetime,
    ) -> bool:
        """Cache a fetched hit unless the document was written since the lookup."""
        documents = self.documents_of(info)
        assert documents is not None
        return documents.fill(self.spec(info.cls).alias, id, hit, token, ttl)

    def invalidate_ids(self, info: ModelInfo, ids: Iterable[str | None]) -> None:
        """Remove the cached entries of ``ids``, whatever the model's cache setting: the
        cache client may be shared with mappers (or processes) that did cache them."""
        own = self.own_documents
        if own and info.cls in own:  # (its own client, or none: see written_caches)
            alias, listed = self.spec(info.cls).alias, [i for i in ids if i is not None]
            for documents in self.written_caches(info):
                documents.invalidate(alias, listed)
            return
        shared = self.documents
        if shared is None:
            return
        shared.invalidate(self.spec(info.cls).alias, (i for i in ids if i is not None))

    def invalidate_model(self, info: ModelInfo) -> None:
        """Remove every cached document of ``info``'s model (a by-query write that cannot
        list the ids it changed), from every cache a write invalidates
        (:meth:`written_caches`)."""
        alias = self.spec(info.cls).alias
        for documents in self.written_caches(info):
            documents.invalidate_all(alias)


def _share(a: ModelInfo, b: ModelInfo) -> bool:
    """Whether the models of ``a`` and ``b`` may use one index (the ``shares_index`` point:
    a parent/child join)."""
    return any(hook(b) for hook in a.points.shares_index) or any(
        hook(a) for hook in b.points.shares_index
    )
