"""The tasks API of a real cluster, in front of a server that keeps no tasks: a standing
rule of :class:`~esmapper.testing.cluster.ClusterProxy` (``real_tasks=True``, the default).

Elasticsearch runs ``_reindex``, ``_update_by_query`` and ``_delete_by_query`` sent with
``wait_for_completion=false`` as tasks: it answers ``{"task": "<node>:<n>"}`` at once and
the work goes on in the background; ``GET /_tasks/<id>`` follows it, ``POST
/_tasks/<id>/_cancel`` stops it, and the result is stored as a document of the ``.tasks``
system index until someone deletes it. The local server (noida-db) answers those requests
synchronously and keeps no task. :class:`RealTasks` emulates the cluster:

- A start with ``wait_for_completion=false`` is answered ``{"task": "<node>:<n>"}`` at
  once; the request is then sent upstream without the parameter from a thread of the rule.
  Until that answer came back, ``GET /_tasks/<id>`` says ``"completed": false`` (the
  status counts are 0: the local server cannot tell how far it got); then ``{"completed":
  true, "task": {...}, "response": <the upstream answer>}`` (or ``"error"``), read from the
  stored result: after ``DELETE /.tasks/_doc/<id>`` it answers 404 as Elasticsearch does.
- ``POST /_tasks/<id>/_cancel`` cancels it: a task still waiting (see :meth:`RealTasks.delay`
  and :meth:`RealTasks.hold`) ends without reaching the upstream, one already sent upstream
  ends with what the upstream did, marked ``"canceled": "by user request"``. Cancelling a
  task that is not running answers 200 with ``node_failures`` (``resource_not_found``).
- ``GET /_tasks?actions=...&detailed=...`` lists the running ones, with their
  ``X-Opaque-Id`` header; a request sent with ``wait_for_completion=true`` is listed while
  it runs too (Elasticsearch runs every request as a task), and waits like a task.
- ``GET``/``DELETE /.tasks/_doc/<id>`` read and delete the stored results (with the
  deprecation warning Elasticsearch 8 sends for direct access to a system index).
- ``GET /`` names a real build (noida-db's ``build_hash`` tells esmapper it keeps no tasks).

What a test sees and scripts: :attr:`RealTasks.started` (tasks started), :attr:`runs`
(by-query and reindex requests run, tasks or not), :attr:`descriptions` (what each was),
:attr:`peak` (most running at once), :attr:`cancels`, :attr:`stored` (results not
deleted); :meth:`delay` and :meth:`hold` make
the next runs slow, :meth:`report_conflicts` makes their answers report version conflicts
(another writer), :meth:`forbid_results` refuses access to ``.tasks`` (a user without
access to system indices). To lose the answer of a start after the task started, script
``drop_connection(after_forwarding=True, path=...)`` on the proxy.
"""

from __future__ import annotations

import fnmatch
import json
import re
import threading
import time
import urllib.parse
from collections.abc import Callable
from typing import Any, Final

import attrs

from esmapper.testing._rules import JSON_HEADERS, Exchange, Reply, error_body, json_reply

__all__ = ["Gate", "RealTasks"]

Forward = Callable[[str, str, dict[str, str], bytes], tuple[int, list[tuple[str, str]], bytes]]

NODE: Final = "tGJ3lNsXQ2uRk0vZp8eFaw"
_BUILD_HASH: Final = "8b0b1f23fbebecc3c88e4464319dea8989f374fd"
_ACTIONS: Final = {
    "_reindex": ("indices:data/write/reindex", "reindex"),
    "_update_by_query": ("indices:data/write/update/byquery", "update-by-query"),
    "_delete_by_query": ("indices:data/write/delete/byquery", "delete-by-query"),
}
_RUN = re.compile(r"^/_reindex$|^/[^_][^/]*/(_update_by_query|_delete_by_query)$")
_TASK = re.compile(r"^/_tasks/([^/]+)$")
_CANCEL = re.compile(r"^/_tasks/([^/]+)/_cancel$")
_RESULT = re.compile(r"^/\.tasks/_doc/([^/]+)$")
_SYSTEM_INDEX_WARNING: Final = (
    "Warning",
    '299 Elasticsearch-8.15.3 "this request accesses system indices: [.tasks], but in a '
    'future major version, direct access to system indices will be prevented by default"',
)
_COUNTS: Final = ("total", "updated", "created", "deleted", "batches", "version_conflicts", "noops")


class Gate:
    """A hold on one run (:meth:`RealTasks.hold`): it waits at the proxy until
    :meth:`release` (or a cancel of its task, or the proxy stopping)."""

    def __init__(self) -> None:
        self._reached = threading.Event()
        self._released = threading.Event()

    def release(self) -> None:
        """Let the run go upstream."""
        self._released.set()

    def wait_reached(self, timeout: float = 30.0) -> bool:
        """Wait until the run waits at the gate; whether it did within ``timeout``."""
        return self._reached.wait(timeout)


