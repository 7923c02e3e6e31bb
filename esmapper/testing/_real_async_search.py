"""The async search API of a real cluster, in front of a server that has none: a standing
rule of :class:`~esmapper.testing.cluster.ClusterProxy` (``real_async_search=True``, the
default).

Elasticsearch runs ``POST /<index>/_async_search`` as a search in the background and keeps
its answer for ``keep_alive`` (default 5d) under an id; the answer is
``{"id", "is_partial", "is_running", "start_time_in_millis", "expiration_time_in_millis",
"completion_time_in_millis", "response": <the search answer>}`` (``id`` only when it is
kept: a search that finished within ``wait_for_completion_timeout`` is kept only with
``keep_on_completion=true``). ``GET /_async_search/<id>`` answers the same,
``GET /_async_search/status/<id>`` the same without ``response`` (``_shards`` and
``completion_status`` instead), ``DELETE /_async_search/<id>`` forgets it
(``{"acknowledged": true}``). An id it does not keep answers 404
``resource_not_found_exception``; one it cannot decode (not an id it made) 400
``illegal_argument_exception`` ``invalid id: [<id>]``. A search that fails answers with
the failure's status and ``error``.

:class:`RealAsyncSearch` emulates it: a submit runs the search as ``POST
/<index>/_search`` through the proxy itself (so :meth:`ClusterProxy.fail_shards` applies
to it, ``path="_search"``), and keeps its answer. What a test scripts and sees:
:meth:`hold` keeps the next submits running (answered ``is_running: true`` with no hits)
until :meth:`finish`; :meth:`expire` forgets one (its keep-alive ran out);
:attr:`submitted`, :attr:`kept` (the ids kept), :attr:`params` (each request's query
parameters) and :attr:`requests` (each request as the specification check reads it).
"""

from __future__ import annotations

import json
import re
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from typing import Any, Final

import attrs

from esmapper.testing._rules import Exchange, Reply, Rule, error_body, json_reply

__all__ = ["RealAsyncSearch"]

_ASYNC_PARAMS: Final = ("wait_for_completion_timeout", "keep_alive", "keep_on_completion")
#: the ids the emulation makes (a real cluster's are base64 of the task and document ids)
_ID: Final = re.compile(r"[0-9a-f]{32}")
_FIVE_DAYS_MS: Final = 5 * 24 * 3600 * 1000
_UNITS_MS: Final = {"d": 86_400_000, "h": 3_600_000, "m": 60_000, "s": 1000, "ms": 1}


def _millis(duration: str | None, default: int) -> int:
    if not duration:
        return default
    for unit in ("ms", "d", "h", "m", "s"):
        if duration.endswith(unit) and duration[: -len(unit)].isdigit():
            return int(duration[: -len(unit)]) * _UNITS_MS[unit]
    return default


@attrs.define
class _Search:
    id: str
    index: str
    params: dict[str, str]
    body: bytes
    started: int
    expires: int
    status: int | None = None
    answer: Any = None
    completed: int | None = None

    @property
    def running(self) -> bool:
        return self.status is None


