"""A ClusterProxy rule: a point in time naming a missing index answers 404, as on
Elasticsearch.

``POST /<a>,<b>/_pit`` where ``<b>`` is neither an index nor an alias: Elasticsearch
refuses the whole request with 404 ``index_not_found_exception`` (``no such index [b]``)
unless it is sent with ``ignore_unavailable=true`` (the specification's only indices
option of the point-in-time API besides ``expand_wildcards``; ``allow_no_indices`` is not
one, and without it a point in time over nothing but missing names is an empty one). The
local server skips the missing name and opens a point in time over the others (it answers
404 only when every name is missing), so a point in time over pruned time-series
partitions, one of which does not exist, looked fine there while on a cluster it found
nothing. :class:`MissingIndexPit` checks each plain name (``HEAD /<name>`` upstream; a
wildcard, an exclusion or date math never makes it fail) and answers as Elasticsearch does
for the first one missing.
"""

from __future__ import annotations

import re
import urllib.parse
from typing import Any, Final

from esmapper.testing._real_aliases import Upstream, path_names, plain_name
from esmapper.testing._rules import Exchange, Reply, Rule, error_body, json_reply

__all__ = ["MissingIndexPit", "index_not_found"]

_PIT: Final = re.compile(r"^/[^/_][^/]*/_pit$")


def index_not_found(name: str) -> dict[str, Any]:
    """The body of Elasticsearch's 404 for the missing index or alias ``name``."""
    cause = {
        "type": "index_not_found_exception",
        "reason": f"no such index [{name}]",
        "resource.type": "index_or_alias",
        "resource.id": name,
        "index_uuid": "_na_",
        "index": name,
    }
    return error_body(404, cause)


class MissingIndexPit(Rule):
    """Answer 404 ``index_not_found_exception`` to a point-in-time open that names a
    missing index without ``ignore_unavailable=true`` (see the module docstring)."""

    def __init__(self, upstream: Upstream) -> None:
        self.upstream = upstream

    def before(self, exchange: Exchange) -> Reply | None:
        if exchange.method != "POST" or _PIT.match(exchange.path) is None:
            return None
        if exchange.params.get("ignore_unavailable", "false").lower() == "true":
            return None
        for name in path_names(exchange):
            if not plain_name(name):
                continue
            found = self.upstream("HEAD", f"/{urllib.parse.quote(name, safe='')}")
            if found.status == 404:
                return json_reply(404, index_not_found(name))
        return None
