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

- ``normalised_mappings``: a ``GET .../_mapping`` answer omits ``"type": "object"`` on an
  object field that has ``properties``, as Elasticsearch echoes mappings.

What a test scripts, for the next matching requests:

- :meth:`ClusterProxy.fail_shards`: searches, scroll pages and counts answered in part,
  status 200 with ``_shards.failed`` (or ``timed_out``), or refused when they ask
  ``allow_partial_search_results=false`` (:mod:`esmapper.testing._real_shards`).
"""

from __future__ import annotations

from typing import Any

from esmapper.testing._real_shards import DEFAULT_ERROR, ShardFailures
from esmapper.testing._rules import Exchange, Reply, json_reply
from esmapper.testing.faults import FaultProxy

__all__ = ["ClusterProxy", "NormalisedMappings"]


class NormalisedMappings:
    """Echo mappings as Elasticsearch does: no ``"type": "object"`` beside ``properties``
    (Elasticsearch stores an object field with properties without its default type)."""

    def before(self, exchange: Exchange) -> Reply | None:
        return None

    def after(self, exchange: Exchange, reply: Reply) -> Reply:
        if exchange.method != "GET" or reply.status != 200 or "/_mapping" not in exchange.path:
            return reply
        body = reply.json()
        if not isinstance(body, dict):
            return reply
        for entry in body.values():
            if isinstance(entry, dict):
                _strip_object_type(entry.get("mappings"))
        return json_reply(reply.status, body)


def _strip_object_type(node: Any) -> None:
    if isinstance(node, dict):
        props = node.get("properties")
        if isinstance(props, dict):
            if node.get("type") == "object":
                del node["type"]
            for child in props.values():
                _strip_object_type(child)
        for key in ("fields",):
            sub = node.get(key)
            if isinstance(sub, dict):
                for child in sub.values():
                    _strip_object_type(child)


class ClusterProxy(FaultProxy):
    """A :class:`~esmapper.testing.faults.FaultProxy` whose answers follow a real cluster
    where the local server differs (see the module docstring for the list)."""

    def __init__(
        self,
        upstream: str,
        *,
        normalised_mappings: bool = True,
        **options: Any,
    ) -> None:
        super().__init__(upstream, **options)
        if normalised_mappings:
            self.add_rule(NormalisedMappings())
        self._shard_failures = ShardFailures(self._forward)
        self.add_rule(self._shard_failures)

    def fail_shards(
        self,
        *,
        times: int = 1,
        method: str | None = None,
        path: str | None = None,
        skip: int = 0,
        timed_out: bool = False,
        refuse: bool = True,
        error_type: str = DEFAULT_ERROR,
        reason: str | None = None,
        shard: int = 0,
        shards: int = 3,
    ) -> None:
        """Answer the next ``times`` matching searches, scroll pages and counts (after
        ``skip`` of them; ``path``: a regex searched in the path, ``method``: exact) as a
        cluster does when shard ``shard`` of ``shards`` of every index searched fails with
        ``error_type`` (or, ``timed_out``, runs out of time): status 200, that shard's
        documents missing, ``_shards.failed``; a search asking
        ``allow_partial_search_results=false`` is refused instead (``refuse=False``:
        answered in part all the same). A document is on shard
        :func:`~esmapper.testing._real_shards.shard_of` of its id. See
        :mod:`esmapper.testing._real_shards`."""
        self._shard_failures.add(
            times=times,
            method=method,
            path=path,
            skip=skip,
            timed_out=timed_out,
            refuse=refuse,
            error_type=error_type,
            reason=reason,
            shard=shard,
            shards=shards,
        )

    @property
    def pending_shard_failures(self) -> int:
        """How many scripted shard failures (:meth:`fail_shards`) are still to come."""
        return self._shard_failures.pending

    @property
    def partial_answers(self) -> list[str]:
        """The paths of the requests answered in part or refused so far, in order."""
        return list(self._shard_failures.injected)
