"""Retention and alias upkeep of time-series indexes.

:func:`maintain` looks at every partition of each ``daily``/``monthly`` model and:

- deletes the partitions whose period expired (daily: start + ``max_age``; monthly: end of
  the month + ``max_age``), or with ``discard_expired=False`` only takes them out of the
  dated and umbrella aliases;
- keeps the aliases of the others right: per period, the partition holding the dated alias
  (else the highest version) is the live one and carries the dated and umbrella aliases
  and its fence alias (:func:`~esmapper.indexes._fence.fence_name`); another version of
  the same period (a reindex leftover) carries none of them, so reads never see a period
  twice and a write at a version read from it conflicts. Superseded partitions are not deleted.

It uses the mapper's clock, so retention can be tested with an injected clock.
"""

from __future__ import annotations

import datetime as _dt
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import attrs
from elasticsearch import Elasticsearch

from esmapper._context import context_of
from esmapper.errors import IndexConfigurationError
from esmapper.indexes._fence import fence_name
from esmapper.indexes.spec import IndexSpec
from esmapper.indexes.timeseries import Partition, expires_at, parse_partition

if TYPE_CHECKING:
    from esmapper._context import Context, HasContext

__all__ = ["MaintenanceReport", "expired_partitions", "list_partitions", "maintain"]

log = logging.getLogger("esmapper.indexes")
_CHUNK = 50  # index names per DELETE request


@attrs.frozen(slots=True)
class MaintenanceReport:
    """What :func:`maintain` did: ``expired`` partitions found, ``deleted`` indexes,
    ``alias_actions`` sent (``{"add"|"remove": {"index": ..., "alias": ...}}``)."""

    expired: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    alias_actions: tuple[dict[str, Any], ...] = ()


def list_partitions(client: Elasticsearch, spec: IndexSpec) -> dict[Partition, set[str]]:
    """``partition -> its aliases`` for every physical partition of ``spec``, any version.

    Sends ``GET /<alias>-v*/_alias``.
    """
    response = client.options(ignore_status=404).indices.get_alias(index=f"{spec.alias}-v*")
    found: dict[Partition, set[str]] = {}
    body = response.body if isinstance(response.body, dict) else {}
    for index, entry in body.items():
        partition = parse_partition(spec, index)
        if partition is not None:
            aliases = entry.get("aliases", {}) if isinstance(entry, dict) else {}
            found[partition] = set(aliases)
    return found


def _plan(
    spec: IndexSpec, partitions: dict[Partition, set[str]], now: _dt.datetime
) -> tuple[list[Partition], list[dict[str, Any]]]:
    """``(expired partitions, alias actions for the live ones)``."""
    by_period: dict[_dt.datetime, list[Partition]] = {}
    for partition in partitions:
        by_period.setdefault(partition.start, []).append(partition)
    expired: list[Partition] = []
    actions: list[dict[str, Any]] = []
    for start, group in sorted(by_period.items()):
        expiry = expires_at(spec.kind, start, spec.options.max_age)
        if expiry is not None and now > expiry:
            expired.extend(group)
            continue
        dated = spec.dated_alias(start)
        holders = [p for p in group if dated in partitions[p]]
        live = max(holders or group, key=lambda p: p.version)
        for partition in group:
            # the live partition holds the dated and umbrella aliases and its fence alias;
            # a superseded one none of them (a write at a version read from it conflicts)
            mine = {dated, spec.alias, fence_name(partition.index)}
            have = partitions[partition] & mine
            want = mine if partition == live else set()
            actions += [
                {"add": {"index": partition.index, "alias": a}} for a in sorted(want - have)
            ]
            actions += [
                {"remove": {"index": partition.index, "alias": a}} for a in sorted(have - want)
            ]
    return expired, actions


def expired_partitions(
    spec: IndexSpec, partitions: dict[Partition, set[str]], now: _dt.datetime
) -> list[Partition]:
    """The partitions among ``partitions`` (:func:`list_partitions`) whose period expired
    at ``now``: what :func:`maintain` deletes (pure; the dry run of the index cleanup)."""
    return _plan(spec, partitions, now)[0]


def maintain(
    mapper: Context | HasContext,
    models: Iterable[type] | None = None,
    *,
    discard_expired: bool = True,
) -> MaintenanceReport:
    """Apply retention and fix the aliases of the time-series models (of ``models``,
    default all registered); see the module docstring.

    Sends per model ``GET /<alias>-v*/_alias``, at most one ``POST /_aliases`` with every
    alias change, and ``DELETE /<partition>,...`` for the expired partitions (when
    ``discard_expired``; otherwise their aliases are removed instead). Versioned and plain
    models are skipped. Raises the client's ``ApiError`` if Elasticsearch refuses a request
    (:class:`~esmapper.errors.IndexConfigurationError` for a partially applied alias change).
    """
    mapper = context_of(mapper)  # a Mapper: its services
    client = mapper.client
    now = mapper.clock()
    expired_names: list[str] = []
    deleted: list[str] = []
    sent: list[dict[str, Any]] = []
    for model in list(models) if models is not None else mapper.models:
        spec = mapper.spec(model)
        if not spec.is_time_series:
            continue
        partitions = list_partitions(client, spec)
        expired, actions = _plan(spec, partitions, now)
        expired_names += [p.index for p in expired]
        if not discard_expired:
            actions += [
                {"remove": {"index": p.index, "alias": a}}
                for p in expired
                for a in sorted(
                    partitions[p] & {spec.alias, spec.dated_alias(p.start), fence_name(p.index)}
                )
            ]
        if actions:
            log.debug("POST /_aliases %s", {"actions": actions})
            response = client.indices.update_aliases(actions=actions)
            if response.body.get("errors"):  # a partial answer (noida-db); ES is atomic
                raise IndexConfigurationError(
                    f"{spec.info.name}: alias changes refused: {response.body}",
                    index=spec.alias,
                )
            sent += actions
        if discard_expired and expired:
            names = sorted(p.index for p in expired)
            for i in range(0, len(names), _CHUNK):
                log.debug("DELETE /%s", ",".join(names[i : i + _CHUNK]))
                client.indices.delete(index=names[i : i + _CHUNK], ignore_unavailable=True)
            deleted += names
            spec.partitions.forget({p.start for p in expired})
            log.info("deleted expired partitions of %s: %s", spec.info.name, ", ".join(names))
    return MaintenanceReport(tuple(expired_names), tuple(deleted), tuple(sent))
