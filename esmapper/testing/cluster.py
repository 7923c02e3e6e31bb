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

What a test chooses in the constructor:

- ``nodes=N``: the cluster health APIs report ``N`` nodes, all data nodes (the local
  server is one), shard counts untouched (:mod:`esmapper.testing._real_nodes`);
- ``version="9.1.0"``: ``GET /`` answers that ``version.number``, to pin request shapes
  that differ by version (:mod:`esmapper.testing._real_version`); the specification check
  reads the requests sent through this proxy on that version's branch
  (:func:`esmapper.testing._spec_recorder.pin_version`).

The ``normalised_mappings`` rule below writes every mapping answer as Elasticsearch's
serialisers do (:mod:`esmapper.testing._real_mappings`): besides the object type, no
parameter at its default (``"index": true`` ...), ``copy_to`` as a list, ``dynamic`` as a
string, also in ``GET /<index>``.

What it reproduces, each a rule that is on unless switched off in the constructor:

- ``normalised_mappings``: a ``GET .../_mapping`` answer omits ``"type": "object"`` on an
  object field that has ``properties``, as Elasticsearch echoes mappings.
- ``missing_index_pit``: a point in time naming a missing index without
  ``ignore_unavailable=true`` answers 404 (:mod:`esmapper.testing._real_pit`).
- ``aliases_cover_every_index``: a point in time, update-by-query or delete-by-query on an
  alias of several indexes covers all of them (:mod:`esmapper.testing._real_aliases`).
- ``data_stream_templates``: Elasticsearch's built-in data-stream templates (``logs-*-*``,
  ``metrics-*-*``, ``synthetics-*-*``, ``traces-*-*``) refuse regular indexes of those
  names (:mod:`esmapper.testing._real_datastreams`).
- ``real_tasks``: ``_reindex``/``_update_by_query``/``_delete_by_query`` with
  ``wait_for_completion=false`` run as tasks, with the tasks API and the ``.tasks`` results
  (:mod:`esmapper.testing._real_tasks`); :attr:`ClusterProxy.tasks` scripts and observes
  them.
- ``real_async_search``: ``_async_search`` submit, get, status and delete, each search run
  as a ``_search`` through the proxy (:mod:`esmapper.testing._real_async_search`);
  :attr:`ClusterProxy.async_searches` scripts (``hold``/``finish``/``expire``) and
  observes them.

What a test scripts, for the next matching requests:

- :meth:`ClusterProxy.fail_shards`: searches, scroll pages and counts answered in part,
  status 200 with ``_shards.failed`` (or ``timed_out``), or refused when they ask
  ``allow_partial_search_results=false`` (:mod:`esmapper.testing._real_shards`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from esmapper.testing._real_aliases import AliasesCoverEveryIndex
from esmapper.testing._real_async_search import RealAsyncSearch
from esmapper.testing._real_datastreams import DataStreamTemplates
from esmapper.testing._real_mappings import answers_mappings, serialise_mapping
from esmapper.testing._real_nodes import ReportedNodes
from esmapper.testing._real_pit import MissingIndexPit
from esmapper.testing._real_shards import DEFAULT_ERROR, ShardFailures
from esmapper.testing._real_tasks import RealTasks
from esmapper.testing._real_version import ReportedVersion
from esmapper.testing._rules import Exchange, Reply, Rule, json_reply
from esmapper.testing._spec_recorder import pin_version
from esmapper.testing.faults import FaultProxy

__all__ = ["ClusterProxy", "NormalisedMappings"]


class NormalisedMappings(Rule):
    """Echo mappings as Elasticsearch does (:mod:`esmapper.testing._real_mappings`): every
    ``GET`` answer holding ``mappings`` (``/<index>/_mapping``, ``/<index>``) is
    rewritten."""

    def after(self, exchange: Exchange, reply: Reply) -> Reply:
        if exchange.method != "GET" or reply.status != 200 or not answers_mappings(exchange):
            return reply
        body = reply.json()
        if not isinstance(body, dict):
            return reply
        changed = False
        for entry in body.values():
            if isinstance(entry, dict) and isinstance(entry.get("mappings"), dict):
                entry["mappings"] = serialise_mapping(entry["mappings"])
                changed = True
        return json_reply(reply.status, body) if changed else reply


class ClusterProxy(FaultProxy):
    """A :class:`~esmapper.testing.faults.FaultProxy` whose answers follow a real cluster
    where the local server differs (see the module docstring for the list)."""

    def __init__(
        self,
        upstream: str,
        *,
        nodes: int | None = None,
        version: str | None = None,
        normalised_mappings: bool = True,
        missing_index_pit: bool = True,
        aliases_cover_every_index: bool = True,
        data_stream_templates: bool = True,
        real_tasks: bool = True,
        real_async_search: bool = True,
        **options: Any,
    ) -> None:
        super().__init__(upstream, **options)
        if nodes is not None:
            self.add_rule(ReportedNodes(nodes))
        self._unpin: Callable[[], None] = lambda: None
        if version is not None:
            self.add_rule(ReportedVersion(version))
            # the spec check reads what is sent here on that version's branch
            self._unpin = pin_version(self.url, version)
        if normalised_mappings:
            self.add_rule(NormalisedMappings())
        if missing_index_pit:
            self.add_rule(MissingIndexPit(self._upstream))
        if aliases_cover_every_index:
            self.add_rule(AliasesCoverEveryIndex(self._upstream))
        if data_stream_templates:
            self.add_rule(DataStreamTemplates(self._upstream))
        self.tasks = RealTasks(self._forward)
        """The emulated tasks (scripting and counts; idle when ``real_tasks=False``)."""
        if real_tasks:
            self.add_rule(self.tasks)
        self._shard_failures = ShardFailures(self._forward)
        self.add_rule(self._shard_failures)
        self.async_searches = RealAsyncSearch(self.url)
        """The emulated async searches (scripting and counts; idle when
        ``real_async_search=False``)."""
        if real_async_search:
            self.add_rule(self.async_searches)

    def stop(self) -> None:
        """End the emulated tasks' waits, then stop the proxy (idempotent)."""
        self.tasks.close()
        self._unpin()
        super().stop()

    def _upstream(self, method: str, path: str) -> Reply:
        """The upstream's answer to a request a rule sends itself (not recorded)."""
        status, headers, body = self._forward(method, path, {}, b"")
        return Reply(status, body, headers)

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
