"""A fault-injecting HTTP proxy for testing retry and partial-failure handling.

:class:`FaultProxy` listens on 127.0.0.1, forwards every request to an upstream
Elasticsearch (or ES-compatible) URL and can be scripted to misbehave for the next N
matching requests::

    from esmapper.testing.faults import FaultProxy

    with FaultProxy("http://127.0.0.1:9200") as proxy:
        client = Elasticsearch(proxy.url)
        proxy.reply_status(429, times=2, path=r"/_bulk$")  # whole request rejected, not forwarded
        proxy.fail_bulk_items(3, times=1)       # first 3 items of the next bulk -> item 429
        proxy.drop_connection(times=1)          # close the socket without answering
        proxy.drop_connection(after_forwarding=True)  # forward, then drop the response
        proxy.truncate_response(path=r"/_aliases$")  # forward, then send half the response
        proxy.delay(5.0)                        # hold the next request (client timeouts)
        held = proxy.hold(method="PUT", path=r"/_create/", skip=9)  # hold the 10th create
        held.wait_arrived(30)                   # ...until it reaches the proxy
        held.forward()                          # then forward it (or held.drop())
        ...
        assert proxy.count(r"/_bulk$") == 4

Injected bulk item failures are real: the chosen items are removed from the request before
it is forwarded, so they are *not* applied, and a synthetic item error (``status`` 429 with
``es_rejected_execution_exception``, or 503 with ``unavailable_shards_exception``) is put
in the response at the item's position. A truncated response
(:meth:`FaultProxy.truncate_response`) is sent with the full ``Content-Length`` but only
part of its body before the connection is closed: the request was applied, the client sees
an incomplete, unreadable response (an unknown outcome, like a response dropped after
forwarding). A held request (:meth:`FaultProxy.hold`) waits at the proxy, not forwarded,
until the test forwards or drops it: the client is blocked at a known point (e.g. to kill
it there) and the test decides whether that request reaches the server. Faults are
consumed in the order they were scripted; each request takes the first pending fault that
matches it. Every scripting method takes ``skip=N`` to let the first N matching requests
through before the fault starts. ``path`` filters are regular expressions searched in the
request path (without the query string), ``method`` filters are exact (``"POST"``).

The proxy uses only the standard library (``http.server`` threads, ``http.client``
upstream connections, no keep-alive upstream). It is bounded: it stops by itself after
``lifetime`` seconds, request bodies over ``max_body`` bytes are refused with 413, idle
client connections time out, and :meth:`FaultProxy.stop` (also the context manager exit)
closes open connections, interrupts delays and joins every thread it started.
"""

from __future__ import annotations

import contextlib
import gzip
import http.client
import json
import socket
import threading
import urllib.parse
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from typing_extensions import Self

from esmapper.testing._fault_plans import (
    ITEM_ERRORS,
    Fault,
    FaultKind,
    HeldRequest,
    ItemSelector,
    RequestRecord,
    compile_path,
    item_error,
    merge_items,
    parse_bulk,
    request_matches,
    select_items,
    take_next,
)
from esmapper.testing._rules import JSON_HEADERS, Exchange, Reply, Rule, error_body

__all__ = ["FaultProxy", "HeldRequest", "RequestRecord"]

_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
        "accept-encoding",
    }
)


_NO_FAULT = Fault(None, 0, None, None)  # taken by a request no scripted fault matches


