"""Searches answered in part, as a real cluster answers them when a shard fails or times
out: the rule behind :meth:`ClusterProxy.fail_shards
<esmapper.testing.cluster.ClusterProxy.fail_shards>`.

The local server has one shard per index and never loses one. A cluster of several nodes
answers a search that some shards could not serve (a node left, a search queue was full, a
shard ran past the search's ``timeout``) with status 200, the hits and aggregations of the
shards that did answer, and says so only in ``_shards`` (``failed``, ``failures[]``) or in
``timed_out``; ``allow_partial_search_results`` defaults to true.

How a scripted shard failure is answered (each index is taken to have ``shards`` shards,
3 by default, and a document to live on shard ``crc32(_id) % shards``; shard ``shard``,
0 by default, of every index searched fails):

- **A search** (``/_search``, with or without a point in time or ``scroll``): the proxy
  first lists the target's documents (one ``_search`` of up to 10,000 hits, no
  ``_source``; through the same point in time), then forwards the search with the failed
  shard's documents excluded from its query (``bool.must_not`` ``ids``), so the hits, the
  page filled from the other shards, ``hits.total`` and the aggregations are those of a
  cluster without that shard. The answer's ``_shards`` says ``failed`` (one per index
  searched) with a ``failures[]`` entry per index (``shard``, ``index``, ``node``,
  ``reason: {type, reason}``). A scroll opened by such a search misses those documents on
  every later page too, which then report no failure: as on a cluster, the scroll holds
  no context on the failed shard.
- **With ``allow_partial_search_results=false``** (the query parameter) the search is not
  forwarded: it is answered with Elasticsearch's refusal, ``search_phase_execution_exception``
  "Partial shards failure" with ``failed_shards``, the status of the shard's error (500
  for ``node_disconnected_exception``, 429 for ``es_rejected_execution_exception``...; the
  client resends 429/502/503/504 by itself, each resend taking the next scripted failure).
  ``refuse=False`` answers it in part all the same, as a server that does not honour the
  parameter in some case (a client must check every answer anyway).
- **A scroll page** (``/_search/scroll``): forwarded, then the failed shard's hits are
  dropped from the page and ``_shards`` reports the failure (a scroll page cannot ask for
  complete results).
- **A count** (``/_count``, which has no ``allow_partial_search_results``): counted
  without the failed shard's documents, ``_shards`` reporting the failure.
- **``timed_out=True``**: the shard runs out of time instead of failing: its documents are
  missing the same way, but ``_shards`` counts it as successful and the search answers
  ``timed_out: true``; with ``allow_partial_search_results=false`` the search is refused
  (``search_timeout_exception`` "Time exceeded", 429, as Elasticsearch 8.16+ does). A
  timed-out ``_count`` says nothing at all (its answer has no ``timed_out``).

Limits: only the first 10,000 documents of the target are placed on shards (a failed
shard misses at most those); a ``q=`` query string is not narrowed. A request whose
listing fails (a missing index, a point in time that is gone) is forwarded untouched and
does not use up the scripted failure.
"""

from __future__ import annotations

import json
import re
import threading
import urllib.parse
import zlib
from collections.abc import Callable
from typing import Any, Final, Literal

import attrs

from esmapper.testing._fault_plans import take_next
from esmapper.testing._rules import Exchange, Reply, json_reply

__all__ = ["DEFAULT_ERROR", "ShardFailures", "shard_of"]

#: ``(method, target, headers, body) -> (status, headers, body)``: a request to the upstream.
Forward = Callable[[str, str, dict[str, str], bytes], tuple[int, list[tuple[str, str]], bytes]]
Kind = Literal["search", "scroll", "count"]

