"""FaultProxy.truncate_response against a stub upstream: the request is applied, the
client gets an incomplete response, an unknown outcome."""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from elastic_transport import ApiError, TransportError
from elasticsearch import Elasticsearch

from esmapper._transport import is_unknown_outcome, once
from esmapper.testing.faults import FaultProxy

Received = list[tuple[str, str]]


class _Upstream(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    received: Received

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _answer(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        type(self).received.append((self.command, self.path))
        out = json.dumps({"path": self.path, "padding": "x" * 100}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Elastic-Product", "Elasticsearch")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    do_GET = do_POST = do_PUT = _answer


@pytest.fixture
def upstream() -> Iterator[tuple[str, Received]]:
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


def test_the_request_is_forwarded_and_the_body_cut_short(upstream: tuple[str, Received]) -> None:
    url, received = upstream
    with FaultProxy(url) as proxy:
        proxy.truncate_response(method="PUT", path=r"^/a/")
        host, port = proxy.url.removeprefix("http://").split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=10)
        try:
            conn.request("PUT", "/a/_doc/1", body=b"{}")
            resp = conn.getresponse()
            assert resp.status == 200
            with pytest.raises(http.client.IncompleteRead) as cut:
                resp.read()
            assert 0 < len(cut.value.partial) < int(resp.getheader("Content-Length") or 0)
        finally:
            conn.close()
        assert received == [("PUT", "/a/_doc/1")]  # applied upstream
        assert [r.fault for r in proxy.requests] == ["truncate"]
        assert proxy.pending_faults == 0


def test_the_client_sees_an_unknown_outcome_and_later_requests_pass(
    upstream: tuple[str, Received],
) -> None:
    url, received = upstream
    with FaultProxy(url) as proxy:
        client = Elasticsearch(proxy.url)
        proxy.truncate_response(path=r"/_aliases$", skip=1)
        assert client.indices.update_aliases(actions=[]).body["path"] == "/_aliases"
        with pytest.raises(TransportError) as caught:
            once(client).indices.update_aliases(actions=[])
        assert is_unknown_outcome(caught.value)
        assert not isinstance(caught.value, ApiError)
        assert len(received) == 2  # the truncated one was applied, and sent once
        assert client.indices.update_aliases(actions=[]).body["path"] == "/_aliases"
        client.close()


def test_a_status_answer_is_not_an_unknown_outcome(upstream: tuple[str, Received]) -> None:
    url, _ = upstream
    with FaultProxy(url) as proxy:
        client = once(Elasticsearch(proxy.url))
        proxy.reply_status(503)
        with pytest.raises(ApiError) as caught:
            client.info()
        assert not is_unknown_outcome(caught.value)
        proxy.drop_connection()
        with pytest.raises(TransportError) as dropped:
            client.info()
        assert is_unknown_outcome(dropped.value)
        client.close()