class _Server(ThreadingHTTPServer):
    daemon_threads = False
    block_on_close = True
    proxy: FaultProxy


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 30.0  # idle keep-alive connections end by themselves
    # The status line and headers go out before the body: with Nagle's algorithm the body
    # waited for the client's delayed ACK, about 40 ms per request with a body.
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default stderr access log."""

    def setup(self) -> None:
        super().setup()
        self.server.proxy._register(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.proxy._unregister(self.connection)

    def _handle(self) -> None:
        self.server.proxy._handle(self)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = do_OPTIONS = _handle


class FaultProxy:
    """A scripted, fault-injecting HTTP proxy in front of ``upstream`` (see the module doc).

    The proxy starts listening when constructed; use it as a context manager or call
    :meth:`stop`. ``url`` is its address (``http://127.0.0.1:<port>``).
    """

    def __init__(
        self,
        upstream: str,
        *,
        port: int = 0,
        lifetime: float = 600.0,
        upstream_timeout: float = 60.0,
        max_body: int = 256 * 1024 * 1024,
    ) -> None:
        parsed = urllib.parse.urlsplit(upstream)
        if parsed.scheme != "http" or not parsed.hostname:
            raise ValueError(f"FaultProxy forwards to http:// URLs only, not {upstream!r}")
        self.upstream = upstream
        self._up_host = parsed.hostname
        self._up_port = parsed.port or 80
        self._up_prefix = parsed.path.rstrip("/")
        self.upstream_timeout = upstream_timeout
        self.max_body = max_body
        self._lock = threading.Lock()
        self._faults: list[Fault] = []
        self._held: list[HeldRequest] = []
        self._rules: list[Rule] = []
        self._records: list[RequestRecord] = []
        self._conns: set[socket.socket] = set()
        self._stopping = threading.Event()
        self._stopped = False
        self._server = _Server(("127.0.0.1", port), _Handler)
        self._server.proxy = self
        host, bound_port = self._server.server_address[:2]
        self.url = f"http://{host!s}:{bound_port}"
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"FaultProxy:{bound_port}",
            daemon=True,
        )
        self._thread.start()
        self._timer = threading.Timer(lifetime, self.stop)
        self._timer.daemon = True
        self._timer.start()

    # -- lifecycle ----------------------------------------------------------------------

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop listening, close open connections and join all threads (idempotent)."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            conns = list(self._conns)
        self._stopping.set()
        for held in self._held:
            held.drop()
        self._timer.cancel()
        self._server.shutdown()
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        self._server.server_close()  # joins the handler threads
        self._thread.join()
        if self._timer is not threading.current_thread():
            self._timer.join()

    @property
    def running(self) -> bool:
        """Whether the proxy still accepts requests."""
        return not self._stopped

    # -- scripting ----------------------------------------------------------------------

    def reply_status(
        self,
        status: int = 429,
        *,
        times: int = 1,
        method: str | None = None,
        path: str | None = None,
        body: Any = None,
        skip: int = 0,
    ) -> None:
        """Answer the next ``times`` matching requests with ``status`` without forwarding.

        ``body`` (JSON-serializable) defaults to an Elasticsearch error object.
        """
        if body is None:
            etype = ITEM_ERRORS.get(status, "injected_exception")
            reason = f"injected by FaultProxy (status {status})"
            body = error_body(status, {"type": etype, "reason": reason})
        self._add(
            "status", times, method, path, skip, status=status, body=json.dumps(body).encode()
        )

    def fail_bulk_items(
        self,
        items: ItemSelector = 1,
        *,
        status: int = 429,
        times: int = 1,
        path: str | None = r"/_bulk$",
        skip: int = 0,
    ) -> None:
        """Fail chosen items of the next ``times`` bulk requests with an item ``status``.

        ``items`` is a count (the first K items), a collection of 0-based positions, or a
        predicate ``(position, action_line_dict) -> bool``. The chosen items are removed
        from the forwarded request (so not applied) and answered with a synthetic error.
        """
        self._add("items", times, "POST", path, skip, status=status, items=items)

    def drop_connection(
        self,
        *,
        times: int = 1,
        method: str | None = None,
        path: str | None = None,
        after_forwarding: bool = False,
        skip: int = 0,
    ) -> None:
        """Close the connection without a response for the next ``times`` matching requests.

        With ``after_forwarding`` the request is forwarded (and applied) first and the
        response thrown away: the client cannot tell whether its writes happened.
        """
        self._add("drop", times, method, path, skip, after_forwarding=after_forwarding)

    def truncate_response(
        self,
        *,
        times: int = 1,
        method: str | None = None,
        path: str | None = None,
        skip: int = 0,
    ) -> None:
        """Forward the next ``times`` matching requests (so they are applied), then answer
        with the upstream's status, headers and full ``Content-Length`` but only the first
        half of the body (nothing of a body under 2 bytes), and close the connection: the
        client gets an incomplete response and cannot tell what happened."""
        self._add("truncate", times, method, path, skip)

    def delay(
        self,
        seconds: float,
        *,
        times: int = 1,
        method: str | None = None,
        path: str | None = None,
        skip: int = 0,
    ) -> None:
        """Hold the next ``times`` matching requests for ``seconds`` before forwarding."""
        self._add("delay", times, method, path, skip, seconds=seconds)

    def hold(
        self, *, method: str | None = None, path: str | None = None, skip: int = 0
    ) -> HeldRequest:
        """Hold the next matching request at the proxy until the returned handle's
        :meth:`HeldRequest.forward` or :meth:`HeldRequest.drop` (or :meth:`stop`)."""
        held = HeldRequest()
        with self._lock:
            if self._stopped:
                raise RuntimeError("the proxy is stopped")
            self._held.append(held)
        self._add("hold", 1, method, path, skip, held=held)
        return held

    def add_rule(self, rule: Rule) -> None:
        """Apply ``rule`` to every request from now on (see :mod:`esmapper.testing._rules`);
        rules run in the order they were added."""
        with self._lock:
            self._rules.append(rule)

    def remove_rule(self, rule: Rule) -> None:
        """Stop applying ``rule``."""
        with self._lock:
            self._rules.remove(rule)

    def clear_faults(self) -> None:
        """Forget every fault not yet consumed."""
        with self._lock:
            self._faults.clear()

    @property
    def pending_faults(self) -> int:
        """How many injections are still scripted (the sum of their remaining ``times``)."""
        with self._lock:
            return sum(f.remaining for f in self._faults)

    # -- observation --------------------------------------------------------------------

    @property
    def requests(self) -> list[RequestRecord]:
        """Every request received so far, in arrival order (a copy)."""
        with self._lock:
            return list(self._records)

    @property
    def counts(self) -> Counter[str]:
        """Number of requests seen per path (without the query string)."""
        with self._lock:
            return Counter(r.path for r in self._records)

    def count(self, path: str | None = None, method: str | None = None) -> int:
        """Number of requests whose path matches the regex ``path`` (and ``method``)."""
        pattern = compile_path(path)
        with self._lock:
            return sum(
                1 for r in self._records if request_matches(method, pattern, r.method, r.path)
            )

    def reset_counts(self) -> None:
        """Forget the requests seen so far."""
        with self._lock:
            self._records.clear()

    # -- internals ----------------------------------------------------------------------

    def _add(
        self,
        kind: FaultKind,
        times: int,
        method: str | None,
        path: str | None,
        skip: int,
        **details: Any,
    ) -> None:
        if times < 1:
            raise ValueError("times must be at least 1")
        fault = Fault(kind, times, method, compile_path(path), skip=skip, **details)
        with self._lock:
            self._faults.append(fault)

    def _register(self, conn: socket.socket) -> None:
        with self._lock:
            self._conns.add(conn)

    def _unregister(self, conn: socket.socket) -> None:
        with self._lock:
            self._conns.discard(conn)

    def _handle(self, h: _Handler) -> None:
        method = h.command
        path, _, query = h.path.partition("?")
        length = int(h.headers.get("Content-Length") or 0)
        if length > self.max_body or "chunked" in h.headers.get("Transfer-Encoding", ""):
            h.close_connection = True
            self._reply(h, 413, b'{"error":"request body too large or chunked","status":413}')
            return
        body = h.rfile.read(length) if length else b""
        headers = {k: v for k, v in h.headers.items() if k.lower() not in _HOP_BY_HOP}
        if h.headers.get("Content-Encoding", "").lower() == "gzip" and body:
            body = gzip.decompress(body)
            headers = {k: v for k, v in headers.items() if k.lower() != "content-encoding"}
        is_bulk = path.endswith("/_bulk")
        lines = parse_bulk(body) if is_bulk else None
        with self._lock:
            fault = take_next(self._faults, method, path) or _NO_FAULT
        kind = fault.kind
        bulk_items = len(lines) if lines is not None else None
        record = RequestRecord(method, path, query, len(body), bulk_items, kind)
        with self._lock:
            self._records.append(record)

        if kind == "delay" and self._stopping.wait(fault.seconds):
            h.close_connection = True  # stopped while holding the request
            return
        if fault.held is not None:
            self._hold(h, fault.held, method, headers, body)
            return
        if kind == "status":
            self._reply(h, fault.status, fault.body or b"")
            return
        if kind == "drop" and not fault.after_forwarding:
            self._drop(h)
            return

        failed: dict[int, dict[str, Any]] = {}
        if kind == "items" and lines is not None:
            chosen = select_items(fault.items, lines)
            default_index = path.rsplit("/_bulk", 1)[0].strip("/") or None
            for pos in chosen:
                failed[pos] = item_error(lines[pos][0], fault.status, default_index)
            body = b"".join(
                b"".join(raw) for pos, (_, raw) in enumerate(lines) if pos not in failed
            )
            if lines and len(failed) == len(lines):
                items = [failed[p] for p in range(len(lines))]
                self._reply(h, 200, json.dumps({"took": 0, "errors": True, "items": items}))
                return

        with self._lock:
            rules = list(self._rules)
        exchange = None
        target = h.path
        if rules:
            params = dict(urllib.parse.parse_qsl(query, keep_blank_values=True))
            exchange = Exchange(method, path, params, body, headers)
            for rule in rules:
                made = rule.before(exchange)
                if made is not None:  # the rule answered: it applied the request itself
                    if kind == "drop":  # (after forwarding)
                        self._drop(h)
                    elif kind == "truncate":
                        self._truncate(h, made.status, made.body, made.headers or JSON_HEADERS)
                    else:
                        self._reply(h, made.status, made.body, made.headers)
                    return
            target, body = exchange.target, exchange.body
        try:
            status, resp_headers, resp_body = self._forward(method, target, headers, body)
        except OSError as e:
            self._reply(h, 502, json.dumps({"error": f"upstream: {e}", "status": 502}))
            return
        if exchange is not None:
            reply = Reply(status, resp_body, resp_headers)
            for rule in rules:
                reply = rule.after(exchange, reply)
            if reply.body is not resp_body:  # rewritten: the upstream's length is gone
                resp_headers = [
                    (k, v)
                    for k, v in (reply.headers or JSON_HEADERS)
                    if k.lower() != "content-length"
                ]
            status, resp_body = reply.status, reply.body
        if kind == "drop":
            self._drop(h)
            return
        if kind == "truncate":
            self._truncate(h, status, resp_body, resp_headers)
            return
        if failed and status == 200:
            resp_body = merge_items(resp_body, failed)
        self._reply(h, status, resp_body, resp_headers, head=method == "HEAD")

    def _hold(
        self, h: _Handler, held: HeldRequest, method: str, headers: dict[str, str], body: bytes
    ) -> None:
        try:
            held._arrived.set()
            held._released.wait()
            if not held._forward or self._stopping.is_set():
                self._drop(h)
                return
            try:
                status, resp_headers, resp_body = self._forward(method, h.path, headers, body)
            except OSError:  # the upstream is gone: status stays None
                self._drop(h)
                return
            held.status = status
            with contextlib.suppress(OSError):  # its client may be gone (killed)
                self._reply(h, status, resp_body, resp_headers, head=method == "HEAD")
        finally:
            held._done.set()

    def _forward(
        self, method: str, target: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        conn = http.client.HTTPConnection(
            self._up_host, self._up_port, timeout=self.upstream_timeout
        )
        try:
            headers = dict(headers)
            headers["Accept-Encoding"] = "identity"
            conn.request(
                method,
                self._up_prefix + target,
                body=body if body or method not in ("GET", "HEAD") else None,
                headers=headers,
            )
            resp = conn.getresponse()
            data = resp.read()
            out = [
                (k, v)
                for k, v in resp.getheaders()
                if k.lower() not in _HOP_BY_HOP and k.lower() != "content-encoding"
            ]
            if method == "HEAD":
                cl = resp.getheader("Content-Length")
                if cl is not None:
                    out.append(("Content-Length", cl))
            return resp.status, out, data
        finally:
            conn.close()

    @staticmethod
    def _reply(
        h: _Handler,
        status: int,
        body: bytes | str,
        headers: list[tuple[str, str]] | None = None,
        *,
        head: bool = False,
    ) -> None:
        data = body.encode() if isinstance(body, str) else body
        h.send_response(status)
        if headers is None:
            headers = JSON_HEADERS
        for k, v in headers:
            h.send_header(k, v)
        if not head:
            h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        if not head and data:
            h.wfile.write(data)

    @staticmethod
    def _truncate(h: _Handler, status: int, body: bytes, headers: list[tuple[str, str]]) -> None:
        h.close_connection = True
        with contextlib.suppress(OSError):
            h.send_response(status)
            for k, v in headers:
                h.send_header(k, v)
            h.send_header("Content-Length", str(len(body)))
            h.end_headers()
            h.wfile.write(body[: len(body) // 2])
            h.wfile.flush()
            h.connection.shutdown(socket.SHUT_RDWR)

    @staticmethod
    def _drop(h: _Handler) -> None:
        h.close_connection = True
        with contextlib.suppress(OSError):
            h.connection.shutdown(socket.SHUT_RDWR)
