"""The :class:`~esmapper.jobs.WorkQueue` of a fleet, on Redis (redis-py).

``RedisWorkQueue(url_or_client, name="esmapper:work")`` keeps its items under ``<name>:``
(give each application, or index prefix, its own ``name``):

- ``<name>:items`` hash key -> the item's JSON (pending or leased items);
- ``<name>:pending`` list of keys, oldest first;
- ``<name>:leases`` sorted set key -> the time (ms, Redis's clock) its lease or retry
  delay ends; ``<name>:tokens`` hash key -> the token of the dequeue holding it;
- ``<name>:attempts`` hash key -> how many times it was dequeued;
- ``<name>:failed`` hash key -> ``{"item", "error"}``.

Every operation is one Lua script, so it is atomic, and the time is Redis's own
(``TIME``): the workers' clocks do not matter. ``dequeue`` first moves the items whose
lease or retry delay ended back to the front of ``pending`` (or to ``failed`` after
``max_attempts`` leases ran out), then pops one, counts the attempt and leases it under a
new random token. ``renew``, ``complete``, ``abandon`` and ``release`` apply only while
the token is the item's. An item whose JSON this release cannot read (a newer release
added a field) is released by ``dequeue``, not handed out nor failed.

Unknown outcomes: the client is made without retries (a dequeue whose answer was lost
must not be sent twice). A lost answer raises redis-py's error: an ``enqueue`` sent again
is harmless (deduplicated on the key); a lost ``dequeue`` leases the item to nobody until
its lease runs out, then another worker gets it; a ``complete`` (``abandon``,
``release``) sent again answers ``False`` once the first applied (the token is gone), so
the worker sends them again after a lost answer.
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import uuid
from typing import Any, Final

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from esmapper.jobs._work_items import ReindexWorkItem
from esmapper.jobs._work_queue import DEFAULT_LEASE, Lease, QueueCounts, check_queue_options
from esmapper.locks import check_duration

__all__ = ["RedisWorkQueue"]

log = logging.getLogger("esmapper.jobs")


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


_NOW: Final = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""

# KEYS: items pending failed; ARGV: key json
_ENQUEUE: Final = """
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HDEL', KEYS[3], ARGV[1])
redis.call('RPUSH', KEYS[2], ARGV[1])
return 1
"""

# KEYS: items pending leases tokens attempts failed; ARGV: token lease_ms max_attempts
_DEQUEUE: Final = (
    _NOW
    + """
local due = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)
for i = #due, 1, -1 do
  local key = due[i]
  redis.call('ZREM', KEYS[3], key)
  local leased = redis.call('HDEL', KEYS[4], key) == 1
  local n = tonumber(redis.call('HGET', KEYS[5], key) or '0')
  local body = redis.call('HGET', KEYS[1], key)
  if body and leased and n >= tonumber(ARGV[3]) then
    redis.call('HDEL', KEYS[1], key)
    redis.call('HDEL', KEYS[5], key)
    local why = 'its lease ran out ' .. n .. ' times (a worker died or stalled)'
    redis.call('HSET', KEYS[6], key, cjson.encode({item = body, error = why}))
  elseif body then
    redis.call('LPUSH', KEYS[2], key)
  end
end
while true do
  local key = redis.call('LPOP', KEYS[2])
  if not key then return false end
  local body = redis.call('HGET', KEYS[1], key)
  if body then
    local n = redis.call('HINCRBY', KEYS[5], key, 1)
    redis.call('ZADD', KEYS[3], now + tonumber(ARGV[2]), key)
    redis.call('HSET', KEYS[4], key, ARGV[1])
    return {key, body, n}
  end
end
"""
)

# KEYS: leases tokens; ARGV: key token lease_ms
_RENEW: Final = (
    _NOW
    + """
