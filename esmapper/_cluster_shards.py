"""Why a cluster is not green: which shard copies are not active, and whether they can be.

``GET /_cluster/health`` says ``yellow`` when a replica copy is not active and ``red`` when a
primary is not. On a one-node development cluster every index created with the default
``number_of_replicas: 1`` is yellow for good: Elasticsearch never allocates two copies of a
shard on one node (the ``same_shard`` allocation decider), so the replica waits for a
second node that never comes. Nothing is wrong there, and nothing can be done but set the
replicas to 0. A yellow with enough nodes is different: a replica that could be placed is
not (a node left, an allocation failed, disk watermarks, allocation filters), and someone
should look.

:func:`read_shards` reads, only when the cluster is not green, ``GET
/_cluster/health?level=indices`` (per index: shards, replicas, active primaries,
initializing and unassigned copies) and :func:`classify` splits the indexes that are not
green into:

- ``primaries``: a primary is not active (the cluster is red: data cannot be read or
  written there);
- ``unplaceable``: only replica copies are missing, no more than the cluster cannot hold:
  ``shards * (replicas + 1 - data nodes)`` copies when there are fewer data nodes than
  copies of a shard;
- ``placeable``: replica copies are unassigned or initializing that the nodes could hold.

:func:`explain` asks Elasticsearch why for one of them: ``GET
/_cluster/health/<index>?level=shards`` finds a shard with an unassigned copy, ``POST
/_cluster/allocation/explain`` with ``{"index", "shard", "primary"}`` answers why it is not
allocated (the unassigned reason, e.g. ``NODE_LEFT``, and the first decider that says no).
Read-only; an error in these reads leaves the explanation out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs
from elastic_transport import TransportError
from elasticsearch import ApiError, Elasticsearch

__all__ = ["IndexShards", "ShardSummary", "classify", "explain", "read_shards"]


@attrs.frozen
class IndexShards:
    """One index that is not green: its ``status``, ``shards`` (primaries), ``replicas``
    per shard, copies ``unassigned`` and ``initializing``, primaries not active
    (``inactive_primaries``) and how many replica copies no node can hold
    (``unplaceable``)."""

    index: str
    status: str
    shards: int
    replicas: int
    unassigned: int
    initializing: int
    inactive_primaries: int
    unplaceable: int

    @property
    def kind(self) -> str:
        """``primaries``, ``unplaceable`` or ``placeable`` (see the module docstring)."""
        if self.inactive_primaries:
            return "primaries"
        if not self.initializing and self.unassigned <= self.unplaceable:
            return "unplaceable"
        return "placeable"


@attrs.frozen
class ShardSummary:
    """The indexes that are not green, by kind, and the cluster's data nodes."""

    data_nodes: int
    primaries: tuple[IndexShards, ...] = ()
    unplaceable: tuple[IndexShards, ...] = ()
    placeable: tuple[IndexShards, ...] = ()


def _int(entry: Mapping[str, Any], key: str) -> int:
    value = entry.get(key)
    return int(value) if isinstance(value, int | float | str) and str(value).isdigit() else 0


def classify(
    cluster: Mapping[str, Any],
    indices: Mapping[str, Any],
    first: Callable[[str], bool] | None = None,
) -> ShardSummary:
    """Sort the indexes of ``indices`` (``GET _cluster/health?level=indices``'s ``indices``)
    that are not green; ``cluster`` is the ``GET _cluster/health`` answer (its
    ``number_of_data_nodes``). Each kind lists the indexes ``first`` says (the
    application's own) before the others, then by name. Pure."""
    nodes = _int(cluster, "number_of_data_nodes") or _int(cluster, "number_of_nodes")
    groups: dict[str, list[IndexShards]] = {"primaries": [], "unplaceable": [], "placeable": []}
    ours = first or (lambda name: False)
    for name, entry in sorted(indices.items(), key=lambda item: (not ours(item[0]), item[0])):
        if not isinstance(entry, Mapping) or entry.get("status") == "green":
            continue
        shards, replicas = _int(entry, "number_of_shards"), _int(entry, "number_of_replicas")
        index = IndexShards(
            index=name,
            status=str(entry.get("status")),
            shards=shards,
            replicas=replicas,
            unassigned=_int(entry, "unassigned_shards"),
            initializing=_int(entry, "initializing_shards"),
            inactive_primaries=max(0, shards - _int(entry, "active_primary_shards")),
            unplaceable=shards * max(0, replicas + 1 - nodes),
        )
        groups[index.kind].append(index)
    return ShardSummary(
        data_nodes=nodes,
        primaries=tuple(groups["primaries"]),
        unplaceable=tuple(groups["unplaceable"]),
        placeable=tuple(groups["placeable"]),
    )


def read_shards(
    client: Elasticsearch,
    cluster: Mapping[str, Any],
    first: Callable[[str], bool] | None = None,
) -> ShardSummary:
    """:func:`classify` of ``GET /_cluster/health?level=indices`` (``first``: the indexes
    listed first); sends nothing when ``cluster`` (the ``GET /_cluster/health`` answer) is
    green."""
    if cluster.get("status") == "green":
        return ShardSummary(data_nodes=_int(cluster, "number_of_data_nodes"))
    body = client.cluster.health(level="indices").body
    return classify(body, body.get("indices") or {}, first)


def explain(client: Elasticsearch, index: str) -> str | None:
    """Why a copy of a shard of ``index`` is not allocated, in one line (``None`` when no
    copy is unassigned or the reads fail): the unassigned reason and the first decider's
    ``NO`` (see the module docstring)."""
    try:
        body = client.cluster.health(index=index, level="shards").body
        entry = (body.get("indices") or {}).get(index) or {}
        found = [
            (int(number), bool(shard.get("primary_active")))
            for number, shard in (entry.get("shards") or {}).items()
            if _int(shard, "unassigned_shards")
        ]
        if not found:
            return None
        shard, primary_active = min(found)
        answer = client.cluster.allocation_explain(
            index=index, shard=shard, primary=not primary_active
        ).body
    except (ApiError, TransportError, ValueError):
        return None
    return _why(index, shard, answer)


def _why(index: str, shard: int, answer: Mapping[str, Any]) -> str:
    copy = "replica" if not answer.get("primary") else "primary"
    reason = (answer.get("unassigned_info") or {}).get("reason")
    refusals = [
        str(decider.get("explanation"))
        for node in answer.get("node_allocation_decisions") or ()
        for decider in node.get("deciders") or ()
        if decider.get("decision") == "NO" and decider.get("explanation")
    ]
    why = refusals[0] if refusals else answer.get("allocate_explanation") or "no reason given"
    since = f" ({reason})" if reason else ""
    return f"{index} shard {shard} {copy}{since}: {why}"