@attrs.define(slots=True)
class _Run:
    """One by-query/reindex request: an emulated task, or a synchronous request."""

    number: int
    action: str
    description: str
    headers: dict[str, str]
    is_task: bool
    started_ms: int
    started_ns: int
    delay: float = 0.0
    gate: Gate | None = None
    conflicts: int = 0
    cancelled: threading.Event = attrs.field(factory=threading.Event)
    done: threading.Event = attrs.field(factory=threading.Event)
    response: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    stored: bool = False

    @property
    def id(self) -> str:
        return f"{NODE}:{self.number}"

    def info(self, *, detailed: bool = True) -> dict[str, Any]:
        """The task's ``TaskInfo`` as Elasticsearch shows it."""
        info: dict[str, Any] = {
            "node": NODE,
            "id": self.number,
            "type": "transport",
            "action": self.action,
        }
        if detailed:
            counts = self.response or {}
            status: dict[str, Any] = {k: int(counts.get(k) or 0) for k in _COUNTS}
            status |= {
                "retries": {"bulk": 0, "search": 0},
                "throttled_millis": 0,
                "requests_per_second": -1.0,
                "throttled_until_millis": 0,
            }
            if self.cancelled.is_set():
                status["canceled"] = "by user request"
            info["status"] = status
            info["description"] = self.description
        info |= {
            "start_time_in_millis": self.started_ms,
            "running_time_in_nanos": time.monotonic_ns() - self.started_ns,
            "cancellable": True,
            "cancelled": self.cancelled.is_set(),
            "headers": self.headers,
        }
        return info

    def result(self) -> dict[str, Any]:
        """The stored ``TaskResult`` (the ``.tasks`` document's source)."""
        body: dict[str, Any] = {"completed": True, "task": self.info()}
        if self.error is not None:
            body["error"] = self.error
        else:
            body["response"] = self.response or {}
        return body


