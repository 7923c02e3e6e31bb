"""RedisCache: the :class:`~esmapper.cache.CacheClient` protocol on Redis.

Keys are ``<namespace>:c:<key>``. Values are stored as bytes: ``j`` + the value's JSON
(``esmapper._json``: orjson when installed) or ``m`` + the token of a
:class:`~esmapper.cache.ReadMarker`, so markers of readers in other processes compare by
value. ``compare_and_set`` is one Lua script (``GET``, compare the stored bytes with the
expected value's encoding, ``SET ... PX``): atomic across processes. ``remove_by_prefix``
walks the namespace with ``SCAN MATCH`` (never ``KEYS``) and ``UNLINK``\\s in batches.

Faults (owned by :class:`~esmapper.distributed.link.RedisLink`): when Redis cannot be
reached, reads miss (``get`` returns ``None``, ``compare_and_set`` returns ``False``); an
announced change is sent again until it goes through or until ``lease`` after the outage
began, and one that never went through is remembered, so nothing is served from Redis
again before the namespace was flushed (as soon as Redis answers). No method raises
because Redis is unreachable.

With ``announce=True`` (what :class:`~esmapper.distributed.hybrid.HybridCache` uses) every
change of an existing value is also published on the namespace's ``inv`` channel, in the
same round trip as the change, and waits for every subscriber's acknowledgement (at most the
link's ``lease``): in-process copies of other processes are dropped before a write returns.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable
from typing import Any

from esmapper import _json
from esmapper.cache import CacheStats, ReadMarker
from esmapper.distributed.link import RedisLink, RedisUnavailable, pipeline_unlink

__all__ = ["RedisCache", "decode", "encode"]

_CAS = """
local current = redis.call('GET', KEYS[1])
if ARGV[1] == '1' then
  if current then return 0 end
elseif current ~= ARGV[2] then
  return 0
