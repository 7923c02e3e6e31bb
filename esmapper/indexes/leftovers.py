"""Old versioned indexes left behind by a reindex: ``<alias>-vK`` no longer behind the alias.

A reindex ``-vK -> -vN`` ends by deleting ``-vK`` (:mod:`esmapper.indexes.reindex`). A
process killed between the alias swap and that delete leaves ``-vK`` behind: a
write-blocked full copy of the data that nothing would ever delete. To tell it from an old
index kept on purpose (``delete_old=False``, or the new index got fewer documents), the
reindex writes its decision into the old index's mapping ``_meta`` *before* the swap
(:func:`mark_replaced`)::

    "_meta": {"esmapper_replaced_by": {"index": "<alias>-vN", "keep": null or "<why>"}}

:func:`find_leftovers` (read-only; ``esmapper status``, plans) lists every index named like
the model's versioned indexes (``<alias>-v<K>``) that the alias does not point at, with K
lower than the version the alias points at. Newer ones (the target of a reindex that did
not finish) are the reindex's own business: its next run reuses or recreates them.

:func:`delete_leftovers` (``migrate``, after its reindexes) deletes a leftover only when all
of these hold: the alias points at exactly the model's current index ``<alias>-vN``; the
leftover is not behind the alias and K < N; it is write-blocked (a reindex got to its last
pass); and its marker says it was replaced and not to be kept. Anything else is only
reported: a kept index, or one without a marker (left by an older esmapper, or not by a
reindex at all), is deleted by hand (``DELETE /<index>``).

Time-series models (:mod:`esmapper.indexes.partition_reindex`) get the same per period: a
partition ``<alias>-vK-<period>`` older than the live one (the one holding the dated alias
``<alias>-<period>``) is a leftover, "current" when the live one is at the model's version,
and deleted under the same conditions (it holds neither the dated nor the umbrella alias).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import logging
import re
from typing import TYPE_CHECKING, Any, Final

import attrs
from elasticsearch import Elasticsearch, NotFoundError

from esmapper._context import context_of
from esmapper._shards import count_all
from esmapper._transport import once, send_or_read_back
from esmapper.indexes._meta import put_meta
from esmapper.indexes._reindex_fence import serving_aliases
from esmapper.indexes.timeseries import Partition, parse_partition
from esmapper.locks import DEFAULT_TTL, LockProvider, check_duration

if TYPE_CHECKING:
    from esmapper._context import Context, HasContext
    from esmapper.indexes.spec import IndexSpec

__all__ = ["MARKER", "Leftover", "delete_leftovers", "find_leftovers", "mark_replaced"]

log = logging.getLogger("esmapper.indexes")

MARKER: Final = "esmapper_replaced_by"
LOCK_TTL: Final = DEFAULT_TTL


@attrs.frozen
class Leftover:
    """An old ``<alias>-v<version>`` index the alias no longer points at.

    ``target`` is the index the alias points at, ``current`` whether that is the model's
    current version, ``docs`` its document count, ``write_blocked`` whether a reindex
    blocked it, ``replaced_by`` / ``keep`` the reindex's marker (``keep``: why it was kept;
    ``None`` with ``replaced_by`` set: it was to be deleted).
    """

    index: str
    version: int
    target: str
    current: bool
    docs: int
    write_blocked: bool
    replaced_by: str | None = None
    keep: str | None = None

    @property
    def deletable(self) -> bool:
        """Whether :func:`delete_leftovers` deletes it (see the module docstring)."""
        marked = self.replaced_by is not None and self.keep is None
        return self.current and self.write_blocked and marked

    @property
    def reason(self) -> str:
        """What it is and what deletes it, for humans."""
        into = self.replaced_by
        if into is None:
            return (
                "older than the index behind the alias, not marked by a reindex; delete it by hand"
            )
        if self.keep is not None:
            return f"kept by the reindex into {into}: {self.keep}; delete it by hand"
        if not self.current:
            return f"replaced by {into}; migrate deletes it once the alias is current"
        if not self.write_blocked:
            return f"replaced by {into} but not write-blocked; delete it by hand"
        return f"the reindex into {into} stopped before deleting it; migrate deletes it"


def mark_replaced(client: Elasticsearch, old: str, new: str, *, keep: str | None) -> None:
    """Record in ``old``'s mapping ``_meta`` that ``new`` replaces it and whether it is to be
    kept (``keep``: why) or deleted (``None``).

    Sends ``GET /<old>/_mapping`` (other ``_meta`` keys are kept) and ``PUT
    /<old>/_mapping`` with the merged ``_meta`` (allowed under a write block), once; a lost
    answer is read back (the marker is there: done; else sent once more). Raises the
    client's errors."""
    put_meta(client, old, MARKER, {"index": new, "keep": keep})


def _blocked(info: dict[str, Any]) -> bool:
    blocks = info.get("settings", {}).get("index", {}).get("blocks", {})
    return str(blocks.get("write", "false")).lower() == "true"


