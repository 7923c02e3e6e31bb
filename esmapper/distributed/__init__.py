"""Several processes, one truth: the cache and the change notifications shared through Redis.

- :class:`RedisLink` (``link.py``): one process's connection for one namespace: bounded
  timeouts, the breaker and its one warning, the flush after an outage, acknowledged
  broadcasts; the subscription with its lease and its gaps (``_listener.py``).
- :class:`RedisCache` (``redis_cache.py``): the ``CacheClient`` protocol on Redis.
- :class:`HybridCache` (``hybrid.py``): an in-process L1 in front of a RedisCache.
- :class:`RedisMessageBus` (``redis_bus.py``): ``entity_changed`` for every process.

:func:`connect` wires all three on one link, as ``Mapper(redis=url)`` (or
``ESMAPPER_REDIS_URL``) does; docs/architecture.md tells the rules and the stale bound.
"""

from __future__ import annotations

import os
from typing import Any

from esmapper.distributed.hybrid import HybridCache
from esmapper.distributed.link import RedisLink, RedisUnavailable
from esmapper.distributed.redis_bus import RedisMessageBus
from esmapper.distributed.redis_cache import RedisCache

__all__ = [
    "ENV_REDIS_URL",
    "HybridCache",
    "RedisCache",
    "RedisLink",
    "RedisMessageBus",
    "RedisUnavailable",
    "connect",
    "redis_url_from_env",
]

ENV_REDIS_URL = "ESMAPPER_REDIS_URL"
"""The Redis a :class:`~esmapper.Mapper` shares its cache and notifications through when
it is given no ``redis=``."""


def redis_url_from_env() -> str | None:
    """``$ESMAPPER_REDIS_URL`` when set and not empty."""
    return os.environ.get(ENV_REDIS_URL, "").strip() or None


def connect(
    url: str, *, namespace: str = "esmapper", **options: Any
) -> tuple[HybridCache, RedisMessageBus, RedisLink]:
    """One :class:`RedisLink` to ``url`` for ``namespace`` (``options`` are its keyword
    arguments) and the :class:`HybridCache` and :class:`RedisMessageBus` on it. The link's
    listener thread starts here; nothing else is sent before first use."""
    link = RedisLink(url, namespace=namespace, **options)
    cache = HybridCache(link)
    bus = RedisMessageBus(link)
    return cache, bus, link
