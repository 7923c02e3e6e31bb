"""``configure_indexes`` for a fleet: every process of an application calls it at its start
(``gunicorn -w 8``: eight at once), one configures, the others skip.

``Mapper.configure_indexes()`` (every registered model, no explicit list) runs
:func:`configure_once`:

1. the **marker** says this configuration was done less than :data:`MARKER_TTL` (5 minutes)
   ago: return at once, no lock taken, nothing else sent; each model's state is then
   :data:`SKIPPED` (``action="skipped"``, ``current_index=None``: nothing was read);
2. take the ``configure-indexes`` **lock** (:mod:`esmapper.locks`: a lease renewed by a
   heartbeat; waiting up to ``lock_wait``, 2 minutes by default, for a process configuring
   now; :class:`~esmapper.errors.LockError` past it);
3. read the marker again (the process that held the lock has set it: return the
   :data:`SKIPPED` states);
4. configure (:func:`esmapper.indexes.configure.configure_indexes`);
5. set the marker, release the lock.

The marker names the configuration by a stable hash (:func:`configuration_key`) of every
model's alias, kind, version, mapping, settings and pipeline and of esmapper's own version
(what configuring does may change with it), so a new release (a model added, a field
added, a version bumped, esmapper upgraded) is configured at once whatever an older
release marked. ``force=True`` skips steps 1 and 3 (the lock is still taken, the marker set);
an explicit list of models skips the lock and the marker (it configures those models only).
:meth:`~esmapper.Mapper.delete_indexes` and :func:`~esmapper.indexes.reindex.reindex`
clear the marker (:func:`clear_marker`); ``maintain`` does not.

Where the marker lives (one entry per index prefix, holding the key it marks):

- in the mapper's cache when it is shared (a Redis cache, or any cache client that is
  not the in-process :class:`~esmapper.cache.InMemoryCache`): key
  ``<prefix>esmapper:configure-indexes``, expiring after 5 minutes;
- else in Elasticsearch: the document ``configure-indexes.done`` of
  ``<prefix>esmapper-locks`` (beside the lock), ``{"key", "configured_at", "expires_at",
  "by"}``: ``GET`` reads it (realtime), ``PUT`` overwrites it (idempotent: the
  transport's retries apply), ``DELETE`` clears it (a missing one is cleared).

Unknown outcomes: a marker read in Elasticsearch that fails (a dropped connection, a
timeout) raises, it is never taken for "configured"; a shared cache that fails to answer
is taken for "not marked" (configuring is idempotent, Elasticsearch decides). The
configuration itself sends its creates once and reads a lost answer back
(:mod:`esmapper.indexes.configure`); a marker write whose answer was lost is resent by the
transport (an overwrite), and one that still fails is logged, not raised: the
configuration is done, only the next process configures again. A holder stopped past its
lease (a paused process) is taken over by a waiting process, which configures; the
stopped one, resumed, finishes its own idempotent configuration.

Privileges: the marker and the lock live in ``<prefix>esmapper-locks`` (or the cache). A
user that may not read or write that index (403: a role without it, a read-only cluster
block), or a cluster that does not create it on the first write
(``action.auto_create_index: false``), configures as before this module existed: unlocked
and unmarked (configuring is safe when several processes do it at once,
:mod:`esmapper.indexes.configure`), with a warning in the log.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import logging
import os
import socket
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Final

from elastic_transport import TransportError
from elasticsearch import ApiError, AuthorizationException, Elasticsearch, NotFoundError

from esmapper._version import __version__
from esmapper.cache import CacheClient, InMemoryCache
from esmapper.indexes.configure import IndexState
from esmapper.indexes.spec import IndexSpec
from esmapper.locks import DEFAULT_TTL, LOCK_INDEX, LockProvider, check_duration
from esmapper.model.codec import format_datetime, parse_datetime

if TYPE_CHECKING:
    from esmapper._context import Context, HasContext

__all__ = [
    "LOCK_NAME",
    "LOCK_WAIT",
    "MARKER_TTL",
    "SKIPPED",
    "ConfigureMarker",
    "clear_marker",
    "configuration_key",
    "configure_once",
    "skipped_states",
]

log = logging.getLogger("esmapper.indexes")

#: How long a configuration stays marked done (5 minutes).
MARKER_TTL: Final = _dt.timedelta(minutes=5)
#: The lock one process configures under.
LOCK_NAME: Final = "configure-indexes"
#: How long a process waits for another one configuring now, by default.
LOCK_WAIT: Final = _dt.timedelta(minutes=2)
#: The ``action`` of every model's state when the marker said the configuration is done.
SKIPPED: Final = "skipped"
_MARKER_ID: Final = "configure-indexes.done"
_CACHE_KEY: Final = "esmapper:configure-indexes"


def configuration_key(specs: Iterable[IndexSpec]) -> str:
    """The stable hash of what configuring ``specs`` makes: each model's alias, kind,
    version, mapping, settings and pipeline (in alias order), and the esmapper version
    that configures them. Sends nothing."""
    parts = sorted(
        json.dumps(
            [
                spec.alias,
                spec.kind,
                spec.version,
                spec.body(with_alias=False),
                spec.options.pipeline,
            ],
            sort_keys=True,
            default=repr,
            separators=(",", ":"),
        )
        for spec in specs
    )
    text = "\n".join([f"esmapper {__version__}", *parts])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


class ConfigureMarker:
    """The marker of one index prefix (see the module docstring for where it lives)."""

    def __init__(
        self,
        client: Elasticsearch,
        *,
        index_prefix: str,
        clock: Callable[[], _dt.datetime],
        cache: CacheClient | None,
    ) -> None:
        self.client = client
        self.index = f"{index_prefix}{LOCK_INDEX}"
        self.clock = clock
        #: the shared cache the marker lives in (``None``: Elasticsearch)
        self.cache = None if cache is None or isinstance(cache, InMemoryCache) else cache
        self.cache_key = f"{index_prefix}{_CACHE_KEY}"

    @classmethod
    def of(cls, ctx: Context) -> ConfigureMarker:
        """The marker of a mapper's services (its client, prefix, clock and cache)."""
        return cls(ctx.client, index_prefix=ctx.index_prefix, clock=ctx.clock, cache=ctx.cache)

    def is_set(self, key: str) -> bool:
        """Whether configuration ``key`` is marked done and not expired: one cache read, or
        ``GET /<prefix>esmapper-locks/_doc/configure-indexes.done`` (no document, no
        index: not set). Any other failure raises."""
        if self.cache is not None:
            try:
                return bool(self.cache.get(self.cache_key) == key)
            except Exception as exc:  # any client's failure: configuring is idempotent
                log.warning("configure_indexes: the cache did not answer (%s); configuring", exc)
                return False
        try:
            found = self.client.get(index=self.index, id=_MARKER_ID).body
        except NotFoundError:
            return False
        source = found.get("_source") or {}
        if source.get("key") != key:
            return False
        expires = source.get("expires_at")
        return isinstance(expires, str) and parse_datetime(expires) > self.clock()

    def set(self, key: str) -> None:
        """Mark configuration ``key`` done for :data:`MARKER_TTL`: a cache write with that
        expiry, or ``PUT /<prefix>esmapper-locks/_doc/configure-indexes.done``."""
        if self.cache is not None:
            self.cache.set(self.cache_key, key, MARKER_TTL.total_seconds())
            return
        now = self.clock()
        self.client.index(
            index=self.index,
            id=_MARKER_ID,
            document={
                "key": key,
                "configured_at": format_datetime(now),
                "expires_at": format_datetime(now + MARKER_TTL),
                "by": f"{socket.gethostname()}:{os.getpid()}",
            },
        )

    def clear(self) -> None:
        """Forget the marker (whatever it marks): a cache delete, or ``DELETE`` of the
        document (a missing one, or a missing index, is cleared already; a user that may
        not write the locks index is warned in the log, not refused: what cleared it, a
        deletion or a reindex, is done)."""
        if self.cache is not None:
            self.cache.remove(self.cache_key)
            return
        try:
            self.client.delete(index=self.index, id=_MARKER_ID)
        except NotFoundError:
            pass  # no marker, or no locks index: cleared
        except AuthorizationException as exc:  # a user that may not write the locks index
            log.warning(
                "the configure_indexes marker in %s was not cleared (%s): processes "
                "starting in the next %d minutes skip configure_indexes() unless forced; "
                "the first write of a model creates its missing index all the same",
                self.index,
                exc.error,
                MARKER_TTL.total_seconds() // 60,
            )


