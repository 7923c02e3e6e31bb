"""Which partitions of a time-series model are at an older version than the model:
what ``configure_indexes`` and ``status`` report as outdated and
what a reindex moves.

Per period (day or month) the *live* partition is the one holding the period's dated
alias, else the one of the highest version (the rule :mod:`esmapper.indexes.maintenance`
keeps the aliases by). A live partition below ``Index.version`` is outdated; other
partitions of the period are the business of :mod:`esmapper.indexes.leftovers` (an old
one a reindex replaced) or of the next reindex (a newer one an interrupted reindex left
unswapped: it is recreated). Partitions whose period expired (``max_age``) are skipped:
retention deletes them. Discovery goes by physical index name, so a partition is found
whatever aliases it still holds.

The order of :attr:`PartitionVersions.outdated` is the order a reindex takes them: lowest
version first (the "current version": the lowest present, so completed work is never redone
and an interrupted run resumes where it stopped), then oldest period first (the
volatile current period, which takes writes, comes last).
"""

from __future__ import annotations

import datetime as _dt
from typing import TYPE_CHECKING

import attrs

from esmapper.indexes.maintenance import list_partitions
from esmapper.indexes.timeseries import Partition, expires_at

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

    from esmapper.indexes.spec import IndexSpec

__all__ = ["PartitionVersions", "Upgrade", "partition_versions"]


@attrs.frozen(slots=True)
class Upgrade:
    """A live partition below the model's version: ``partition`` and the ``aliases`` it
    holds (a reindex moves them all to ``target``, the partition at the model's version)."""

    partition: Partition
    aliases: tuple[str, ...]
    target: str


@attrs.frozen(slots=True)
class PartitionVersions:
    """The live partitions of a time-series model by version (see the module docstring).

    ``outdated``: to reindex, in order; ``newer``: live partitions above the model's
    version (the code was downgraded); ``lowest``: the lowest version of a live,
    unexpired partition (``None`` without any).
    """

    outdated: tuple[Upgrade, ...] = ()
    newer: tuple[Partition, ...] = ()
    lowest: int | None = None


def partition_versions(
    client: Elasticsearch, spec: IndexSpec, now: _dt.datetime
) -> PartitionVersions:
    """The live partitions of ``spec`` (a ``daily``/``monthly`` model) by version at
    ``now``. Sends ``GET /<alias>-v*/_alias``; changes nothing."""
    partitions = list_partitions(client, spec)
    by_period: dict[_dt.datetime, list[Partition]] = {}
    for partition in partitions:
        by_period.setdefault(partition.start, []).append(partition)
    outdated: list[Upgrade] = []
    newer: list[Partition] = []
    versions: list[int] = []
    for start, group in by_period.items():
        expiry = expires_at(spec.kind, start, spec.options.max_age)
        if expiry is not None and now > expiry:
            continue
        dated = spec.dated_alias(start)
        holders = [p for p in group if dated in partitions[p]]
        live = max(holders or group, key=lambda p: p.version)
        versions.append(live.version)
        if live.version < spec.version:
            aliases = tuple(sorted(partitions[live]))
            outdated.append(Upgrade(live, aliases, spec.partition_name(start)))
        elif live.version > spec.version:
            newer.append(live)
    outdated.sort(key=lambda u: (u.partition.version, u.partition.start))
    return PartitionVersions(
        tuple(outdated),
        tuple(sorted(newer, key=lambda p: p.start)),
        min(versions) if versions else None,
    )
