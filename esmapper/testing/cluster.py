"""A proxy that makes the local test server answer as a real Elasticsearch cluster does
where the two differ.

The local server (noida-db) accepts what esmapper sends, but in places it is kinder than
a cluster of several nodes and shards. :class:`ClusterProxy` is a
:class:`~esmapper.testing.faults.FaultProxy` (every scripted fault still works) with
standing rules (:mod:`esmapper.testing._rules`) that answer as Elasticsearch 8/9 does::

    from esmapper.testing.cluster import ClusterProxy

    with ClusterProxy("http://127.0.0.1:9200") as cluster:
        mapper = Mapper(cluster.url, models=[...])
        ...

What it reproduces, each a rule that is on unless switched off in the constructor:

- ``normalised_mappings``: a mapping answer (``GET .../_mapping``, ``GET /<index>``) is
  written as Elasticsearch writes it: no ``"type": "object"`` beside ``properties``, no
  parameter at its default (``"index": true`` ...), ``copy_to`` as a list, ``dynamic``
  as a string (:mod:`esmapper.testing._real_mappings`).

And what a test chooses:

- ``nodes=N``: the cluster health APIs report ``N`` nodes, all data nodes (the local
  server is one), shard counts untouched (:mod:`esmapper.testing._real_nodes`);
- ``version="9.1.0"``: ``GET /`` answers that ``version.number``, to pin request shapes
  that differ by version (:mod:`esmapper.testing._real_version`).
"""

from __future__ import annotations

from typing import Any

from esmapper.testing._real_mappings import NormalisedMappings
from esmapper.testing._real_nodes import ReportedNodes
from esmapper.testing._real_version import ReportedVersion
from esmapper.testing.faults import FaultProxy

__all__ = ["ClusterProxy", "NormalisedMappings"]


class ClusterProxy(FaultProxy):
    """A :class:`~esmapper.testing.faults.FaultProxy` whose answers follow a real cluster
    where the local server differs (see the module docstring for the list)."""

    def __init__(
        self,
        upstream: str,
        *,
        normalised_mappings: bool = True,
        nodes: int | None = None,
        version: str | None = None,
        **options: Any,
    ) -> None:
        super().__init__(upstream, **options)
        if normalised_mappings:
            self.add_rule(NormalisedMappings())
        if nodes is not None:
            self.add_rule(ReportedNodes(nodes))
        if version is not None:
            self.add_rule(ReportedVersion(version))