#: The error of a failed shard unless the script names another: a data node that left.
DEFAULT_ERROR: Final = "node_disconnected_exception"
#: The HTTP status Elasticsearch gives each shard error (and so the refusal it causes).
_STATUS: Final = {
    "node_disconnected_exception": 500,
    "node_not_connected_exception": 500,
    "es_rejected_execution_exception": 429,
    "circuit_breaking_exception": 429,
    "search_timeout_exception": 429,
    "no_shard_available_action_exception": 503,
    "task_cancelled_exception": 400,
}
_NODE: Final = "Xf3kQm9bT0-2yN7wq1cZgA"  # a node id as Elasticsearch makes them
_LOOKUP_SIZE: Final = 10_000
_KINDS: Final[tuple[tuple[Kind, re.Pattern[str]], ...]] = (
    ("scroll", re.compile(r"(^|/)_search/scroll(/[^/]*)?$")),
    ("search", re.compile(r"(^|/)_search$")),
    ("count", re.compile(r"(^|/)_count$")),
)
#: the parameters of a search that say which indexes it covers (copied to the listing)
_TARGET_PARAMS: Final = ("ignore_unavailable", "allow_no_indices", "expand_wildcards")


def shard_of(doc_id: str, shards: int = 3) -> int:
    """The shard the proxy places ``doc_id`` on (``crc32`` of its UTF-8 bytes, modulo
    ``shards``): a test computes which documents a failed shard takes away."""
    return zlib.crc32(doc_id.encode()) % shards


@attrs.define(slots=True)
class _Plan:
    remaining: int
    skip: int
    method: str | None
    path: re.Pattern[str] | None
    timed_out: bool
    refuse: bool
    error_type: str
    reason: str
    shard: int
    shards: int

    def error(self) -> dict[str, str]:
        if self.timed_out:
            return {"type": "search_timeout_exception", "reason": "Time exceeded"}
        return {"type": self.error_type, "reason": self.reason}


def _kind(method: str, path: str) -> Kind | None:
    if method not in ("GET", "POST"):
        return None
    return next((kind for kind, pattern in _KINDS if pattern.search(path)), None)