def clear_marker(mapper: Context | HasContext) -> None:
    """Clear the configure marker of ``mapper`` (a mapper or its services): the next
    ``configure_indexes()`` configures (see the module docstring)."""
    services: Any = getattr(mapper, "services", None) or mapper
    ConfigureMarker.of(services).clear()


def skipped_states(specs: Iterable[IndexSpec]) -> list[IndexState]:
    """The state of each of ``specs`` when the marker said the configuration is done:
    ``action`` :data:`SKIPPED`, ``expected_index`` the model's index (its partitions'
    pattern for a time-series model), ``current_index`` ``None`` (nothing was read).
    Sends nothing."""
    return [
        IndexState(
            model=spec.info.name,
            alias=spec.alias,
            expected_index=spec.index_pattern if spec.is_time_series else spec.physical_name(),
            current_index=None,
            action=SKIPPED,
        )
        for spec in specs
    ]


def _unusable(exc: ApiError) -> bool:
    """Whether ``exc`` says the locks index cannot be used by this user or cluster (403:
    no privilege on it, a read-only block; 404 ``index_not_found_exception``: the
    cluster does not create it on the first write), a definite answer, not a lost one."""
    if isinstance(exc, AuthorizationException):
        return True
    return isinstance(exc, NotFoundError) and exc.error == "index_not_found_exception"