end
redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[4])
return 1
"""


def encode(value: Any) -> bytes:
    """``m<token>`` for a :class:`ReadMarker`, else ``j<JSON>``; raises ``TypeError`` for
    what JSON cannot hold."""
    if isinstance(value, ReadMarker):
        return b"m" + value.token.encode()
    return b"j" + _json.dumps(value)


def decode(raw: bytes | None) -> Any:
    """The value :func:`encode` stored (``None`` for ``None``)."""
    if raw is None:
        return None
    if raw[:1] == b"m":
        return ReadMarker(raw[1:].decode())
    return _json.loads(raw[1:])


class RedisCache:
    """A :class:`~esmapper.cache.CacheClient` on Redis (see the module docstring).

    ``link`` is a ``redis://`` URL (a :class:`RedisLink` is made with ``namespace`` and
    ``link_options``: ``socket_timeout``, ``connect_timeout``, ``lease``, ``retry_min``,
    ``retry_max``) or a :class:`RedisLink` shared with other clients. ``default_ttl``
    (seconds) applies when a call gives no ``ttl``.
    """

    def __init__(
        self,
        link: str | RedisLink,
        *,
        namespace: str = "esmapper",
        default_ttl: float = 300.0,
        announce: bool = False,
        **link_options: Any,
    ) -> None:
        self._owns_link = not isinstance(link, RedisLink)
        self.link = (
            link
            if isinstance(link, RedisLink)
            else RedisLink(link, namespace=namespace, **link_options)
        )
        self.default_ttl = default_ttl
        self.announce = announce
        self.stats = CacheStats()
        self._cas = self.link.client.register_script(_CAS)

    def _ttl_ms(self, ttl: float | None) -> int:
        return max(1, int((self.default_ttl if ttl is None else ttl) * 1000))

    # -- reads -------------------------------------------------------------------------

    def get(self, key: str) -> Any:
        """The value, or ``None`` (absent, expired, or Redis not usable: one ``GET``)."""
        return self.get_with_ttl(key)[0]

    def get_with_ttl(self, key: str) -> tuple[Any, float | None]:
        """``(value, seconds left)`` in one round trip (``GET`` + ``PTTL``); ``(None, None)``
        when absent or when Redis is not usable."""
        name = self.link.key(key)

        def run(client: Any) -> Any:
            pipe = client.pipeline(transaction=False)
            pipe.get(name)
            pipe.pttl(name)
            return pipe.execute()

        raw = pttl = None
        if self.link.ready():
            with contextlib.suppress(RedisUnavailable):
                raw, pttl = self.link.call(run)
        if raw is None:
            self.stats.misses += 1
            return None, None
        self.stats.hits += 1
        return decode(raw), (pttl / 1000 if pttl and pttl > 0 else None)

    # -- writes ------------------------------------------------------------------------

    def set(self, key: str, value: Any, ttl: float | None = None) -> None:
        """``SET key value PX ttl`` (announced). When it fails the old value may remain:
        the link serves nothing before a flush."""
        name, data, px = self.link.key(key), encode(value), self._ttl_ms(ttl)
        if self.announce:
            sent = self._deliver(
                lambda: self.link.broadcast("inv", {"k": [key]}, lambda p: p.set(name, data, px=px))
            )
        else:
            sent = self._deliver(
                lambda: self.link.call(lambda c: c.set(name, data, px=px), force=True)
            )
        if sent:
            self.stats.sets += 1

    def compare_and_set(
        self, key: str, expected: Any, value: Any, ttl: float | None = None
    ) -> bool:
        """Store ``value`` only if the stored value equals ``expected`` (``None``: absent),
        compared as encoded bytes, atomically (one ``EVALSHA``). ``False`` when Redis is
        not usable."""
        if not self.link.ready():
            return False
        name = self.link.key(key)
        args = [
            "1" if expected is None else "0",
            b"" if expected is None else encode(expected),
            encode(value),
            self._ttl_ms(ttl),
        ]
        try:
            stored = bool(self.link.call(lambda c: self._cas(keys=[name], args=args, client=c)))
        except RedisUnavailable:
            return False
        if stored:
            self.stats.sets += 1
            if self.announce and expected is not None and not isinstance(expected, ReadMarker):
                self._deliver(lambda: self.link.broadcast("inv", {"k": [key]}))
        return stored

    def remove(self, key: str) -> None:
        """Remove ``key`` (see :meth:`remove_many`)."""
        self.remove_many([key])

    def remove_many(self, keys: Iterable[str]) -> None:
        """``UNLINK`` the keys (announced, same round trip). When it fails they are
        remembered: the link serves nothing before a flush."""
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return
        names = [self.link.key(k) for k in wanted]
        if self.announce:
            sent = self._deliver(
                lambda: self.link.broadcast("inv", {"k": wanted}, pipeline_unlink(names))
            )
        else:
            sent = self._deliver(lambda: self.link.call(lambda c: c.unlink(*names), force=True))
        if sent:
            self.stats.removals += len(wanted)

    def remove_by_prefix(self, prefix: str) -> int:
        """Remove every key starting with ``prefix`` (``SCAN MATCH`` + ``UNLINK``, then
        announced); the number removed (0 when Redis is not usable: then remembered)."""
        removed = 0

        def send() -> None:
            nonlocal removed
            removed = self.link.remove_matching(self.link.key(prefix))
            if self.announce:
                self.link.broadcast("inv", {"p": [prefix]})

        if not self._deliver(send):
            return 0
        self.stats.removals += removed
        return removed

    def clear(self) -> None:
        """Remove every entry of the namespace (announced)."""
        self.remove_by_prefix("")

    def _deliver(self, send: Callable[[], object]) -> bool:
        """Run ``send`` (a change, announced or not); whether it reached Redis.

        When it fails and the change is announced, it is sent again until it goes
        through or until ``lease`` after the start of the outage: by then every process
        that could not hear from Redis either has lost its lease (it drops its copies and
        flushes before serving again: :meth:`RedisLink._note_lapse`) or Redis came back
        and the change went through. A change that never went through is remembered
        (:meth:`RedisLink.removal_failed`): this process flushes the namespace as soon as
        Redis answers."""
        try:
            send()
            return True
        except RedisUnavailable:
            pass
        if self.announce:
            since = self.link.outage_started()
            deadline = (time.monotonic() if since is None else since) + self.link.lease
            while time.monotonic() < deadline:
                time.sleep(min(self.link.lease / 10, max(0.0, deadline - time.monotonic())))
                try:
                    send()
                    return True
                except RedisUnavailable:
                    continue
        self.link.removal_failed()
        return False

    def usable(self) -> bool:
        """Whether Redis is reachable and synchronised now (else reads miss, and a
        compare-and-set fails without contention)."""
        return self.link.ready()

    def close(self) -> None:
        """Close the link if this cache made it."""
        if self._owns_link:
            self.link.close()

    def __repr__(self) -> str:
        return f"RedisCache({self.link!r})"