class RealAsyncSearch(Rule):
    """The rule (see the module docstring); ``base_url`` is the proxy's own address."""

    def __init__(self, base_url: str) -> None:
        self._base = base_url.rstrip("/")
        self._lock = threading.Lock()
        self._searches: dict[str, _Search] = {}
        self._hold = 0
        #: the ids of every search submitted, kept or not, in order
        self.submitted: list[str] = []
        #: the query parameters of every async search request, in order (``(method,
        #: path, params)``)
        self.params: list[tuple[str, str, dict[str, str]]] = []
        #: every async search request as the specification check reads one (``method``,
        #: ``path``, ``params``, ``body``: parsed JSON or ``None``), in order
        self.requests: list[dict[str, Any]] = []

    # -- scripting --------------------------------------------------------------------

    def hold(self, times: int = 1) -> None:
        """Keep the next ``times`` submitted searches running until :meth:`finish`."""
        with self._lock:
            self._hold += times

    def finish(self, async_id: str | None = None) -> None:
        """Run the held search ``async_id`` (every held one when ``None``) now."""
        with self._lock:
            held = [s for s in self._searches.values() if s.running]
        for search in held:
            if async_id is None or search.id == async_id:
                self._run(search)

    def expire(self, async_id: str) -> None:
        """Forget ``async_id`` as the cluster does when its keep-alive ran out."""
        with self._lock:
            self._searches.pop(async_id, None)

    @property
    def kept(self) -> list[str]:
        """The ids the cluster keeps now."""
        with self._lock:
            return list(self._searches)

    # -- the rule ---------------------------------------------------------------------

    def before(self, exchange: Exchange) -> Reply | None:
        parts = [urllib.parse.unquote(p) for p in exchange.path.strip("/").split("/")]
        method = exchange.method
        if "_async_search" in parts:
            self.requests.append(
                {"method": method, "path": exchange.path, "params": dict(exchange.params),
                 "body": exchange.json()}
            )  # fmt: skip
        if parts[-1] == "_async_search" and method == "POST" and len(parts) <= 2:
            self.params.append((method, exchange.path, dict(exchange.params)))
            return self._submit(exchange, parts[0] if len(parts) == 2 else "")
        if not parts or parts[0] != "_async_search" or len(parts) < 2:
            return None
        self.params.append((method, exchange.path, dict(exchange.params)))
        if method == "GET" and len(parts) == 3 and parts[1] == "status":
            return self._read(parts[2], exchange.params, status=True)
        if len(parts) != 2:
            return None
        if method == "GET":
            return self._read(parts[1], exchange.params, status=False)
        if method == "DELETE":
            with self._lock:
                gone = self._searches.pop(parts[1], None)
            return json_reply(200, {"acknowledged": True}) if gone else _missing(parts[1])
        return None

    def _submit(self, exchange: Exchange, index: str) -> Reply:
        now = int(time.time() * 1000)
        params = {k: v for k, v in exchange.params.items() if k not in _ASYNC_PARAMS}
        keep = _millis(exchange.params.get("keep_alive"), _FIVE_DAYS_MS)
        search = _Search(uuid.uuid4().hex, index, params, exchange.body, now, now + keep)
        with self._lock:
            self.submitted.append(search.id)
            held = self._hold > 0
            self._hold -= 1 if held else 0
        if not held:
            self._run(search)
            if search.status != 200 or exchange.params.get("keep_on_completion") != "true":
                return Reply(search.status or 500, json.dumps(self._answer(search, False)).encode())
        with self._lock:
            self._searches[search.id] = search
        return json_reply(search.status or 200, self._answer(search, True))

    def _run(self, search: _Search) -> None:
        target = f"/{search.index}/_search" if search.index else "/_search"
        if search.params:
            target += "?" + urllib.parse.urlencode(search.params)
        request = urllib.request.Request(
            self._base + target,
            data=search.body or b"{}",
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                status, body = answer.status, answer.read()
        except urllib.error.HTTPError as failed:
            status, body = failed.code, failed.read()
        search.answer = json.loads(body) if body else {}
        search.completed = int(time.time() * 1000)
        search.status = status

    def _read(self, async_id: str, params: dict[str, str], *, status: bool) -> Reply:
        with self._lock:
            search = self._searches.get(async_id)
            if search is not None and "keep_alive" in params:
                now = int(time.time() * 1000)
                search.expires = now + _millis(params["keep_alive"], _FIVE_DAYS_MS)
        if search is None:
            return _missing(async_id)
        if status:
            body = self._answer(search, True)
            response = body.pop("response", None) or {}
            if "_shards" in response:
                body["_shards"] = response["_shards"]
            if not search.running:
                body["completion_status"] = search.status
            body.pop("error", None)
            return json_reply(200, body)
        return json_reply(search.status or 200, self._answer(search, True))

    def _answer(self, search: _Search, kept: bool) -> dict[str, Any]:
        body: dict[str, Any] = {"id": search.id} if kept else {}
        failed = search.status is not None and search.status != 200
        answer = search.answer if isinstance(search.answer, dict) else {}
        shards = answer.get("_shards", {})
        body.update(
            is_partial=search.running or failed or bool(shards.get("failed")),
            is_running=search.running,
            start_time_in_millis=search.started,
            expiration_time_in_millis=search.expires,
        )
        if search.running:
            body["response"] = {
                "took": 0,
                "timed_out": False,
                "num_reduce_phases": 0,
                "_shards": {"total": 1, "successful": 0, "skipped": 0, "failed": 0},
                "hits": {"total": {"value": 0, "relation": "gte"}, "max_score": None,
                         "hits": []},
            }  # fmt: skip
            return body
        body["completion_time_in_millis"] = search.completed
        if failed:
            body["error"] = answer.get("error", {"type": "exception", "reason": "failed"})
        else:
            body["response"] = answer
        return body


def _missing(async_id: str) -> Reply:
    if not _ID.fullmatch(async_id):  # not an id this cluster made: it cannot decode it
        cause = {"type": "illegal_argument_exception", "reason": f"invalid id: [{async_id}]"}
        return json_reply(400, error_body(400, cause))
    cause = {"type": "resource_not_found_exception", "reason": async_id}
    return json_reply(404, error_body(404, cause))
