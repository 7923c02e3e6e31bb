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
- ``real_tasks``: ``_reindex``/``_update_by_query``/``_delete_by_query`` with
  ``wait_for_completion=false`` run as tasks, with the tasks API and the ``.tasks`` results
  (:mod:`esmapper.testing._real_tasks`); :attr:`ClusterProxy.tasks` scripts and observes
  them.
"""

from __future__ import annotations

from typing import Any

from esmapper.testing._real_tasks import RealTasks
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
        real_tasks: bool = True,
        **options: Any,
    ) -> None:
        super().__init__(upstream, **options)
        if normalised_mappings:
            self.add_rule(NormalisedMappings())
        self.tasks = RealTasks(self._forward)
        """The emulated tasks (scripting and counts; idle when ``real_tasks=False``)."""
        if real_tasks:
            self.add_rule(self.tasks)

    def stop(self) -> None:
        """End the emulated tasks' waits, then stop the proxy (idempotent)."""
        self.tasks.close()
        super().stop()
