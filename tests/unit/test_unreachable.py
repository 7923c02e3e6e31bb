"""A server that cannot be connected to is one esmapper error naming the URL and what to
check, and the client's retries log one line each, not a traceback (issue 29, item 12)."""

from __future__ import annotations

import logging
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from elastic_transport import ConnectionError as TransportConnectionError
from elastic_transport import NodeConfig, TransportError, Urllib3HttpNode
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper._transport import NamedTransport, is_unknown_outcome, unreachable

ROOT = Path(__file__).resolve().parents[2]


class Thing(em.Document):
    class Index:
        name = "things"

    n: int = 0


def _closed_port() -> int:
    """A local port nothing listens on (bound, then closed)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def down_url() -> str:
    return f"http://127.0.0.1:{_closed_port()}"


@pytest.mark.parametrize(
    "call", ["get", "get_many", "find", "count", "add", "session", "configure_indexes"]
)
def test_every_call_raises_one_error_naming_the_url(down_url: str, call: str) -> None:
    with em.Mapper(down_url, models=[Thing]) as mapper:
        repo = mapper.repository(Thing)
        calls: dict[str, Callable[[], object]] = {
            "get": lambda: repo.get("x"),
            "get_many": lambda: repo.get_many(["x", "y"]),
            "session": lambda: mapper.session().find(Thing),
            "find": repo.find,
            "count": repo.count,
            "add": lambda: repo.add(Thing(n=1)),
            "configure_indexes": mapper.configure_indexes,
        }
        with pytest.raises(em.ServerUnreachableError) as raised:
            calls[call]()
    error = raised.value
    assert str(error).startswith(
        f"cannot reach Elasticsearch at {down_url}: the connection was refused"
    )
    assert "Check that Elasticsearch is running" in str(error)
    assert (error.urls, error.cause) == ([down_url], "refused")
    # still the client's error: code catching it (and the unknown-outcome rule) unchanged
    assert isinstance(error, TransportConnectionError) and isinstance(error, TransportError)
    assert isinstance(error, em.EsmapperError) and is_unknown_outcome(error)
    assert isinstance(error.__cause__, TransportConnectionError)


def test_a_host_name_that_does_not_resolve() -> None:
    with (
        em.Mapper("http://no-such-host.invalid:9200", models=[Thing]) as mapper,
        pytest.raises(em.ServerUnreachableError) as raised,
    ):
        mapper.repository(Thing).get("x")
    assert raised.value.cause == "unresolved"
    assert "the host name does not resolve (DNS)" in str(raised.value)


def test_a_client_handed_to_the_mapper_keeps_its_own_errors(down_url: str) -> None:
    client = Elasticsearch(down_url)
    with (
        em.Mapper(client, models=[Thing]) as mapper,
        pytest.raises(TransportConnectionError) as raised,
    ):
        mapper.repository(Thing).get("x")
    assert not isinstance(raised.value, em.ServerUnreachableError)
    client.close()


def test_other_connection_errors_are_not_called_unreachable() -> None:
    dropped = TransportConnectionError("Connection aborted: RemoteDisconnected('closed')")
    assert unreachable(dropped) is None
    refused = TransportConnectionError("x", errors=(ConnectionRefusedError(111, "refused"),))
    assert unreachable(refused) == "refused"


def test_each_retry_is_one_warning_line(down_url: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="elastic_transport")
    with em.Mapper(down_url, models=[Thing]) as mapper, pytest.raises(em.ServerUnreachableError):
        mapper.repository(Thing).get("x")
    retries = [r for r in caplog.records if r.getMessage().startswith("Retrying request")]
    assert len(retries) == 3  # the client's default max_retries
    for record in retries:
        assert record.exc_info is None and record.exc_text is None
        assert record.getMessage().endswith(
            "ConnectionRefusedError: [Errno 111] Connection refused"
        )


def test_with_debug_logging_the_tracebacks_stay(
    down_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="elastic_transport")
    with em.Mapper(down_url, models=[Thing]) as mapper, pytest.raises(em.ServerUnreachableError):
        mapper.repository(Thing).get("x")
    retries = [r for r in caplog.records if str(r.msg).startswith("Retrying request")]
    assert retries and all(r.exc_info is not None for r in retries)


def test_a_program_with_logging_configured_sees_no_traceback(down_url: str) -> None:
    program = textwrap.dedent(f"""
        import logging
        import esmapper as em

        logging.basicConfig(level=logging.WARNING)

        class Thing(em.Document):
            n: int = 0

        with em.Mapper({down_url!r}, models=[Thing]) as mapper:
            try:
                mapper.repository(Thing).find()
            except em.ServerUnreachableError as exc:
                print("caught:", exc)
    """)
    done = subprocess.run(
        [sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"caught: cannot reach Elasticsearch at {down_url}")
    assert "Traceback" not in done.stderr
    retries = [line for line in done.stderr.splitlines() if "Retrying request" in line]
    assert len(retries) == 3  # the client's default max_retries, one line each


def test_a_last_attempt_that_connected_is_not_called_unreachable() -> None:
    refused = TransportConnectionError("x", errors=(ConnectionRefusedError(111, "refused"),))
    # the server came back between the attempts: the last one was sent, its answer lost
    dropped = TransportConnectionError(
        "Connection aborted: RemoteDisconnected('closed')", errors=(refused,)
    )
    assert unreachable(dropped) is None
    # and an attempt that was sent before the server went away: the request may be applied
    lost = TransportConnectionError("Connection aborted: RemoteDisconnected('closed')")
    assert unreachable(TransportConnectionError("Connection refused", errors=(lost,))) is None
    twice = TransportConnectionError("[Errno 111] Connection refused", errors=(refused,))
    assert unreachable(twice) == "refused"  # every attempt refused: nothing was sent


class _Dropping:
    """A local server that reads each request and closes the connection unanswered (the
    request reached the server: it may have been applied)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.port = int(self.sock.getsockname()[1])
        self.received = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                if conn.recv(65536):
                    self.received += 1


