"""The write block a reindex puts on the old index for its last pass: who set it, and its
removal when that reindex is no longer running.

A reindex (:mod:`esmapper.indexes.reindex`) blocks writes to ``<alias>-vK`` from its final
catch-up pass to the alias swap. Before ``PUT /<alias>-vK/_block/write`` it records who
blocks the index in its mapping ``_meta`` (:func:`block_writes`)::

    "_meta": {"esmapper_write_block": {"lock": "reindex:<alias>", "owner": "<lock owner>",
                                       "into": "<alias>-vN", "since": "<ISO time>"}}

and :func:`unblock_writes` sends ``PUT /<index>/_settings {"index.blocks.write": false}``
and then sets the marker to ``null`` (a crash between the two leaves a marker without a
block: harmless, only a marked *and* blocked index counts).

A process killed while the block is on leaves it: every write through the alias gets 403
``cluster_block_exception``. Such a block is a **leftover** when it is marked and its lock
is not held: expired, released, or held by a process on this machine that is gone
(:mod:`esmapper.locks`). :func:`clear_leftover_block` removes it under that lock, at once;
it runs at the start of every reindex (under the reindex's own lock, before anything else,
so also when the alias turns out to be up to date) and in ``migrate`` after
``configure_indexes`` for every versioned model (so an application rolled back to the old
model version gets its writes back too). A block whose lock is live belongs to a reindex
running now and is left alone. A block without a marker was set by someone else (a user,
or an esmapper from before the marker): it is never removed by esmapper, and a reindex
refuses to run on it (:class:`~esmapper.errors.IndexConfigurationError` saying how to
remove it).
"""

from __future__ import annotations

import datetime as _dt
import logging
from typing import TYPE_CHECKING, Any, Final

import attrs
from elasticsearch import Elasticsearch

from esmapper._transport import once, send_or_read_back
from esmapper.errors import IndexConfigurationError
from esmapper.indexes._meta import put_meta, read_meta
from esmapper.locks import DEFAULT_TTL, Lock, LockProvider
from esmapper.model.codec import format_datetime, parse_datetime

if TYPE_CHECKING:
    from esmapper.indexes.spec import IndexSpec

__all__ = [
    "BLOCK_MARKER",
    "WriteBlock",
    "block_report",
    "block_writes",
    "clear_leftover_block",
    "leftover_block",
    "read_block",
    "refuse_foreign_block",
    "serving_blocked",
    "unblock_own",
    "unblock_writes",
    "write_blocked",
]

log = logging.getLogger("esmapper.indexes")

BLOCK_MARKER: Final = "esmapper_write_block"


@attrs.frozen
class WriteBlock:
    """A write-blocked index: ``marked`` when a reindex set the block (its marker's
    ``lock``, ``owner``, ``into`` and ``since`` are then known), else someone else's."""

    index: str
    marked: bool
    lock: str | None = None
    owner: str | None = None
    into: str | None = None
    since: _dt.datetime | None = None

    def seconds(self, now: _dt.datetime) -> float | None:
        """How long the block has been on at ``now`` (``None`` when unknown)."""
        return None if self.since is None else max(0.0, (now - self.since).total_seconds())

    def running(self, locks: LockProvider) -> bool:
        """Whether the reindex that set the block runs now: its lock is live (``GET`` of the
        lock document; ``False`` for a block no reindex set)."""
        return self.lock is not None and locks.live_holder(self.lock) is not None

    def describe(self, now: _dt.datetime) -> str:
        """For humans: who set it and for how long it has been on."""
        if not self.marked:
            return f"{self.index} is write-blocked, not by an esmapper reindex"
        on = self.seconds(now)
        since = "" if self.since is None else f" since {format_datetime(self.since)}"
        took = "" if on is None else f" ({on:.0f}s)"
        return (
            f"{self.index} is write-blocked{since}{took} by the reindex into {self.into} "
            f"(lock {self.lock!r}, {self.owner})"
        )


def write_blocked(client: Elasticsearch, index: str) -> bool:
    """Whether ``index`` has ``index.blocks.write`` set (``GET /<index>/_settings``)."""
    body = client.indices.get_settings(index=index).body
    blocks = body.get(index, {}).get("settings", {}).get("index", {}).get("blocks", {})
    return str(blocks.get("write", "false")).lower() == "true"


def read_block(client: Elasticsearch, index: str) -> WriteBlock | None:
    """``index``'s write block, ``None`` when writes are allowed (``GET
    /<index>/_settings``, and ``GET /<index>/_mapping`` when blocked)."""
    if not write_blocked(client, index):
        return None
    marker = read_meta(client, index).get(BLOCK_MARKER)
    if not isinstance(marker, dict) or not marker.get("lock"):
        return WriteBlock(index, marked=False)
    since = marker.get("since")
    return WriteBlock(
        index,
        marked=True,
        lock=str(marker["lock"]),
        owner=None if marker.get("owner") is None else str(marker["owner"]),
        into=None if marker.get("into") is None else str(marker["into"]),
        since=None if since is None else parse_datetime(since),
    )


def refuse_foreign_block(client: Elasticsearch, index: str, model: str, now: _dt.datetime) -> None:
    """Raise :class:`~esmapper.errors.IndexConfigurationError` when ``index`` (about to be
    reindexed, after :func:`clear_leftover_block`) is still write-blocked: someone else's
    block, or a reindex under another lock that runs now. A reindex would lift it at its
    end. Sends ``GET /<index>/_settings`` (and its mapping when blocked)."""
    block = read_block(client, index)
    if block is not None:
        raise IndexConfigurationError(
            f"{model}: {block.describe(now)}; a reindex would lift that block at its end. "
            f'Remove it first (PUT /{index}/_settings {{"index.blocks.write": false}}) or '
            "wait for its owner",
            index=index,
        )


