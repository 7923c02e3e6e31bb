"""The server's version, read once per mapper (GET /) and kept, unknown kept too."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from elastic_transport import ApiResponseMeta, ConnectionError, HttpHeaders, NodeConfig
from elasticsearch import AuthorizationException

from esmapper._server_version import ServerVersion, parse_version


class _Client:
    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.calls = 0
        self.arrived = threading.Event()
        self.release = threading.Event()
        self.release.set()

    def info(self) -> Any:
        self.calls += 1
        self.arrived.set()
        self.release.wait(10)
        if isinstance(self.answer, Exception):
            raise self.answer
        return type("Response", (), {"body": self.answer})()


def test_versions_are_parsed() -> None:
    assert parse_version("9.1.3") == (9, 1)
    assert parse_version("8.19.0-SNAPSHOT") == (8, 19)
    assert parse_version("serverless") is None and parse_version(None) is None


def test_read_once_and_kept_however_many_threads_ask() -> None:
    client = _Client({"version": {"number": "9.2.0"}})
    client.release.clear()
    version = ServerVersion()
    answers: list[Any] = []
    threads = [
        threading.Thread(target=lambda: answers.append(version.get(client)))  # type: ignore[arg-type]
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    assert client.arrived.wait(10)
    client.release.set()
    for thread in threads:
        thread.join(10)
    assert answers == [(9, 2)] * 4 and client.calls == 1
    assert version.get(client) == (9, 2) and client.calls == 1  # type: ignore[arg-type]


def _forbidden() -> AuthorizationException:
    meta = ApiResponseMeta(403, "1.1", HttpHeaders(), 0.0, NodeConfig("http", "h", 9200))
    return AuthorizationException("security_exception", meta, {"error": "no monitor"})


@pytest.mark.parametrize(
    "answer",
    [_forbidden(), ConnectionError("refused"), {"tagline": "no version here"}],
    ids=["403", "no-answer", "no-number"],
)
def test_an_unknown_version_is_kept_too(answer: Any) -> None:
    client = _Client(answer)
    version = ServerVersion()
    assert version.get(client) is None  # type: ignore[arg-type]
    assert version.get(client) is None and client.calls == 1  # type: ignore[arg-type]
