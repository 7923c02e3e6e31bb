"""Shared pieces of the test servers: the handle protocol, the start error, health polling."""

from __future__ import annotations

import base64
import json
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Literal, Protocol

from esmapper.errors import ServerStartError

ServerKind = Literal["local", "url", "docker"]
"""Which Elasticsearch the tests use: the local noida-db binary, a given URL, or Docker."""


class ServerHandle(Protocol):
    """What the pytest plugin needs from a started test server."""

    @property
    def kind(self) -> ServerKind:
        """Which kind of server this is."""
        ...

    @property
    def url(self) -> str:
        """The base URL of the server, e.g. ``http://127.0.0.1:9200``."""
        ...

    def stop(self) -> None:
        """Stop the server (if this handle started it); safe to call more than once."""
        ...


def _health_request(url: str) -> urllib.request.Request:
    """Build ``GET <url>/_cluster/health``, moving ``user:password@`` into a Basic header."""
    parts = urllib.parse.urlsplit(url)
    headers: dict[str, str] = {"Accept": "application/json"}
    if parts.username is not None:
        userinfo = f"{urllib.parse.unquote(parts.username)}:"
        userinfo += urllib.parse.unquote(parts.password or "")
        headers["Authorization"] = "Basic " + base64.b64encode(userinfo.encode()).decode()
        host = parts.hostname or ""
        netloc = f"[{host}]" if ":" in host else host
        if parts.port is not None:
            netloc += f":{parts.port}"
        parts = parts._replace(netloc=netloc)
    base = urllib.parse.urlunsplit(parts).rstrip("/")
    return urllib.request.Request(f"{base}/_cluster/health", headers=headers)


def redact(url: str) -> str:
    """``url`` without its password, for error messages."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    return urllib.parse.urlunsplit(
        parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":***@", 1))
    )


def _get_json(url: str, path: str, timeout: float) -> object:
    request = _health_request(url)
    request.full_url = request.full_url.removesuffix("/_cluster/health") + path
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.load(response)


_LOWEST = {8: "8.18"}
"""The lowest client esmapper supports, per major (any of the others)."""


def version_mismatch(url: str, timeout: float = 5.0) -> str | None:
    """Why the installed elasticsearch client cannot talk to the server at ``url`` (its
    major version is another), or None. The local noida-db server answers every client."""
    import elasticsearch

    try:
        body = _get_json(url, "/", timeout)
    except (OSError, ValueError):
        return None  # the requests that follow will say what is wrong
    version = body.get("version", {}) if isinstance(body, dict) else {}
    number = str(version.get("number", ""))
    major = number.partition(".")[0]
    if version.get("build_hash") == "noida" or not major.isdigit():
        return None
    client = elasticsearch.VERSION
    wanted = int(major)
    if wanted == client[0]:
        return None
    return (
        f"{redact(url)} is Elasticsearch {number} but the elasticsearch client is "
        f"{'.'.join(map(str, client))}: the major versions must match; install the "
        f"client of the server's: pip install 'elasticsearch>={_LOWEST.get(wanted, wanted)},"
        f"<{wanted + 1}'"
    )


def is_healthy(url: str, timeout: float = 2.0) -> bool:
    """Whether ``GET <url>/_cluster/health`` answers 200 with status green or yellow."""
    try:
        with urllib.request.urlopen(_health_request(url), timeout=timeout) as response:
            body = json.load(response)
    except (OSError, ValueError):  # refused, reset, timeout, HTTP error status, bad JSON
        return False
    return isinstance(body, dict) and body.get("status") in {"green", "yellow"}


def wait_for_health(
    url: str,
    timeout: float,
    alive: Callable[[], bool] = lambda: True,
    interval: float = 0.1,
) -> bool:
    """Poll the health endpoint of ``url`` until it is healthy.

    Returns False when ``timeout`` seconds pass first, or as soon as ``alive()`` reports that
    the server process has died.
    """
    deadline = time.monotonic() + timeout
    while alive():
        if is_healthy(url, timeout=min(1.0, max(0.1, deadline - time.monotonic()))):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)
    return False


class ExternalServer:
    """A cluster someone else runs (``ESMAPPER_TEST_URL``): nothing is started or stopped."""

    def __init__(self, url: str, *, startup_timeout: float = 30.0) -> None:
        """Remember ``url``; :meth:`start` only checks that it answers."""
        self._url = url.rstrip("/")
        self._startup_timeout = startup_timeout

    @property
    def kind(self) -> ServerKind:
        """Always ``"url"``."""
        return "url"

    @property
    def url(self) -> str:
        """The URL given to the constructor."""
        return self._url

    def start(self) -> ExternalServer:
        """Wait (bounded) until the cluster answers its health endpoint; raise if it never does."""
        if not wait_for_health(self._url, self._startup_timeout):
            raise ServerStartError(
                f"ESMAPPER_TEST_URL={redact(self._url)} did not answer GET /_cluster/health with "
                f"status green/yellow within {self._startup_timeout:g} s"
            )
        mismatch = version_mismatch(self._url)
        if mismatch is not None:
            raise ServerStartError(f"ESMAPPER_TEST_URL: {mismatch}")
        return self

    def stop(self) -> None:
        """Do nothing: the cluster is not ours."""