def serving_blocked(client: Elasticsearch, spec: IndexSpec) -> list[str]:
    """The write-blocked indexes that serve ``spec``'s writes: the index behind a versioned
    alias, the partitions of a time-series model that hold an alias (umbrella or dated);
    never an old index no alias points at (a kept one stays blocked on purpose). One ``GET
    /<alias>-v*`` (aliases and settings); plain models: none."""
    if spec.kind == "plain":
        return []
    found: dict[str, Any] = dict(
        client.indices.get(index=f"{spec.alias}-v*", allow_no_indices=True).body
    )
    blocked = []
    for name, info in sorted(found.items()):
        aliases = info.get("aliases") or {}
        serving = bool(aliases) if spec.is_time_series else spec.alias in aliases
        flags = info.get("settings", {}).get("index", {}).get("blocks", {})
        if serving and str(flags.get("write", "false")).lower() == "true":
            blocked.append(name)
    return blocked


def block_report(locks: LockProvider, spec: IndexSpec) -> list[str]:
    """For ``esmapper status``: a line per write-blocked index serving ``spec``
    (:func:`serving_blocked`), saying who set the block and what lifts it; read-only."""
    lines = []
    now = locks.clock()
    for index in serving_blocked(locks.client, spec):
        block = read_block(locks.client, index)
        if block is None:
            continue  # lifted meanwhile
        what = block.describe(now)
        if not block.marked:
            lines.append(
                f'{what}; remove it by hand: PUT /{index}/_settings {{"index.blocks.write": false}}'
            )
        elif not block.running(locks):
            lines.append(f"{what}, which no longer runs; migrate or reindex lifts it")
        else:
            lines.append(f"{what}, running now")
    return lines


def block_writes(client: Elasticsearch, index: str, *, lock: Lock, into: str) -> None:
    """Mark ``index`` as blocked by ``lock``'s holder for the reindex into ``into``, then
    ``PUT /<index>/_block/write`` (it waits for in-flight writes). The block is sent once;
    after an unknown outcome the settings are read back (blocked: done; not: sent once
    more)."""
    marker: dict[str, Any] = {
        "lock": lock.name,
        "owner": lock.owner,
        "into": into,
        "since": format_datetime(lock.provider.clock()),
    }
    put_meta(client, index, BLOCK_MARKER, marker)
    send_or_read_back(
        lambda: once(client).indices.add_block(index=index, block="write"),
        lambda: write_blocked(client, index),
        what=f"PUT /{index}/_block/write",
    )


def unblock_writes(client: Elasticsearch, index: str) -> None:
    """``PUT /<index>/_settings {"index.blocks.write": false}`` (idempotent, so sent with
    the transport's retries), then the marker set to ``null``."""
    client.indices.put_settings(index=index, settings={"index.blocks.write": False})
    put_meta(client, index, BLOCK_MARKER, None)


def unblock_own(client: Elasticsearch, index: str, lock: Lock) -> bool:
    """A failed reindex's removal of its own block: :func:`unblock_writes` only when the
    block's marker (read just before, ``GET /<index>/_settings`` and ``_mapping``) names
    ``lock``'s holder. A block another run set since (it took the lock over and blocks
    the index for its own final pass) is left alone. Returns whether it was removed."""
    block = read_block(client, index)
    if block is None:
        return False
    if not block.marked or block.owner != lock.owner:
        log.error(
            "%s: not lifting the write block: %s", index, block.describe(lock.provider.clock())
        )
        return False
    unblock_writes(client, index)
    return True


def leftover_block(locks: LockProvider, index: str) -> WriteBlock | None:
    """``index``'s block when it is a leftover (marked, its lock not live): what
    :func:`clear_leftover_block` would remove; read-only (``esmapper status``, plans)."""
    block = read_block(locks.client, index)
    if block is None or not block.marked or block.running(locks):
        return None
    return block


def clear_leftover_block(
    locks: LockProvider,
    index: str,
    *,
    held: Lock | None = None,
    lock_ttl: _dt.timedelta = DEFAULT_TTL,
) -> WriteBlock | None:
    """Remove ``index``'s write block when it is a leftover; the block removed, else
    ``None`` (no block, someone else's block, or its reindex runs now).

    ``held``: a lock the caller holds; when the marker names it, the block's reindex is not
    running (we hold its lock) and the block is removed at once. Otherwise the marker's lock
    is tried once (no wait; an expired lock, or one whose holder's process is gone on this
    machine, is taken over, :mod:`esmapper.locks`), the block read again under it and
    removed, and the lock released. Sends the reads of :func:`read_block`, the lock's
    requests and those of :func:`unblock_writes`."""
    block = read_block(locks.client, index)
    if block is None or not block.marked:
        return None
    assert block.lock is not None
    if held is not None and held.name == block.lock:
        held.renew()  # ours right now: a holder paused past its lease must not lift a new block
        return _clear(locks, block)
    lock = locks.try_acquire(block.lock, lock_ttl)
    if lock is None:
        log.info("%s: its reindex is running (lock %r is live)", block.index, block.lock)
        return None
    with lock:
        block = read_block(locks.client, index)  # finished (or cleared) meanwhile?
        if block is None or not block.marked:
            return None
        return _clear(locks, block)


def _clear(locks: LockProvider, block: WriteBlock) -> WriteBlock:
    log.warning(
        "removing the write block a reindex that no longer runs left: %s",
        block.describe(locks.clock()),
    )
    unblock_writes(locks.client, block.index)
    return block