class RealTasks:
    """The rule (see the module docstring); ``forward(method, target, headers, body)``
    sends a request upstream (the proxy's own forwarding)."""

    def __init__(self, forward: Forward) -> None:
        self._forward = forward
        self._lock = threading.Lock()
        self._runs: dict[int, _Run] = {}
        self._threads: list[threading.Thread] = []
        self._stopping = threading.Event()
        self._idle = threading.Condition(self._lock)
        self._delays: list[float] = []
        self._gates: list[Gate] = []
        self._conflicts: list[int] = []
        self._forbidden = False
        self._running = 0
        self.started = 0
        """Tasks started (requests with ``wait_for_completion=false``)."""
        self.runs = 0
        """By-query and reindex requests run (tasks and synchronous ones)."""
        self.peak = 0
        """The most runs running at once."""
        self.cancels = 0
        """Cancels accepted (of a running task)."""

    # -- scripting and observation -----------------------------------------------------

    def delay(self, seconds: float, *, times: int = 1) -> None:
        """The next ``times`` runs wait ``seconds`` before going upstream (a cancel of
        the task ends the wait: it then ends without running)."""
        with self._lock:
            self._delays.extend([seconds] * times)

    def hold(self) -> Gate:
        """The next run waits at the returned gate until it is released."""
        gate = Gate()
        with self._lock:
            self._gates.append(gate)
        return gate

    def report_conflicts(self, conflicts: int, *, times: int = 1) -> None:
        """The answers of the next ``times`` runs report ``conflicts`` more version
        conflicts (documents another writer changed while it ran: not written)."""
        with self._lock:
            self._conflicts.extend([conflicts] * times)

    def forbid_results(self, forbidden: bool = True) -> None:
        """Answer 403 to ``GET``/``DELETE /.tasks/_doc/<id>`` (a user without access to
        system indices), or stop doing so."""
        with self._lock:
            self._forbidden = forbidden

    @property
    def descriptions(self) -> list[str]:
        """What each run was, in order (``reindex from [a] to [b]``,
        ``update-by-query [index]{query}``...), as the task's description says."""
        with self._lock:
            return [run.description for run in self._runs.values()]

    @property
    def stored(self) -> int:
        """Results stored in ``.tasks`` and not deleted."""
        with self._lock:
            return sum(1 for run in self._runs.values() if run.stored)

    @property
    def running(self) -> int:
        """Runs running now (waiting included)."""
        with self._lock:
            return self._running

    def wait_idle(self, timeout: float = 30.0) -> bool:
        """Wait until no run is running; whether that happened within ``timeout``."""
        end = time.monotonic() + timeout
        with self._idle:
            while self._running:
                left = end - time.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(left)
        return True

    def close(self) -> None:
        """End every wait (the waiting runs end cancelled) and join the task threads."""
        self._stopping.set()
        with self._lock:
            threads = list(self._threads)
            for gate in self._gates:
                gate.release()
        for thread in threads:
            thread.join(timeout=60)

    # -- the rule ----------------------------------------------------------------------

    def before(self, exchange: Exchange) -> Reply | None:
        path = urllib.parse.unquote(exchange.path)
        method = exchange.method
        if method == "POST" and _RUN.search(path):
            return self._start(exchange)
        for pattern, verb, answer in (
            (_CANCEL, "POST", self._cancel),
            (_TASK, "GET", self._get),
            (_RESULT, "GET", self._read_result),
            (_RESULT, "DELETE", self._delete_result),
        ):
            found = pattern.match(path)
            if found and method == verb:
                run = self._ours(found.group(1))
                if run is not None or found.group(1).startswith(f"{NODE}:"):
                    return answer(found.group(1), run)
        return None

    def after(self, exchange: Exchange, reply: Reply) -> Reply:
        if exchange.method != "GET" or reply.status != 200:
            return reply
        if exchange.path in ("", "/"):
            body = reply.json()
            if isinstance(body, dict) and isinstance(body.get("version"), dict):
                body["version"]["build_hash"] = _BUILD_HASH
                return json_reply(200, body)
        if exchange.path.rstrip("/") == "/_tasks":
            return self._listed(exchange, reply)
        return reply

    # -- runs --------------------------------------------------------------------------

    def _ours(self, task_id: str) -> _Run | None:
        node, _, number = task_id.partition(":")
        if node != NODE or not number.isdigit():
            return None
        with self._lock:
            return self._runs.get(int(number))

    def _start(self, exchange: Exchange) -> Reply:
        # Answered here: the exchange, without the parameter, is only what goes upstream.
        is_task = exchange.params.pop("wait_for_completion", None) == "false"
        endpoint = exchange.path.rsplit("/", 1)[-1]
        action, name = _ACTIONS[endpoint]
        opaque = [v for k, v in exchange.headers.items() if k.lower() == "x-opaque-id"]
        with self._lock:
            number = len(self._runs) + 1
            run = _Run(
                number,
                action,
                _describe(name, exchange),
                {"X-Opaque-Id": opaque[0]} if opaque else {},
                is_task,
                int(time.time() * 1000),
                time.monotonic_ns(),
                delay=self._delays.pop(0) if self._delays else 0.0,
                gate=self._gates.pop(0) if self._gates else None,
                conflicts=self._conflicts.pop(0) if self._conflicts else 0,
            )
            self._runs[number] = run
            self.runs += 1
            self.started += is_task
            self._running += 1
            self.peak = max(self.peak, self._running)
        request = (exchange.target, dict(exchange.headers), exchange.body)
        if not is_task:
            return self._execute(run, *request)
        thread = threading.Thread(
            target=self._execute, args=(run, *request), name=f"task {run.id}", daemon=True
        )
        with self._lock:
            self._threads.append(thread)
        thread.start()
        return json_reply(200, {"task": run.id})

    def _wait(self, run: _Run) -> bool:
        """Wait as scripted; ``False`` when the run was cancelled (or the proxy stops)
        meanwhile: it must not go upstream."""
        if run.gate is not None:
            run.gate._reached.set()
            while not run.gate._released.wait(0.05):
                if run.cancelled.is_set() or self._stopping.is_set():
                    return False
        if run.delay > 0:
            end = time.monotonic() + run.delay
            while (left := end - time.monotonic()) > 0:
                if run.cancelled.wait(min(left, 0.05)) or self._stopping.is_set():
                    return False
        return not (run.cancelled.is_set() or self._stopping.is_set())

    def _execute(self, run: _Run, target: str, headers: dict[str, str], body: bytes) -> Reply:
        """Run ``run`` upstream (after its wait) and record how it ended; the answer."""
        try:
            if not self._wait(run):
                run.response = {**dict.fromkeys(_COUNTS, 0), "failures": []}
                run.response["canceled"] = "by user request"
                return json_reply(200, run.response)
            try:
                status, reply_headers, data = self._forward("POST", target, headers, body)
            except OSError as exc:
                status, reply_headers = 502, list(JSON_HEADERS)
                data = json.dumps({"error": {"type": "upstream", "reason": str(exc)}}).encode()
            answer = Reply(status, data).json()
            if isinstance(answer, dict) and run.conflicts:
                answer["version_conflicts"] = int(answer.get("version_conflicts") or 0)
                answer["version_conflicts"] += run.conflicts
                data = json.dumps(answer).encode()
                reply_headers = list(JSON_HEADERS)
            if isinstance(answer, dict) and (status < 300 or "failures" in answer):
                run.response = answer
                if run.cancelled.is_set():
                    answer["canceled"] = "by user request"
            else:
                error = answer.get("error") if isinstance(answer, dict) else None
                run.error = (
                    error if isinstance(error, dict) else {"type": "upstream", "reason": str(data)}
                )
            return Reply(status, data, reply_headers)
        finally:
            with self._idle:
                run.stored = run.is_task
                run.done.set()
                self._running -= 1
                self._idle.notify_all()

    # -- the tasks API and the stored results ------------------------------------------

    def _get(self, task_id: str, run: _Run | None) -> Reply:
        if run is not None and not run.done.is_set():
            return json_reply(200, {"completed": False, "task": run.info()})
        if run is not None and run.stored:
            return json_reply(200, run.result())
        return _not_found(f"task [{task_id}] isn't running and hasn't stored its results")

    def _cancel(self, task_id: str, run: _Run | None) -> Reply:
        if run is None or run.done.is_set():
            cause = {
                "type": "resource_not_found_exception",
                "reason": f"task [{task_id}] is not found",
            }
            failure = {
                "type": "failed_node_exception",
                "reason": f"Failed node [{NODE}]",
                "node_id": NODE,
                "caused_by": cause,
            }
            return json_reply(200, {"node_failures": [failure], "nodes": {}})
        with self._lock:
            self.cancels += 1
        run.cancelled.set()
        return json_reply(200, {"nodes": {NODE: _node({run.id: run.info(detailed=False)})}})

    def _read_result(self, task_id: str, run: _Run | None) -> Reply:
        if self._forbidden:
            return _forbidden("indices:data/read/get")
        if run is None or not run.stored:
            return _with_warning(404, {"_index": ".tasks", "_id": task_id, "found": False})
        source = run.result()
        found = {"_index": ".tasks", "_id": task_id, "_version": 1, "_seq_no": run.number}
        found |= {"_primary_term": 1, "found": True, "_source": source}
        return _with_warning(200, found)

    def _delete_result(self, task_id: str, run: _Run | None) -> Reply:
        if self._forbidden:
            return _forbidden("indices:data/write/delete")
        gone = run is None or not run.stored
        body = {
            "_index": ".tasks",
            "_id": task_id,
            "_version": 1 if gone else 2,
            "result": "not_found" if gone else "deleted",
            "_shards": {"total": 2, "successful": 1, "failed": 0},
            "_seq_no": 0 if run is None else run.number,
            "_primary_term": 1,
        }
        if run is not None:
            with self._lock:
                run.stored = False
        return _with_warning(404 if gone else 200, body)

    def _listed(self, exchange: Exchange, reply: Reply) -> Reply:
        body = reply.json()
        if not isinstance(body, dict):
            return reply
        patterns = [p for p in exchange.params.get("actions", "*").split(",") if p]
        detailed = exchange.params.get("detailed") == "true"
        with self._lock:
            running = [
                r
                for r in self._runs.values()
                if not r.done.is_set() and any(fnmatch.fnmatchcase(r.action, p) for p in patterns)
            ]
        if not running:
            return reply
        infos = {r.id: r.info(detailed=detailed) for r in running}
        group = exchange.params.get("group_by", "nodes")
        if group == "none":
            body.setdefault("tasks", []).extend(infos.values())
        elif group == "parents":
            body.setdefault("tasks", {}).update(infos)
        else:
            nodes = body.setdefault("nodes", {})
            nodes.setdefault(NODE, _node({}))["tasks"].update(infos)
        return json_reply(200, body)


