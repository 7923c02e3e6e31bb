"""A server of a chosen version, as far as ``GET /`` tells: a
:class:`~esmapper.testing.cluster.ClusterProxy` rule.

The local server says it is one version (8.15.3 today). esmapper reads the version where
the shape of a request depends on it (:mod:`esmapper._server_version`; a ``highlight`` of
several fields is an object keyed by field on 8.18-9.0 and a list from 9.1), so a test
pins each form by having ``GET /`` answer another ``version.number``
(:class:`ReportedVersion`); every other answer is the local server's.
"""

from __future__ import annotations

import re

from esmapper.testing._rules import Exchange, Reply, Rule, json_reply

__all__ = ["ReportedVersion"]

_NUMBER = re.compile(r"^\d+\.\d+\.\d+(-[A-Za-z0-9.]+)?$")


class ReportedVersion(Rule):
    """Answer ``GET /`` with ``version.number`` = ``number`` (e.g. ``"9.1.0"``)."""

    def __init__(self, number: str) -> None:
        if not _NUMBER.match(number):
            raise ValueError(f"a version is major.minor.patch (e.g. '9.1.0'), not {number!r}")
        self.number = number

    def after(self, exchange: Exchange, reply: Reply) -> Reply:
        if exchange.method != "GET" or exchange.path.rstrip("/") != "":
            return reply
        body = reply.json()
        if reply.status != 200 or not isinstance(body, dict):
            return reply
        body["version"] = {**(body.get("version") or {}), "number": self.number}
        return json_reply(reply.status, body)