if redis.call('HGET', KEYS[2], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
return 1
"""
)

# KEYS: items leases tokens attempts; ARGV: key token
_COMPLETE: Final = """
if redis.call('HGET', KEYS[3], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
redis.call('HDEL', KEYS[4], ARGV[1])
return 1
"""

# KEYS: items leases tokens attempts failed; ARGV: key token max_attempts error retry_ms
_ABANDON: Final = (
    _NOW
    + """
if redis.call('HGET', KEYS[3], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[3], ARGV[1])
local n = tonumber(redis.call('HGET', KEYS[4], ARGV[1]) or '0')
if n >= tonumber(ARGV[3]) then
  local body = redis.call('HGET', KEYS[1], ARGV[1])
  redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('HDEL', KEYS[1], ARGV[1])
  redis.call('HDEL', KEYS[4], ARGV[1])
  redis.call('HSET', KEYS[5], ARGV[1], cjson.encode({item = body, error = ARGV[4]}))
  return 2
end
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[5]), ARGV[1])
return 1
"""
)


# KEYS: leases tokens attempts pending; ARGV: key token
_RELEASE: Final = """
if redis.call('HGET', KEYS[2], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HINCRBY', KEYS[3], ARGV[1], -1)
redis.call('RPUSH', KEYS[4], ARGV[1])
return 1
"""


def _ms(duration: _dt.timedelta) -> int:
    return max(1, round(duration.total_seconds() * 1000))


class RedisWorkQueue:
    """A :class:`~esmapper.jobs.WorkQueue` on Redis (see the module
    docstring). ``url_or_client``: a ``redis://`` URL (a client is made with
    ``socket_timeout`` and no retries, closed by :meth:`close`) or a ``redis.Redis``."""

    def __init__(
        self,
        url_or_client: str | redis.Redis,
        *,
        name: str = "esmapper:work",
        max_attempts: int = 3,
        retry_delay: _dt.timedelta = _dt.timedelta(seconds=30),
        socket_timeout: float = 5.0,
    ) -> None:
        check_queue_options(max_attempts, retry_delay)
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"name must be a non-empty str, not {name!r}")
        if isinstance(url_or_client, str):
            if not url_or_client.startswith(("redis://", "rediss://", "unix://")):
                raise ValueError(f"not a Redis URL: {url_or_client!r}")
            self.client: Any = redis.Redis.from_url(
                url_or_client,
                socket_timeout=socket_timeout,
                socket_connect_timeout=socket_timeout,
                retry=Retry(NoBackoff(), 0),
            )
            self._owns_client = True
        elif isinstance(url_or_client, redis.Redis):
            self.client, self._owns_client = url_or_client, False
        else:
            raise TypeError(f"RedisWorkQueue takes a Redis URL or client, not {url_or_client!r}")
        self.name = name
        self.max_attempts = max_attempts
        self.retry_delay = retry_delay
        keys = ("items", "pending", "leases", "tokens", "attempts", "failed")
        self.keys = {k: f"{name}:{k}" for k in keys}
        self._enqueue = self.client.register_script(_ENQUEUE)
        self._dequeue = self.client.register_script(_DEQUEUE)
        self._renew = self.client.register_script(_RENEW)
        self._complete = self.client.register_script(_COMPLETE)
        self._abandon = self.client.register_script(_ABANDON)
        self._release = self.client.register_script(_RELEASE)

    def _k(self, *names: str) -> list[str]:
        return [self.keys[n] for n in names]

    def enqueue(self, item: ReindexWorkItem) -> bool:
        if not isinstance(item, ReindexWorkItem):
            raise TypeError(f"enqueue takes a ReindexWorkItem, not {item!r}")
        body = json.dumps(item.to_dict(), sort_keys=True)
        keys = self._k("items", "pending", "failed")
        return bool(self._enqueue(keys=keys, args=[item.key, body]))

    def dequeue(self, lease: _dt.timedelta = DEFAULT_LEASE) -> Lease | None:
        """The oldest pending item this release can read, leased for ``lease``. An item
        it cannot read (a newer release's fields) is released for a worker that can (to
        the back of the queue, its attempt not counted, a WARNING logged) and the next one
        taken; ``None`` when none is pending or none of them can be read."""
        check_duration("lease", lease)
        keys = self._k("items", "pending", "leases", "tokens", "attempts", "failed")
        unreadable: set[str] = set()
        while True:
            token = uuid.uuid4().hex
            found = self._dequeue(keys=keys, args=[token, _ms(lease), self.max_attempts])
            if not found:
                return None
            key, body, attempt = (_text(found[0]), found[1], int(found[2]))
            try:
                item = ReindexWorkItem.from_dict(json.loads(body))
            except (TypeError, ValueError) as exc:  # JSONDecodeError is a ValueError
                self._release_key(key, token)
                if key in unreadable:  # every pending item was tried
                    return None
                unreadable.add(key)
                log.warning("%s: an item this release cannot read, left for another: %s",
                            key, " ".join(str(exc).split()))  # fmt: skip
                continue
            return Lease(item, token, attempt)

    def _release_key(self, key: str, token: str) -> bool:
        keys = self._k("leases", "tokens", "attempts", "pending")
        return bool(self._release(keys=keys, args=[key, token]))

    def _retry_ms(self) -> int:
        return _ms(self.retry_delay) if self.retry_delay else 0

    def release(self, lease: Lease) -> bool:
        return self._release_key(lease.item.key, lease.token)

    def renew(self, lease: Lease, duration: _dt.timedelta = DEFAULT_LEASE) -> bool:
        check_duration("duration", duration)
        keys = self._k("leases", "tokens")
        return bool(self._renew(keys=keys, args=[lease.item.key, lease.token, _ms(duration)]))

    def complete(self, lease: Lease) -> bool:
        keys = self._k("items", "leases", "tokens", "attempts")
        return bool(self._complete(keys=keys, args=[lease.item.key, lease.token]))

    def abandon(self, lease: Lease, error: str = "") -> bool:
        keys = self._k("items", "leases", "tokens", "attempts", "failed")
        args = [lease.item.key, lease.token, self.max_attempts, error, self._retry_ms()]
        return bool(self._abandon(keys=keys, args=args))

    def counts(self) -> QueueCounts:
        pipe = self.client.pipeline(transaction=True)
        pipe.hlen(self.keys["items"])
        pipe.hlen(self.keys["tokens"])
        pipe.hlen(self.keys["failed"])
        items, leased, failed = pipe.execute()
        return QueueCounts(int(items) - int(leased), int(leased), int(failed))

    def failed(self) -> list[tuple[ReindexWorkItem, str]]:
        found = []
        for raw in self.client.hvals(self.keys["failed"]):
            entry = json.loads(raw)
            item = ReindexWorkItem.from_dict(json.loads(entry["item"]))
            found.append((item, str(entry.get("error") or "")))
        return found

    def close(self) -> None:
        """Close the client this queue made (not one it was given)."""
        if self._owns_client:
            self.client.close()

    def __repr__(self) -> str:
        return f"RedisWorkQueue(name={self.name!r})"