def _describe(name: str, exchange: Exchange) -> str:
    """The task description Elasticsearch gives (``update-by-query [index]...``)."""
    request = exchange.json() or {}
    if name == "reindex":
        source = (request.get("source") or {}).get("index")
        dest = (request.get("dest") or {}).get("index")
        return f"reindex from [{source}] to [{dest}]"
    query = json.dumps(request.get("query") or {"match_all": {}}, separators=(",", ":"))
    return f"{name} [{exchange.index_part}]{query}"


def _node(tasks: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": "esmapper-cluster-proxy",
        "transport_address": "127.0.0.1:9300",
        "host": "127.0.0.1",
        "ip": "127.0.0.1:9300",
        "roles": ["data", "ingest", "master"],
        "attributes": {},
        "tasks": tasks,
    }


def _not_found(reason: str) -> Reply:
    error = {"type": "resource_not_found_exception", "reason": reason}
    return json_reply(404, error_body(404, error))


def _forbidden(action: str) -> Reply:
    error = {
        "type": "security_exception",
        "reason": f"action [{action}] is unauthorized for user [app] with effective roles "
        "[app] on restricted indices [.tasks], this action is granted by the index "
        "privileges [all]",
    }
    return json_reply(403, error_body(403, error))


def _with_warning(status: int, body: dict[str, Any]) -> Reply:
    return Reply(status, json.dumps(body).encode(), [*JSON_HEADERS, _SYSTEM_INDEX_WARNING])
