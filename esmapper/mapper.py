"""The mapper: one per application; owns the client, the index specs and the bulk writer."""

from __future__ import annotations

import datetime as _dt
import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from elasticsearch import Elasticsearch, NotFoundError
from typing_extensions import Unpack

from esmapper import _gcpause, signals
from esmapper._keywords import OptionKeywords
from esmapper._services import Services
from esmapper._shards import count_all
from esmapper._transport import NamedTransport, quiet_transport_retries
from esmapper._writes import publish_changes
from esmapper.bulk import BulkWriter
from esmapper.bus import BlinkerMessageBus, MessageBus
from esmapper.cache import CacheClient, DocumentCache, InMemoryCache
from esmapper.custom_fields._access import definitions
from esmapper.custom_fields.definition import CustomFieldDefinition
from esmapper.custom_fields.repository import CustomFieldRepository
from esmapper.distributed import connect, redis_url_from_env
from esmapper.health import HealthReport, check_health
from esmapper.indexes._configured import LOCK_WAIT as CONFIGURE_LOCK_WAIT
from esmapper.indexes._configured import (
    ConfigureMarker,
    configuration_key,
    configure_once,
    skipped_states,
)
from esmapper.indexes._data_streams import refuse_names
from esmapper.indexes.configure import IndexState, configure_indexes
from esmapper.indexes.deletion import IndexDeletion, delete_indexes
from esmapper.indexes.spec import IndexSpec
from esmapper.jobs._reindex_items import enqueue_outdated
from esmapper.jobs._work_queue import WorkQueue
from esmapper.locks import DEFAULT_TTL, LOCK_INDEX, LockProvider, check_duration
from esmapper.migrations import MigrationResult, migrate
from esmapper.migrations.planning import decide_before_first_index
from esmapper.migrations.state import STATE_INDEX
from esmapper.model.info import ModelInfo
from esmapper.options import Options, keywords_checked
from esmapper.repository import Repository
from esmapper.session import Session, sessionmaker

if TYPE_CHECKING:
    from esmapper.model import Document

__all__ = ["Mapper"]

log = logging.getLogger("esmapper.indexes")

#: A model: a subclass of :class:`~esmapper.model.Document`.
T = TypeVar("T", bound="Document")
_S = TypeVar("_S")
_V = TypeVar("_V")