class ShardFailures:
    """The rule that answers scripted searches, scroll pages and counts in part (see the
    module docstring); ``forward`` sends the listing of the target's documents upstream."""

    def __init__(self, forward: Forward) -> None:
        self._forward = forward
        self._lock = threading.Lock()
        self._plans: list[_Plan] = []
        #: the paths of the requests answered in part (or refused), in order
        self.injected: list[str] = []

    def add(
        self,
        *,
        times: int,
        method: str | None,
        path: str | None,
        skip: int,
        timed_out: bool,
        refuse: bool,
        error_type: str,
        reason: str | None,
        shard: int,
        shards: int,
    ) -> None:
        """Script the next ``times`` matching requests (after ``skip`` of them)."""
        if times < 1:
            raise ValueError("times must be at least 1")
        if shards < 2 or not 0 <= shard < shards:
            raise ValueError(f"shard={shard} of shards={shards}: need 0 <= shard < shards, 2+")
        plan = _Plan(
            times,
            skip,
            method,
            re.compile(path) if path is not None else None,
            timed_out,
            refuse,
            error_type,
            reason or f"[{_NODE}][127.0.0.1:9301][indices:data/read/search] disconnected",
            shard,
            shards,
        )
        with self._lock:
            self._plans.append(plan)

    @property
    def pending(self) -> int:
        """How many scripted failures are still to come."""
        with self._lock:
            return sum(plan.remaining for plan in self._plans)

    def _take(self, method: str, path: str) -> _Plan | None:
        with self._lock:
            return take_next(self._plans, method, path)

    def _give_back(self, plan: _Plan) -> None:
        with self._lock:
            plan.remaining += 1
            if plan not in self._plans:
                self._plans.insert(0, plan)

    # -- the rule ------------------------------------------------------------------------

    def before(self, exchange: Exchange) -> Reply | None:
        kind = _kind(exchange.method, exchange.path)
        if kind is None:
            return None
        plan = self._take(exchange.method, exchange.path)
        if plan is None:
            return None
        if kind == "scroll":  # the hits are dropped from the page that comes back
            exchange.notes["shards"] = (plan, kind, None)
            return None
        body = exchange.json()
        body = body if isinstance(body, dict) else {}
        listed = self._list(exchange, body)
        if listed is None:  # no listing (a missing index...): answered as the server does
            self._give_back(plan)
            return None
        failed = [hit for hit in listed if shard_of(str(hit["_id"]), plan.shards) == plan.shard]
        indexes = sorted({str(hit["_index"]) for hit in listed if hit.get("_index")})
        if not indexes:
            indexes = [exchange.index_part or "_na_"]
        with self._lock:
            self.injected.append(exchange.path)
        refused = exchange.params.get("allow_partial_search_results") == "false"
        if kind == "search" and refused and plan.refuse:
            return _refusal(plan, indexes)
        if failed:
            ids = sorted({str(hit["_id"]) for hit in failed})
            query = body.get("query") or {"match_all": {}}
            body["query"] = {"bool": {"must": [query], "must_not": [{"ids": {"values": ids}}]}}
            exchange.body = json.dumps(body).encode()
        exchange.notes["shards"] = (plan, kind, indexes)
        return None

    def after(self, exchange: Exchange, reply: Reply) -> Reply:
        noted = exchange.notes.get("shards")
        if noted is None or reply.status != 200:
            return reply
        plan, kind, indexes = noted
        answer = reply.json()
        if not isinstance(answer, dict):
            return reply
        if kind == "scroll":
            found = answer.get("hits")
            hits = found.get("hits") or [] if isinstance(found, dict) else []
            indexes = sorted({str(h["_index"]) for h in hits if h.get("_index")}) or ["_na_"]
            if isinstance(found, dict):
                found["hits"] = [
                    h for h in hits if shard_of(str(h.get("_id")), plan.shards) != plan.shard
                ]
            with self._lock:
                self.injected.append(exchange.path)
        total = plan.shards * len(indexes)
        if plan.timed_out:
            answer["_shards"] = {"total": total, "successful": total, "skipped": 0, "failed": 0}
            if kind != "count":  # a count does not say it timed out
                answer["timed_out"] = True
        else:
            answer["_shards"] = {
                "total": total,
                "successful": total - len(indexes),
                "skipped": 0,
                "failed": len(indexes),
                "failures": [_failure(plan, index) for index in indexes],
            }
        return json_reply(200, answer)

    def _list(self, exchange: Exchange, body: dict[str, Any]) -> list[dict[str, Any]] | None:
        """The target's documents (``_id``, ``_index``), or ``None`` when they cannot be
        listed."""
        listing: dict[str, Any] = {
            "size": _LOOKUP_SIZE,
            "_source": False,
            "track_total_hits": False,
            "query": {"match_all": {}},
        }
        pit = body.get("pit")
        if isinstance(pit, dict):
            target = "/_search"
            listing["pit"] = pit
        else:
            index = exchange.path.strip("/").split("/", 1)[0]
            target = "/_search" if index.startswith("_") else f"/{index}/_search"
            params = {k: v for k, v in exchange.params.items() if k in _TARGET_PARAMS}
            if params:
                target += "?" + urllib.parse.urlencode(params)
        headers = {k: v for k, v in exchange.headers.items() if k.lower() != "content-encoding"}
        try:
            status, _, raw = self._forward("POST", target, headers, json.dumps(listing).encode())
        except OSError:
            return None
        if status != 200:
            return None
        try:
            answer = json.loads(raw)
        except ValueError:
            return None
        hits = (answer.get("hits") or {}).get("hits") if isinstance(answer, dict) else None
        return [h for h in hits if isinstance(h, dict) and "_id" in h] if hits else []


def _failure(plan: _Plan, index: str) -> dict[str, Any]:
    return {"shard": plan.shard, "index": index, "node": _NODE, "reason": plan.error()}


def _refusal(plan: _Plan, indexes: list[str]) -> Reply:
    """Elasticsearch's answer to a search with ``allow_partial_search_results=false`` that
    a shard did not answer."""
    error = plan.error()
    status = _STATUS.get(error["type"], 500)
    return json_reply(
        status,
        {
            "error": {
                "root_cause": [{**error, "index": index} for index in indexes],
                "type": "search_phase_execution_exception",
                "reason": "Partial shards failure",
                "phase": "query",
                "grouped": True,
                "failed_shards": [_failure(plan, index) for index in indexes],
            },
            "status": status,
        },
    )
