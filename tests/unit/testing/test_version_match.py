"""The client and the server must share a major version: the test servers say so at start,
with the pip command that fixes it, and Docker runs the image of the client's major."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import elasticsearch
import pytest

from esmapper.testing import ExternalServer, ServerStartError
from esmapper.testing.base import version_mismatch
from esmapper.testing.docker import DEFAULT_IMAGE, IMAGES

CLIENT_MAJOR = elasticsearch.VERSION[0]


def serve(root: dict[str, Any]) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = {"status": "green"} if self.path.startswith("/_cluster/health") else root
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def other_major() -> Iterator[str]:
    other = 8 if CLIENT_MAJOR == 9 else 9
    yield from serve({"version": {"number": f"{other}.1.0", "build_hash": "abc"}})


@pytest.fixture
def same_major() -> Iterator[str]:
    yield from serve({"version": {"number": f"{CLIENT_MAJOR}.1.0", "build_hash": "abc"}})


def test_another_major_is_refused_at_start_with_the_remedy(other_major: str) -> None:
    reason = version_mismatch(other_major)
    assert reason is not None and "the major versions must match" in reason
    assert "pip install 'elasticsearch>=" in reason
    with pytest.raises(ServerStartError, match=r"ESMAPPER_TEST_URL: .* major versions must match"):
        ExternalServer(other_major).start()


@pytest.mark.parametrize(
    ("client", "server", "remedy"),
    [
        ((9, 5, 1), "8.19.19", "'elasticsearch>=8.18,<9'"),
        ((8, 19, 3), "9.5.2", "'elasticsearch>=9,<10'"),
    ],
)
def test_the_remedy_is_a_requirement_pip_can_meet(
    monkeypatch: pytest.MonkeyPatch, client: tuple[int, ...], server: str, remedy: str
) -> None:
    monkeypatch.setattr(elasticsearch, "VERSION", client)
    for url in serve({"version": {"number": server, "build_hash": "abc"}}):
        reason = version_mismatch(url)
        assert reason is not None and reason.endswith(f"pip install {remedy}")


def test_the_same_major_and_the_local_server_are_accepted(same_major: str) -> None:
    assert version_mismatch(same_major) is None
    assert ExternalServer(same_major).start().url == same_major
    for url in serve({"version": {"number": "8.15.3", "build_hash": "noida"}}):
        assert version_mismatch(url) is None


def test_docker_runs_the_image_of_the_clients_major() -> None:
    assert IMAGES[CLIENT_MAJOR] == DEFAULT_IMAGE
    assert DEFAULT_IMAGE.rsplit(":", 1)[1].startswith(f"{CLIENT_MAJOR}.")
