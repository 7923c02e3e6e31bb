"""FaultProxy.hold against a stub upstream: the request waits at the proxy until the test
forwards it (applied, answered) or drops it (never applied)."""

from __future__ import annotations

import http.client
import threading

import pytest

from esmapper.testing.faults import FaultProxy

from .test_truncate_response import Received, upstream  # noqa: F401 (the fixture)


def send(proxy: FaultProxy, method: str, path: str, out: list[object]) -> threading.Thread:
    """Send one request from a thread; its status (or the error) is appended to ``out``."""
    host, port = proxy.url.removeprefix("http://").split(":")

    def run() -> None:
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        try:
            conn.request(method, path, body=b"{}")
            response = conn.getresponse()
            response.read()
            out.append(response.status)
        except (OSError, http.client.HTTPException) as exc:
            out.append(exc)
        finally:
            conn.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_a_held_request_waits_until_forwarded(upstream: tuple[str, Received]) -> None:  # noqa: F811
    url, received = upstream
    with FaultProxy(url) as proxy:
        held = proxy.hold(method="PUT", path=r"^/a/", skip=1)
        answers: list[object] = []
        send(proxy, "PUT", "/a/_doc/1", answers).join()  # skipped: passes
        client = send(proxy, "PUT", "/a/_doc/2", answers)
        assert held.wait_arrived(10)
        assert received == [("PUT", "/a/_doc/1")]  # the second one is not forwarded yet
        assert answers == [200] and client.is_alive()

        held.forward()
        client.join(10)
        assert held.wait_done(10) and held.status == 200
        assert answers == [200, 200]
        assert received == [("PUT", "/a/_doc/1"), ("PUT", "/a/_doc/2")]
        assert [r.fault for r in proxy.requests] == [None, "hold"]


def test_a_dropped_request_never_reaches_the_upstream(upstream: tuple[str, Received]) -> None:  # noqa: F811
    url, received = upstream
    with FaultProxy(url) as proxy:
        held = proxy.hold(path=r"^/a/")
        answers: list[object] = []
        client = send(proxy, "PUT", "/a/_doc/1", answers)
        assert held.wait_arrived(10)
        held.drop()
        client.join(10)
        assert held.wait_done(10) and held.status is None
        assert len(answers) == 1 and isinstance(answers[0], Exception)
        send(proxy, "PUT", "/a/_doc/2", answers).join()  # later requests pass
        assert received == [("PUT", "/a/_doc/2")]


def test_stopping_the_proxy_drops_a_held_request(upstream: tuple[str, Received]) -> None:  # noqa: F811
    url, received = upstream
    proxy = FaultProxy(url)
    held = proxy.hold()
    answers: list[object] = []
    client = send(proxy, "GET", "/x", answers)
    assert held.wait_arrived(10)
    proxy.stop()
    client.join(10)
    assert held.wait_done(0) and received == []
    with pytest.raises(RuntimeError, match="stopped"):
        proxy.hold()