def find_leftovers(client: Elasticsearch, spec: IndexSpec) -> list[Leftover]:
    """The old indexes of ``spec`` (a ``versioned`` or time-series model; plain ones have
    none) left behind, oldest first (see the module docstring).

    Sends ``GET /<alias>-v*`` (aliases, mappings, settings) and ``GET /<index>/_count``
    per leftover; changes nothing. Without an alias (or with an alias on several indexes
    or on an index not named like the model's) there are none."""
    if spec.is_time_series:
        return _partition_leftovers(client, spec)
    if spec.kind != "versioned":
        return []
    named = re.compile(rf"{re.escape(spec.alias)}-v(\d+)")
    found: dict[str, Any] = dict(client.indices.get(index=f"{spec.alias}-v*").body)
    versions = {
        name: int(match.group(1)) for name in found if (match := named.fullmatch(name)) is not None
    }
    behind = [name for name, info in found.items() if spec.alias in (info.get("aliases") or {})]
    if len(behind) != 1 or behind[0] not in versions:
        return []
    target = behind[0]
    leftovers = []
    for name, version in sorted(versions.items(), key=lambda item: item[1]):
        if name == target or version >= versions[target]:
            continue
        current = target == spec.physical_name()
        leftovers.append(
            _leftover(client, name, version, found[name], target=target, current=current)
        )
    return leftovers


def _leftover(
    client: Elasticsearch, name: str, version: int, info: Any, *, target: str, current: bool
) -> Leftover:
    """The :class:`Leftover` ``name`` (``info``: its ``GET /<index>`` entry); ``target``
    serves instead (``current``: at the model's version). Sends ``GET /<name>/_count``."""
    marker = (info.get("mappings", {}).get("_meta") or {}).get(MARKER) or {}
    return Leftover(
        index=name,
        version=version,
        target=target,
        current=current,
        docs=count_all(client, what=f"the count of {name}", index=name),
        write_blocked=_blocked(info),
        replaced_by=None if marker.get("index") is None else str(marker["index"]),
        keep=None if marker.get("keep") is None else str(marker["keep"]),
    )


def _partition_leftovers(client: Elasticsearch, spec: IndexSpec) -> list[Leftover]:
    """Per period, the partitions older than the live one (the one holding the dated
    alias); periods without a live partition have none. Sends ``GET /<alias>-v*``."""
    found: dict[str, Any] = dict(
        client.indices.get(index=f"{spec.alias}-v*", allow_no_indices=True).body
    )
    by_period: dict[_dt.datetime, list[Partition]] = {}
    for name in found:
        partition = parse_partition(spec, name)
        if partition is not None:
            by_period.setdefault(partition.start, []).append(partition)
    leftovers = []
    for start, group in sorted(by_period.items()):
        dated = spec.dated_alias(start)
        holders = [p for p in group if dated in (found[p.index].get("aliases") or {})]
        if not holders:
            continue
        live = max(holders, key=lambda p: p.version)
        for partition in sorted(group, key=lambda p: p.version):
            if partition.version >= live.version:
                continue
            info, current = found[partition.index], live.version == spec.version
            leftovers.append(
                _leftover(
                    client,
                    partition.index,
                    partition.version,
                    info,
                    target=live.index,
                    current=current,
                )
            )
    return leftovers


def _delete(client: Elasticsearch, index: str) -> None:
    log.debug("DELETE /%s", index)

    def send() -> None:
        with contextlib.suppress(NotFoundError):  # already gone
            once(client).indices.delete(index=index)

    send_or_read_back(send, lambda: not client.indices.exists(index=index), what=f"DELETE /{index}")


def delete_leftovers(
    mapper: Context | HasContext,
    model: type,
    *,
    lock_wait: _dt.timedelta = _dt.timedelta(0),
    lock_ttl: _dt.timedelta = LOCK_TTL,
) -> list[str]:
    """Delete ``model``'s deletable leftovers (see the module docstring); their names.

    Reads with :func:`find_leftovers`; when one is deletable, takes the lock
    ``reindex:<alias>`` (a reindex of the model never runs meanwhile), reads again, and per
    leftover checks ``HEAD /<index>/_alias/<alias>`` (never the index behind the alias)
    and sends ``DELETE /<index>`` once (404: already gone; a lost answer: ``HEAD /<index>``,
    still there: sent once more). Raises :class:`~esmapper.errors.LockError` when the lock
    stays held for ``lock_wait`` (its expiry: ``lock_ttl``) and the client's errors;
    ``ValueError`` before anything is sent for a ``lock_ttl`` not above zero or a negative
    ``lock_wait``."""
    check_duration("lock_ttl", lock_ttl)
    check_duration("lock_wait", lock_wait, zero=True)
    mapper = context_of(mapper)  # a Mapper: its services
    spec = mapper.spec(model)
    client = mapper.client
    if not any(leftover.deletable for leftover in find_leftovers(client, spec)):
        return []
    locks = LockProvider(client, index_prefix=mapper.index_prefix, clock=mapper.clock)
    deleted: list[str] = []
    with locks.acquire(f"reindex:{spec.alias}", lock_ttl, wait=lock_wait):
        for leftover in find_leftovers(client, spec):
            if not leftover.deletable:
                continue
            if any(
                client.indices.exists_alias(name=alias, index=leftover.index)
                for alias in serving_aliases(spec, leftover.index)
            ):
                continue  # moved back by hand meanwhile
            _delete(client, leftover.index)
            log.info(
                "deleted %s, left behind by the reindex into %s", leftover.index, leftover.target
            )
            deleted.append(leftover.index)
    return deleted
