"""The version of the Elasticsearch a mapper talks to, read once when a request's shape
depends on it.

Some request shapes are typed differently across the versions esmapper supports (8.18 and
later 8.x, 9.x): the ``fields`` of a ``highlight`` with two or more fields is an object
keyed by field on 8.18-9.0 and a list of single-key objects from 9.1
(:func:`esmapper.query.highlight.highlight_body`). :class:`ServerVersion` sends ``GET /``
the first time such a request is built, keeps ``version.number`` as ``(major, minor)``
and sends nothing again for that mapper. A server that does not answer it (an error, a
role without the ``monitor`` privilege) is *unknown* (``None``), also kept: callers then
send the form every server accepts, and the failure is logged once.
"""

from __future__ import annotations

import logging
import re
import threading
from typing import Final

from elastic_transport import TransportError
from elasticsearch import ApiError, Elasticsearch

__all__ = ["ServerVersion", "parse_version"]

log = logging.getLogger("esmapper")

_NUMBER: Final = re.compile(r"^\s*(\d+)\.(\d+)")
_UNREAD: Final = object()


def parse_version(number: object) -> tuple[int, int] | None:
    """``(major, minor)`` of a version string such as ``"9.1.3"`` or
    ``"8.19.0-SNAPSHOT"``; ``None`` for anything else."""
    found = _NUMBER.match(number) if isinstance(number, str) else None
    return (int(found.group(1)), int(found.group(2))) if found else None


class ServerVersion:
    """``(major, minor)`` of the server, read with ``GET /`` on the first :meth:`get` and
    kept (thread-safe: one request however many threads ask at once)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._version: object = _UNREAD

    def get(self, client: Elasticsearch) -> tuple[int, int] | None:
        """The server's ``(major, minor)``, ``None`` when it could not be read."""
        version = self._version
        if version is _UNREAD:
            with self._lock:
                if self._version is _UNREAD:
                    self._version = self._read(client)
                version = self._version
        return version  # type: ignore[return-value]

    @staticmethod
    def _read(client: Elasticsearch) -> tuple[int, int] | None:
        try:
            body = client.info().body
        except (ApiError, TransportError) as exc:
            log.info("GET / failed (%s): the server's version is unknown", exc)
            return None
        version = parse_version((body.get("version") or {}).get("number"))
        if version is None:
            log.info("GET / gave no version number: the server's version is unknown")
        return version