def configure_once(
    locks: LockProvider,
    marker: ConfigureMarker,
    key: str,
    configure: Callable[[], list[Any]],
    *,
    skipped: list[Any],
    force: bool = False,
    lock_wait: _dt.timedelta = LOCK_WAIT,
    lock_ttl: _dt.timedelta = DEFAULT_TTL,
) -> list[Any]:
    """Run ``configure`` unless configuration ``key`` is marked done, under the
    ``configure-indexes`` lock (steps 1 to 5 of the module docstring); its states, or
    ``skipped`` (:func:`skipped_states`) when the marker said it was done. The locks index
    refused (see the module docstring): ``configure`` runs unlocked and unmarked. The lock's
    lease is ``lock_ttl``, renewed by its heartbeat. Raises
    :class:`~esmapper.errors.LockError` when the lock stays held past ``lock_wait``,
    ``ValueError`` for a negative ``lock_wait`` or a ``lock_ttl`` not above zero (before
    anything is sent)."""
    check_duration("lock_wait", lock_wait, zero=True)
    check_duration("lock_ttl", lock_ttl)
    try:
        if not force and marker.is_set(key):
            log.debug("configure_indexes: configuration %s marked done, skipped", key)
            return list(skipped)
        lock = locks.acquire(LOCK_NAME, lock_ttl, wait=lock_wait, poll=0.2)
    except ApiError as exc:
        if not _unusable(exc):
            raise
        log.warning(
            "configure_indexes: %s cannot be used (%s); configuring without the lock and "
            "the marker",
            marker.index,
            exc.error,
        )
        return configure()
    with lock:
        if not force and marker.is_set(key):
            log.info("configure_indexes: configured meanwhile by another process, skipped")
            return list(skipped)
        states = configure()
        try:
            marker.set(key)
        except (ApiError, TransportError) as exc:
            log.warning("configure_indexes: configured, but the marker was not set: %s", exc)
        except Exception as exc:  # a shared cache's failure: the next process configures
            if marker.cache is None:
                raise
            log.warning("configure_indexes: configured, but the marker was not set: %s", exc)
    return states