def test_a_request_sent_then_dropped_after_a_refused_attempt_is_not_unreachable() -> None:
    dropping = _Dropping()
    refused_at, dropped_at = _closed_port(), dropping.port

    class Flaky(Urllib3HttpNode):
        """The first attempt meets a closed port, the next ones the dropping server."""

        calls = 0

        def perform_request(self, *args: Any, **kwargs: Any) -> Any:
            Flaky.calls += 1
            port = refused_at if Flaky.calls == 1 else dropped_at
            node = Urllib3HttpNode(NodeConfig("http", "127.0.0.1", port))
            try:
                return node.perform_request(*args, **kwargs)
            finally:
                node.close()

    transport = NamedTransport(
        [NodeConfig("http", "127.0.0.1", refused_at)], node_class=Flaky, max_retries=1
    )
    with pytest.raises(TransportConnectionError) as raised:
        transport.perform_request(
            "POST", "/things/_doc", body={"n": 1}, headers={"content-type": "application/json"}
        )
    dropping.sock.close()
    assert dropping.received == 1  # the second attempt was sent
    assert not isinstance(raised.value, em.ServerUnreachableError)
    assert is_unknown_outcome(raised.value)


def test_the_users_own_clients_keep_their_retry_tracebacks(
    down_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="elastic_transport")
    with em.Mapper(down_url, models=[Thing]):  # esmapper's clients: one line per retry
        own = Elasticsearch(down_url)  # the program's own client, not esmapper's
        with pytest.raises(TransportConnectionError) as raised:
            own.info()
        own.close()
    assert not isinstance(raised.value, em.ServerUnreachableError)
    retries = [r for r in caplog.records if str(r.msg).startswith("Retrying request")]
    assert len(retries) == 3  # elastic_transport's records as it made them: the traceback
    assert all(r.exc_info is not None and r.getMessage().endswith("of 3)") for r in retries)