class _Delegated(Generic[_V]):
    """A mapper attribute that reads and sets the services' attribute of that name
    (:class:`esmapper._services.Services`; a test may replace the writer or the clock)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, mapper: Mapper, owner: type | None = None) -> _V:
        return getattr(mapper.services, self.name)  # type: ignore[no-any-return]

    def __set__(self, mapper: Mapper, value: _V) -> None:
        setattr(mapper.services, self.name, value)


#: the cache hooks of a repository (:mod:`esmapper._cache_hooks`)
_CACHE_HOOKS = ("invalidate_cache_for", "invalidate_cache_by_query", "add_to_cache")


def _has_cache_hooks(cls: type[Repository[Any]]) -> bool:
    """Whether ``cls`` overrides one of the cache hooks of :class:`Repository`."""
    return any(getattr(cls, name) is not getattr(Repository, name) for name in _CACHE_HOOKS)


def _utcnow() -> _dt.datetime:
    return _dt.datetime.now(_dt.timezone.utc)


def _shared_side_channels(
    url: str | None, index_prefix: str, options: dict[str, Any] | None
) -> tuple[CacheClient, MessageBus, Any] | None:
    """``(cache, bus, link)`` sharing Redis at ``url`` (``None``: ``$ESMAPPER_REDIS_URL``)."""
    url = redis_url_from_env() if url is None else url.strip()
    if not url:
        return None
    namespace = f"esmapper:{index_prefix}" if index_prefix else "esmapper"
    return connect(url, namespace=namespace, **(options or {}))


def _client_from(
    url_or_client: str | Sequence[str] | Elasticsearch, client_options: dict[str, Any]
) -> tuple[Elasticsearch, bool]:
    if isinstance(url_or_client, Elasticsearch):
        return url_or_client, False
    if isinstance(url_or_client, str):
        hosts = [h.strip() for h in url_or_client.split(",") if h.strip()]
    else:
        hosts = list(url_or_client)
    if not hosts:
        raise ValueError("Mapper needs an Elasticsearch URL or client")
    client_options.setdefault("request_timeout", 30)
    if "serializer" not in client_options and "serializers" not in client_options:
        try:  # orjson is optional (the "fast" extra): imported only when it is there
            from elasticsearch.serializer import OrjsonSerializer

            client_options["serializer"] = OrjsonSerializer()
        except ImportError:  # orjson not installed: the client's stdlib json
            pass
    client_options.setdefault("transport_class", NamedTransport)
    return Elasticsearch(hosts, **client_options), True


class Mapper:
    """The entry point: ``Mapper(url_or_client, models=[...], index_prefix="")``.

    ``url_or_client`` is a URL (several comma-separated for a static node pool) or an
    ``elasticsearch.Elasticsearch``; ``index_prefix`` is prepended to every index and alias
    name. ``bulk_chunk_size``, ``bulk_max_bytes`` and ``max_retries`` configure the bulk
    writer; items rejected with 429/503 are retried after ``min(max_backoff,
    initial_backoff * 2**attempt)`` seconds (0.5, 1, 2 ... by default; a call's
    ``retries=`` option overrides ``max_retries``). ``write_block_wait`` (seconds, default
    30) is a separate budget, not bounded by ``max_retries`` nor by a call's ``retries=``:
    items refused by an index write block (a reindex blocks the old index from its final
    catch-up until the alias swap; they were not applied) are resent with the same backoff
    until that much waiting is spent in one write call; ``0`` fails them at once (403
    ``cluster_block_exception``). ``bulk_concurrency`` (default 1: one after the other)
    is how many ``_bulk`` requests of one write may be in flight at once, from that many
    threads: an opt-in for large writes (``add``/``save``/``remove`` of many documents, a
    session flush, patches) against a cluster with spare capacity, with the same
    per-item outcomes, retries, signals and cache invalidation as one at a time (writes
    that name one document twice are still sent in order; see :mod:`esmapper.bulk`).
    Keep it at most the client's ``connections_per_node`` (10 by default).
    ``clock`` returns the aware UTC "now"
    used for dates (inject it in tests). Write batches, search pages and ``get_many`` defer
    Python's cyclic collector's full passes while they run (process wide, safe for
    servers; see :mod:`esmapper._gcpause`); ``pause_gc=True`` switches the collector off
    for them instead (young passes too): for batch jobs and bulk loads, not servers.
    Thread-safe; ``close()`` releases a client the mapper created.

    ``partial_results`` (default ``False``) is the default of the reads' own
    ``partial_results=``: whether a ``find``, ``count``, ``exists`` or ``aggregate`` that
    some shards did not answer (a failed shard, a timeout) returns what the others answered,
    marked ``partial``, instead of raising :class:`~esmapper.errors.PartialResultsError`.
    Listings that decide writes never take a partial answer.

    ``redis="redis://..."`` (default: ``$ESMAPPER_REDIS_URL``; ``""`` ignores it) shares the
    cache and the notifications with the application's other processes: ``cache`` becomes
    an :class:`~esmapper.distributed.HybridCache` and ``bus`` a
    :class:`~esmapper.distributed.RedisMessageBus` (those given explicitly win), on one
    :class:`~esmapper.distributed.RedisLink` in the namespace ``esmapper:<index_prefix>``
    made with ``redis_options`` (``socket_timeout``, ``lease``, ...); ``close()`` stops it.

    ``work_queue`` (an :class:`~esmapper.jobs.InMemoryWorkQueue`, a
    :class:`~esmapper.jobs.RedisWorkQueue` or any
    :class:`~esmapper.jobs.WorkQueue`; default none) is where
    ``configure_indexes(begin_reindexing_outdated=True)`` enqueues the reindexes of
    outdated models, for workers to run (:mod:`esmapper.jobs._reindex_items`).

    A prefix, or a versioned or plain model, whose index names one of Elasticsearch's
    built-in data-stream templates claims (``index_prefix="logs-eu-"``, ``Index.name =
    "logs-app"``) raises :class:`~esmapper.errors.IndexConfigurationError`: no such index
    could be created (see :mod:`esmapper.indexes._data_streams`).
    """

    def __init__(
        self,
        url_or_client: str | Sequence[str] | Elasticsearch,
        *,
        models: Iterable[type] = (),
        index_prefix: str = "",
        migrations: Iterable[type] = (),
        bulk_chunk_size: int = 500,
        bulk_max_bytes: int = 10 * 1024 * 1024,
        max_retries: int = 3,
        initial_backoff: float = 0.5,
        max_backoff: float = 30.0,
        pause_gc: bool = False,
        write_block_wait: float = 30.0,
        bulk_concurrency: int = 1,
        clock: Callable[[], _dt.datetime] = _utcnow,
        sleep: Callable[[float], object] | None = None,
        cache: CacheClient | bool | None = None,
        bus: MessageBus | None = None,
        redis: str | None = None,
        redis_options: dict[str, Any] | None = None,
        partial_results: bool = False,
        work_queue: WorkQueue | None = None,
        **client_options: Any,
    ) -> None:
        if index_prefix and index_prefix != index_prefix.lower():
            raise ValueError(f"index_prefix {index_prefix!r} must be lowercase")
        # esmapper's own indexes under the prefix: not where a data-stream template claims
        refuse_names(
            f"index_prefix {index_prefix!r}",
            [f"{index_prefix}{LOCK_INDEX}", f"{index_prefix}{STATE_INDEX}"],
        )
        if work_queue is not None and not isinstance(work_queue, WorkQueue):
            raise TypeError(f"work_queue must be a WorkQueue, not {work_queue!r}")
        #: where ``configure_indexes(begin_reindexing_outdated=True)`` enqueues reindexes
        #: and ``esmapper jobs reindex-worker`` takes them (:mod:`esmapper.jobs._reindex_items`)
        self.work_queue = work_queue
        if pause_gc:
            _gcpause.enable(True)
        self._client, self._owns_client = _client_from(url_or_client, client_options)
        quiet_transport_retries()  # one line per retry of the client, not a traceback
        if not isinstance(partial_results, bool):
            raise ValueError(f"partial_results={partial_results!r} must be True or False")
        writer_options: dict[str, Any] = {}
        if sleep is not None:
            writer_options["sleep"] = sleep
        writer = BulkWriter(
            self._client,
            chunk_size=bulk_chunk_size,
            max_bytes=bulk_max_bytes,
            max_retries=max_retries,
            initial_backoff=initial_backoff,
            max_backoff=max_backoff,
            write_block_wait=write_block_wait,
            concurrency=bulk_concurrency,
            **writer_options,
        )
        self._redis = _shared_side_channels(redis, index_prefix, redis_options)
        if self._redis is not None:
            cache = self._redis[0] if cache is None or cache is True else cache
            bus = self._redis[1] if bus is None else bus
        if cache is False:
            cache = None
        elif cache is None or cache is True:
            cache = InMemoryCache()
        #: what the core and the features are given (:mod:`esmapper._services`), not the
        #: mapper: the client, writer, caches, bus, index specs, clock
        self.services = Services(
            self._client,
            writer,
            index_prefix,
            clock,
            cache,
            bus if bus is not None else BlinkerMessageBus(),
            partial_results,
            list(migrations),
            repository_of=self.repository,
            before_create=self._before_first_index,
            registered=self._registered,
        )
        self._repositories: dict[type, Repository[Any]] = {}
        #: the Repository subclass of a model (register(repository=...))
        self._classes: dict[type, type[Repository[Any]]] = {}
        self._lock = threading.Lock()
        self._install_known = False
        self._install_lock = threading.Lock()
        for model in models:
            self.register(model)

    # the services the mapper's facade shows (a test may replace the writer or the clock)
    index_prefix = _Delegated[str]()
    writer = _Delegated[BulkWriter]()
    clock = _Delegated[Callable[[], _dt.datetime]]()
    cache = _Delegated[CacheClient | None]()
    documents = _Delegated[DocumentCache | None]()
    bus = _Delegated[MessageBus]()
    #: the default of the reads' ``partial_results=`` (see the class docstring)
    partial_results = _Delegated[bool]()
    migrations = _Delegated[list[type]]()

    @property
    def client(self) -> Elasticsearch:
        """The Elasticsearch client; inside a repository or session call given
        ``timeout=``, a view of it with that ``request_timeout`` (see
        :mod:`esmapper._limits`)."""
        return self.services.client

    def server_version(self) -> tuple[int, int] | None:
        """The server's ``(major, minor)`` version: ``GET /`` the first time it is asked
        (a request shape that differs between versions, such as a ``highlight`` of several
        fields), then kept for this mapper; ``None`` when the server does not say (an
        error, a role without the ``monitor`` privilege), which is kept too
        (:mod:`esmapper._server_version`)."""
        return self.services.server_version()

    # -- models and indexes -----------------------------------------------------------

    def register(
        self, model: type, *, repository: type[Repository[Any]] | None = None
    ) -> IndexSpec:
        """Register a Document class; a second model on the same alias raises
        :class:`IndexConfigurationError`. ``repository``: the
        :class:`~esmapper.repository.Repository` subclass :meth:`repository` gives for
        ``model`` (its cache hooks and settings apply to every write of the model, sessions
        included), made now as ``repository(mapper, model)``; a class that is no
        ``Repository`` subclass raises ``TypeError``, another class than the one already
        made for ``model`` ``ValueError``."""
        spec = self.services.register(model)
        if repository is None:
            return spec
        if not (isinstance(repository, type) and issubclass(repository, Repository)):
            raise TypeError(
                f"register(repository={repository!r}) takes a subclass of em.Repository"
            )
        with self._lock:
            made = self._repositories.get(model)
            if made is not None and type(made) is not repository:
                raise ValueError(
                    f"{model.__name__} already has its repository, a "
                    f"{type(made).__name__}: register(repository=...) before the first "
                    "mapper.repository() call"
                )
            self._classes[model] = repository
        self.repository(model)
        return spec

    def _registered(self, info: ModelInfo) -> None:
        if info.custom_fields:  # its definitions live in their own index
            self.services.register(CustomFieldDefinition)

    def _before_first_index(self) -> None:
        """Called right before a write creates one of the models' indexes: until this
        mapper knows an install record, decide the fresh install first (see
        :mod:`esmapper.migrations.install`; nothing for a mapper without migrations)."""
        if self._install_known or not self.migrations:
            return
        with self._install_lock:
            if not self._install_known:
                decide_before_first_index(self.services)
                self._install_known = True

    @property
    def models(self) -> list[type]:
        return self.services.models

    def spec(self, model: type) -> IndexSpec:
        """The :class:`IndexSpec` of a registered model (registering it on first use)."""
        return self.services.spec(model)

    def configure_indexes(
        self,
        models: Iterable[type] | None = None,
        *,
        force: bool = False,
        lock_wait: _dt.timedelta = CONFIGURE_LOCK_WAIT,
        lock_ttl: _dt.timedelta = DEFAULT_TTL,
        begin_reindexing_outdated: bool = False,
    ) -> list[IndexState]:
        """Create missing indexes and aliases, add new fields to existing mappings; returns
        what was found or done per model. Idempotent; call it at every start. A model with
        custom fields brings the definitions' index along.

        For every registered model (``models=None``) it runs once for a fleet of processes
        starting together (:mod:`esmapper.indexes._configured`): when this configuration
        (a hash of the models' indexes, versions, mappings, settings and pipelines) was
        configured less than 5 minutes ago it returns at once (one marker read), each
        model's state ``action="skipped"`` (``current_index=None``: nothing was read, so an
        ``outdated`` alias is not reported: ``force=True`` or ``esmapper migrate`` read
        it); otherwise it configures under the ``configure-indexes`` lock (waiting up to
        ``lock_wait`` for another process configuring now, then finding its marker and
        returning the ``skipped`` states) and marks the configuration done. The marker
        and the lock live in ``<prefix>esmapper-locks`` unless the mapper's cache is
        shared (Redis); a user or cluster that refuses that index configures unlocked and
        unmarked, as when every model is named. ``force=True`` configures even when
        marked. An explicit ``models`` list configures those models, no lock, no marker.
        ``lock_ttl`` (default 90 s) is the lease of the ``configure-indexes`` lock,
        renewed by a heartbeat every third of it while this process configures: a process
        killed while configuring holds the others up that long at most.

        ``begin_reindexing_outdated=True``: a model found ``outdated`` (its alias on an
        older version) is not reindexed here; a
        :class:`~esmapper.jobs.ReindexWorkItem` is enqueued on the mapper's
        ``work_queue`` for a worker (``esmapper jobs reindex-worker``,
        :mod:`esmapper.jobs._reindex_items`), inside the lock (once for the fleet) and never
        while an item for the same alias and version is pending or running. With no
        ``work_queue`` an outdated model raises
        :class:`~esmapper.errors.IndexConfigurationError`, and a queue that fails (Redis
        unreachable) raises its own error; either way the configuration is not marked
        done, so the next start configures and enqueues again. The marker of such a call
        is its own: a configuration marked by a call without it is configured again
        (idempotent) so that the items are enqueued.

        Raises :class:`~esmapper.errors.LockError` when the lock stays held past
        ``lock_wait``, :class:`~esmapper.errors.IndexConfigurationError` for a mapping
        Elasticsearch cannot change in place, ``TypeError``/``ValueError`` for a bad
        option before anything is sent."""
        for name, flag in (
            ("force", force),
            ("begin_reindexing_outdated", begin_reindexing_outdated),
        ):
            if not isinstance(flag, bool):
                raise TypeError(f"{name} must be True or False, not {flag!r}")
        check_duration("lock_wait", lock_wait, zero=True)
        check_duration("lock_ttl", lock_ttl)
        queue = self.work_queue

        def configure(specs: list[IndexSpec]) -> list[IndexState]:
            states = configure_indexes(self.client, specs)
            if begin_reindexing_outdated:
                enqueue_outdated(self.services, queue, states)
            return states

        if models is not None:
            return configure(self._with_definitions(list(models)))
        specs = self._with_definitions(self.models)
        key = configuration_key(specs)
        services = self.services
        locks = LockProvider(self.client, index_prefix=self.index_prefix, clock=self.clock)
        return configure_once(
            locks,
            ConfigureMarker.of(services),
            f"{key}+queued" if begin_reindexing_outdated else key,
            lambda: configure(specs),
            skipped=skipped_states(specs),
            force=force,
            lock_wait=lock_wait,
            lock_ttl=lock_ttl,
        )

    def _with_definitions(self, chosen: list[type]) -> list[IndexSpec]:
        """The specs of ``chosen``, the custom-field definitions' appended when one of
        them has custom fields."""
        chosen = list(chosen)
        for model in list(chosen):
            if self.spec(model).info.custom_fields and CustomFieldDefinition not in chosen:
                chosen.append(CustomFieldDefinition)
        return [self.spec(m) for m in chosen]

    def delete_indexes(
        self, models: Iterable[type] | None = None, *, dry_run: bool = False
    ) -> list[IndexDeletion]:
        """Delete every physical index (all versions, time-series partitions, reindex
        leftovers), alias and index template of ``models`` (default: every registered model),
        by exact name; returns what was deleted per model (:class:`IndexDeletion`; with
        ``dry_run``, what would be, nothing is sent but reads). A model with nothing left is
        fine (an empty report).

        Sends the requests of :mod:`esmapper.indexes.deletion` (wildcard reads, then
        ``POST /_aliases``, ``DELETE /<index>,...`` and ``DELETE /_index_template/<name>``,
        each once; a lost answer is read back). Then drops the model's state cached by this
        mapper and its cache client (partitions ensured, documents, soft-deleted ids) and
        publishes ``entity_changed`` (``REMOVED``, ``id=None``) when something was deleted,
        and clears the ``configure_indexes`` marker (:mod:`esmapper.indexes._configured`).
        Raises the client's errors (an ``ApiError`` when Elasticsearch refuses a delete).

        The custom-field definitions index (``em.CustomFieldDefinition``, the tenants'
        fields of every custom-field model) goes along, as one more report at the end, when
        every custom-field model of this mapper is among ``models`` and it holds no
        definition of another entity type (another application sharing the index prefix;
        one ``_count``); otherwise it is kept, definitions of the deleted models included,
        so recreating their indexes finds the tenants' fields again. Naming
        ``CustomFieldDefinition`` (or deleting every model: ``models=None``) deletes it
        regardless. The cached field mappings are dropped when it goes."""
        chosen = list(models) if models is not None else self.models
        chosen.extend(self._definitions_going_along(chosen))
        specs = [self.spec(m) for m in chosen]
        everyone = [self.spec(m) for m in self.models]
        reports = delete_indexes(self.client, specs, everyone, dry_run=dry_run)
        if not dry_run:
            # a model whose index went with another's report (a parent and its children
            # share one) is told too
            gone = {
                spec.alias for spec, report in zip(specs, reports, strict=True) if not report.empty
            }
            for spec in specs:
                self._forget(spec, deleted=spec.alias in gone)
            ConfigureMarker.of(self.services).clear()  # the next configure_indexes() runs
        return reports

    def _definitions_going_along(self, chosen: list[type]) -> list[type]:
        """``[CustomFieldDefinition]`` when deleting ``chosen`` takes the definitions index
        along (see :meth:`delete_indexes`), else ``[]``."""
        if CustomFieldDefinition in chosen:
            return []
        users = [m for m in self.models if self.spec(m).info.custom_fields]
        if not users or not all(m in chosen for m in users):
            return []
        types = [self.spec(m).info.name for m in users]
        alias = self.spec(CustomFieldDefinition).alias
        try:  # every shard must answer: a count too low would delete others' definitions
            others = count_all(
                self.client,
                what=f"the count of other entity types' definitions in {alias}",
                index=alias,
                query={"bool": {"must_not": [{"terms": {"entity_type": types}}]}},
            )
        except NotFoundError:
            return [CustomFieldDefinition]  # nothing left of it: reported empty
        if others > 0:
            log.info(
                "kept %s: it holds custom-field definitions of entity types other than %s",
                alias,
                ", ".join(types),
            )
            return []
        return [CustomFieldDefinition]

    def _forget(self, spec: IndexSpec, *, deleted: bool) -> None:
        spec.forget_ensured()
        for documents in self.services.written_caches(spec.info):
            documents.drop_model(spec.alias)
        if spec.info.cls is CustomFieldDefinition:  # the field mappings cached from it
            for model in self.models:
                if self.spec(model).info.custom_fields:
                    self.custom_fields(model).invalidate()
        if deleted:
            publish_changes(
                self.services, spec.info, [(None, signals.ChangeType.REMOVED)], Options()
            )

    def health(self) -> HealthReport:
        """Whether the cluster and every model's indexes are as the code expects: cluster
        status, each alias and the index behind it, pending reindexes, write blocks left
        behind, mapping drift, field counts against the total-fields limit, ingest
        pipelines, pending migrations. Read-only; see :mod:`esmapper.health` for what is
        sent and what counts as needing attention (``report.ok``)."""
        return check_health(self.services)

    def repository(self, model: type[T]) -> Repository[T]:
        """The (cached, thread-safe) repository of ``model``."""
        repo = self._repositories.get(model)
        if repo is None:
            self.spec(model)
            made = self._classes.get(model, Repository)(self, model)  # (not under the lock:
            with self._lock:  # its __init__ is the user's; two made at once: one is kept)
                repo = self._repositories.setdefault(model, made)
                if repo is made and _has_cache_hooks(type(repo)):
                    self.services.custom_keys[model] = repo
                    if type(repo).invalidate_cache_for is not Repository.invalidate_cache_for:
                        self.services.write_hooks.add(model)
        return repo

    def custom_fields(self, model: type) -> CustomFieldRepository:
        """The (cached, thread-safe) repository of ``model``'s custom-field definitions;
        ``TypeError`` for a model without ``em.HasCustomFields``."""
        return definitions(self.services, model)  # the custom-field feature's state (ctx.extension)

    @keywords_checked
    def session(self, **options: Unpack[OptionKeywords]) -> Session:
        """A new :class:`~esmapper.session.Session` (a context manager) with these options
        for its flushes and reads (``None``: the default)."""
        return Session(self, **options)

    @keywords_checked
    def sessionmaker(self, **options: Unpack[OptionKeywords]) -> sessionmaker:
        """A factory of sessions with these options preset (e.g. one per web request)."""
        return sessionmaker(self, **options)

    def migrate(self, **kwargs: Any) -> MigrationResult:
        """Configure indexes, reindex outdated versions and run pending migrations
        (see :mod:`esmapper.migrations`); returns a ``MigrationResult``."""
        return migrate(self, **kwargs)

    # -- lifecycle ---------------------------------------------------------------------

    def close(self) -> None:
        """Deliver the delayed notifications the bus still holds (``Index.notification_delay``:
        at once, rather than after the mapper is closed), then close the client if the
        mapper created it, and the Redis link it made."""
        flush = getattr(self.services.bus, "flush", None)
        if flush is not None:
            flush()
        if self._owns_client:
            self._client.close()
        if self._redis is not None:
            self._redis[2].close()

    def __enter__(self) -> Mapper:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Mapper(models={[m.__name__ for m in self.models]}, prefix={self.index_prefix!r})"
