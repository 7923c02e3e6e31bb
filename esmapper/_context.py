"""What a step of the core and a feature may use: the :class:`Context`.

The write pipeline, the search, the by-query writes and the features take a ``Context``,
not the :class:`~esmapper.mapper.Mapper`: the client, the bulk writer, the document
cache, the bus, the index specs, the clock and a per-mapper home for a feature's state.
The mapper hands them its :class:`~esmapper._services.Services`, the one implementation
(the ``Mapper`` is the user's facade, not a ``Context``). It is a :class:`typing.Protocol`
the features are typed against: it names what a feature may use of the services (not
their registry's hooks nor the cache's internals), and depending on it creates no import
of the mapper (the layers of docs/architecture.md flow one way). An operation the user
calls with the mapper (``reindex(mapper, Model)``, a job, ``rekey``) takes a
:class:`HasContext` too and runs with :func:`context_of` it: the mapper's services.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

    from esmapper.bulk import BulkWriter
    from esmapper.cache import CacheClient, DocumentCache
    from esmapper.indexes.spec import IndexSpec
    from esmapper.model.document import Document
    from esmapper.model.info import ModelInfo
    from esmapper.options import Options
    from esmapper.repository import Repository
    from esmapper.signals import EntityChanged

__all__ = ["Context", "HasContext", "context_of"]

T = TypeVar("T")
D = TypeVar("D", bound="Document")


class Context(Protocol):
    """The services the core and the features use (the mapper's ``Services``)."""

    #: the ``index_prefix`` of every index and alias name
    index_prefix: str
    #: the bulk writer every document write goes through
    writer: BulkWriter
    #: the document cache (``None``: caching is off)
    documents: DocumentCache | None
    #: the key-value cache (search pages stored under a ``cache_key``; ``None``: off)
    cache: CacheClient | None
    #: the default of the reads' ``partial_results=``
    partial_results: bool
    #: the migration classes and modules ``migrate`` runs (``Mapper(migrations=...)``)
    migrations: list[type]

    @property
    def client(self) -> Elasticsearch:
        """The client, bounded by the current call's ``timeout=``."""
        ...

    def clock(self) -> _dt.datetime:
        """The current time (aware UTC unless a test injected otherwise)."""
        ...

    def spec(self, model: type) -> IndexSpec:
        """The index spec of a registered model (registers it on first use)."""
        ...

    @property
    def models(self) -> list[type]:
        """The registered models, in registration order."""
        ...

    def repository(self, model: type[D]) -> Repository[D]:
        """The repository of a registered model (registers it on first use): what a
        feature reads or writes its own documents through (the repository holds the
        ``Mapper``, the user's facade, that made it)."""
        ...

    def server_version(self) -> tuple[int, int] | None:
        """The server's ``(major, minor)``, asked once."""
        ...

    def extension(self, key: str, factory: Callable[[], T]) -> T:
        """The per-context state a feature keeps under ``key`` (made by ``factory`` the
        first time, thread-safely)."""
        ...

    def publish(self, model: type, message: EntityChanged, options: Options) -> None:
        """Publish an ``entity_changed`` message."""
        ...

    def has_subscribers(self, model: type) -> bool:
        """Whether publishing for ``model`` can reach anyone."""
        ...

    def is_cached(self, info: ModelInfo) -> bool:
        """Whether ``info``'s model is cached by default."""
        ...

    def cache_ttl(self, info: ModelInfo, options: Options) -> _dt.timedelta | None:
        """How long a read under ``options`` is cached (``None``: not)."""
        ...

    def invalidate_ids(self, info: ModelInfo, ids: Iterable[str | None]) -> None:
        """Drop the cached entries of ``ids``."""
        ...

    def invalidate_model(self, info: ModelInfo) -> None:
        """Drop every cached document of ``info``'s model."""
        ...


class HasContext(Protocol):
    """What a user hands an operation (``reindex(mapper, Model)``, ``migrate``, a job,
    ``rekey``, ``health``): the :class:`~esmapper.mapper.Mapper`, whose ``services`` the
    operation runs with."""

    @property
    def services(self) -> Context: ...


def context_of(given: Context | HasContext) -> Context:
    """The context an operation runs with: a mapper's ``services``, or ``given`` itself.

    Looked up as an attribute, not with ``isinstance``: a proxy of the mapper (Flask's
    ``current_mapper``) has no ``services`` of its own that a static check would find."""
    services: Context | None = getattr(given, "services", None)
    return given if services is None else services  # type: ignore[return-value]
