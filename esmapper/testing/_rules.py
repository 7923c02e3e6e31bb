"""Standing rules of a :class:`~esmapper.testing.faults.FaultProxy`: what the proxy does to
*every* matching request, as opposed to the scripted faults that take the next N.

A rule sees each request before it is forwarded (:meth:`Rule.before`: it may change the
request, or answer it itself, and then the upstream never sees it) and each answer the
upstream gave (:meth:`Rule.after`: it may rewrite it). Rules run in the order they were
added, after the scripted faults that act before forwarding (a dropped connection or an
injected status takes precedence: the network fails before any node answers).

:class:`~esmapper.testing.cluster.ClusterProxy` is built from such rules: each makes the
local server answer one thing the way a real Elasticsearch cluster does.
"""

from __future__ import annotations

import json
import urllib.parse
from typing import Any, Protocol

import attrs

#: The headers of a JSON answer the proxy makes (a reply without headers gets these).
JSON_HEADERS = [
    ("Content-Type", "application/json; charset=UTF-8"),
    ("X-Elastic-Product", "Elasticsearch"),
]

__all__ = ["JSON_HEADERS", "Exchange", "Reply", "Rule", "error_body", "json_reply"]


@attrs.define(slots=True)
class Exchange:
    """One request as the proxy received it; a rule's :meth:`Rule.before` may change
    ``path``, ``params`` or ``body`` (what is forwarded), and stash what its
    :meth:`Rule.after` needs in ``notes``."""

    method: str
    path: str
    params: dict[str, str]
    body: bytes
    headers: dict[str, str]
    notes: dict[str, Any] = attrs.field(factory=dict)

    @property
    def target(self) -> str:
        """The path with the (possibly changed) query string, as forwarded."""
        if not self.params:
            return self.path
        return f"{self.path}?{urllib.parse.urlencode(self.params)}"

    def json(self) -> Any:
        """The body parsed as JSON (``None`` when empty or not JSON)."""
        if not self.body:
            return None
        try:
            return json.loads(self.body)
        except ValueError:
            return None

    @property
    def index_part(self) -> str:
        """The first path segment when it names indexes (``""`` for ``/_search`` etc.)."""
        first = self.path.strip("/").split("/", 1)[0]
        return "" if first.startswith("_") else urllib.parse.unquote(first)


@attrs.define(slots=True)
class Reply:
    """An answer: the upstream's, or one a rule made."""

    status: int
    body: bytes
    headers: list[tuple[str, str]] | None = None

    def json(self) -> Any:
        try:
            return json.loads(self.body) if self.body else None
        except ValueError:
            return None


def json_reply(status: int, body: Any) -> Reply:
    """A JSON answer made by a rule (the proxy adds Elasticsearch's product header)."""
    return Reply(status, json.dumps(body).encode())


def error_body(status: int, cause: dict[str, Any]) -> dict[str, Any]:
    """Elasticsearch's error body for a ``status`` answer whose one root cause is ``cause``
    (a dict with at least ``type`` and ``reason``)."""
    return {"error": {"root_cause": [dict(cause)], **cause}, "status": status}


class Rule(Protocol):
    """A standing behaviour of the proxy (see the module docstring). A rule that subclasses
    it inherits the defaults: forward every request, and leave every answer as it is."""

    def before(self, exchange: Exchange) -> Reply | None:
        """Called before forwarding; a :class:`Reply` answers the request without
        forwarding it, ``None`` forwards it (as ``exchange`` now says)."""
        return None

    def after(self, exchange: Exchange, reply: Reply) -> Reply:
        """Called with the upstream's answer; returns the answer the client gets."""
        return reply
