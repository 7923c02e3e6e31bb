"""The tasks API's deprecation warnings ("technical preview", the ``.tasks`` system index)
are kept from the caller without touching the process's warning filters: another thread's
warnings are not swallowed while a task request is in flight, and a filter the program sets
meanwhile is not undone."""

from __future__ import annotations

import json
import threading
import warnings
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from elasticsearch import Elasticsearch

from esmapper import _server_tasks

WARNING = '299 Elasticsearch-8.19.0 "[.tasks] is a system index; access will be restricted"'


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        # what the process's filters are while a task request is in flight
        self.server.filters_seen.append(list(warnings.filters))
        if self.path.startswith("/_tasks"):
            body: dict[str, Any] = {"nodes": {}}
        else:
            body = {"version": {"number": "8.19.0", "build_hash": "abc"}, "tagline": "x"}
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Elastic-Product", "Elasticsearch")
        if self.path.startswith("/_tasks"):
            self.send_header("Warning", WARNING)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    filters_seen: list[list[Any]]


@pytest.fixture
def client() -> Iterator[Elasticsearch]:
    server = _Server(("127.0.0.1", 0), _Handler)
    server.filters_seen = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    es = Elasticsearch(f"http://127.0.0.1:{server.server_address[1]}")
    es.server = server  # type: ignore[attr-defined]
    try:
        yield es
    finally:
        es.close()
        server.shutdown()
        server.server_close()


def test_task_requests_leave_the_warning_filters_alone(client: Elasticsearch) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mine = list(warnings.filters)
        assert _server_tasks.has_tasks(client) is True
        seen = client.server.filters_seen  # type: ignore[attr-defined]
        assert seen and all(filters == mine for filters in seen)
        assert warnings.filters == mine
    assert [str(w.message) for w in caught] == []  # the server's warning was not shown
    # the client still shows a warning of a request esmapper did not send itself
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        client.tasks.list()
    assert any("system index" in str(w.message) for w in caught)
