"""FaultProxy against a stub upstream: forwarding, injected faults, clean shutdown."""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from elastic_transport import ConnectionError as TransportConnectionError
from elasticsearch import ApiError, Elasticsearch

from esmapper.bulk import BulkAction, BulkWriter
from esmapper.testing.faults import FaultProxy


class _Upstream(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    received: list[tuple[str, str, bytes]]

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _answer(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        type(self).received.append((self.command, self.path, body))
        if self.path.split("?")[0].endswith("/_bulk"):
            items = []
            lines = [line for line in body.split(b"\n") if line]
            i = 0
            while i < len(lines):
                meta = json.loads(lines[i])
                op, params = next(iter(meta.items()))
                items.append({op: {"_index": params["_index"], "_id": params.get("_id"),
                                   "status": 201, "result": "created"}})  # fmt: skip
                i += 1 if op == "delete" else 2
            out = json.dumps({"took": 1, "errors": False, "items": items}).encode()
        else:
            out = json.dumps({"path": self.path}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Elastic-Product", "Elasticsearch")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(out)

    do_GET = do_POST = do_PUT = do_HEAD = _answer


@pytest.fixture
def upstream() -> Iterator[tuple[str, list[tuple[str, str, bytes]]]]:
    handler = type("Handler", (_Upstream,), {"received": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler.received  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _get(url: str, path: str, method: str = "GET", body: bytes | None = None) -> tuple[int, Any]:
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.request(method, path, body=body)
        resp = conn.getresponse()
        data = resp.read()
        return resp.status, json.loads(data) if data else None
    finally:
        conn.close()


def test_forwards_and_counts(upstream: tuple[str, list[Any]]) -> None:
    url, received = upstream
    with FaultProxy(url) as proxy:
        assert _get(proxy.url, "/a/_doc/1?x=1") == (200, {"path": "/a/_doc/1?x=1"})
        _get(proxy.url, "/a/_doc/2")
        assert proxy.count(r"^/a/_doc/") == 2
        assert proxy.counts["/a/_doc/1"] == 1
        assert proxy.requests[0].query == "x=1"
    assert len(received) == 2


def test_reply_status_is_not_forwarded_and_is_consumed(upstream: tuple[str, list[Any]]) -> None:
    url, received = upstream
    with FaultProxy(url) as proxy:
        proxy.reply_status(503, times=2, method="GET", path="/x$")
        assert proxy.pending_faults == 2
        assert _get(proxy.url, "/y")[0] == 200  # does not match
        status, body = _get(proxy.url, "/x")
        assert status == 503
        assert body["error"]["type"] == "unavailable_shards_exception"
        assert _get(proxy.url, "/x")[0] == 503
        assert _get(proxy.url, "/x")[0] == 200
        assert proxy.pending_faults == 0
        assert [r.fault for r in proxy.requests] == [None, "status", "status", None]
    assert [r[1] for r in received] == ["/y", "/x"]


def test_injected_bulk_item_failures_are_stripped_and_answered(
    upstream: tuple[str, list[Any]],
) -> None:
    url, received = upstream
    with FaultProxy(url) as proxy:
        client = Elasticsearch(proxy.url)
        proxy.fail_bulk_items([1, 3], status=429)
        writer = BulkWriter(client, max_retries=0)
        actions = [BulkAction("index", "i", str(n), {"n": n}) for n in range(4)]
        actions.append(BulkAction("delete", "i", "d"))
        outcomes = writer.write(actions)
        assert [o.status for o in outcomes] == [201, 429, 201, 429, 201]
        assert outcomes[1].error_type == "es_rejected_execution_exception"
        assert outcomes[3].id == "3"
        (forwarded,) = [r for r in received if "_bulk" in r[1]]
        metas = [json.loads(line) for line in forwarded[2].split(b"\n") if b"_index" in line]
        ids = [next(iter(m.values()))["_id"] for m in metas]
        assert ids == ["0", "2", "d"]
        assert proxy.requests[0].bulk_items == 5
        # every item failed: answered without forwarding
        proxy.fail_bulk_items(10, status=503)
        outcomes = writer.write(actions[:2])
        assert [o.status for o in outcomes] == [503, 503]
        assert len([r for r in received if "_bulk" in r[1]]) == 1
        client.close()


def test_predicate_selects_items(upstream: tuple[str, list[Any]]) -> None:
    url, _ = upstream
    with FaultProxy(url) as proxy:
        client = Elasticsearch(proxy.url)
        proxy.fail_bulk_items(lambda pos, meta: meta["index"]["_id"] == "b", times=1)
        outcomes = BulkWriter(client, max_retries=0).write(
            [BulkAction("index", "i", x, {}) for x in "abc"]
        )
        assert [o.status for o in outcomes] == [201, 429, 201]
        client.close()


def test_drop_connection(upstream: tuple[str, list[Any]]) -> None:
    url, received = upstream
    with FaultProxy(url) as proxy:
        client = Elasticsearch(proxy.url, max_retries=0)
        proxy.drop_connection(times=1, path="/_bulk$")
        with pytest.raises(TransportConnectionError):
            client.bulk(operations=[{"index": {"_index": "i"}}, {}])
        assert received == []
        proxy.drop_connection(after_forwarding=True)
        with pytest.raises(TransportConnectionError):
            client.info()
        assert len(received) == 1
        assert client.info()["path"] == "/"
        client.close()


def test_status_reply_reaches_client_as_api_error(upstream: tuple[str, list[Any]]) -> None:
    url, _ = upstream
    with FaultProxy(url) as proxy:
        client = Elasticsearch(proxy.url, max_retries=0, retry_on_status=())
        proxy.reply_status(429)
        with pytest.raises(ApiError) as info:
            client.info()
        assert info.value.meta.status == 429
        client.close()


def test_stop_interrupts_delays_and_leaves_no_threads(upstream: tuple[str, list[Any]]) -> None:
    url, _ = upstream
    before = set(threading.enumerate())
    proxy = FaultProxy(url)
    proxy.delay(60)
    result: list[Any] = []

    def call() -> None:
        try:
            result.append(_get(proxy.url, "/slow"))
        except Exception as e:
            result.append(e)

    caller = threading.Thread(target=call)
    caller.start()
    deadline = time.monotonic() + 5
    while not proxy.requests and time.monotonic() < deadline:
        time.sleep(0.01)
    started = time.monotonic()
    proxy.stop()
    proxy.stop()  # idempotent
    caller.join(5)
    assert time.monotonic() - started < 5
    assert result and isinstance(result[0], Exception)
    assert not proxy.running
    assert set(threading.enumerate()) <= before


def test_lifetime_stops_the_proxy_by_itself(upstream: tuple[str, list[Any]]) -> None:
    url, _ = upstream
    proxy = FaultProxy(url, lifetime=0.2)
    deadline = time.monotonic() + 5
    while proxy.running and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not proxy.running
    proxy.stop()


def test_rejects_non_http_upstreams() -> None:
    with pytest.raises(ValueError):
        FaultProxy("https://example.invalid:9200")
