"""A ClusterProxy rule: an alias over several indexes covers all of them, as on
Elasticsearch, in the requests where the local server takes only its first index.

The local server (noida-db) resolves an alias of several indexes to all of them for a
search or a count, but a point in time (``POST /<alias>/_pit``), an update-by-query and a
delete-by-query on such an alias cover its first index only. A time-series model's umbrella
alias is such an alias (one index per day or month). :class:`AliasesCoverEveryIndex`
rewrites the path of those requests: each alias of several indexes is replaced by the
indexes it points at (``GET /_alias/<name>`` upstream), which the local server then covers,
as Elasticsearch covers the alias. Wildcards, exclusions, date math and names that are not
aliases of several indexes are forwarded as they are; an alias with a ``filter`` or a
``routing`` is left alone (replacing it by its indexes would drop them).

Also here: :data:`Upstream` (how a rule asks the upstream server something) and
:func:`path_names` (the names of a request's index part), which the other rules share.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Callable
from typing import Final

from esmapper.testing._rules import Exchange, Reply, Rule

__all__ = ["AliasesCoverEveryIndex", "Upstream", "path_names", "plain_name"]

#: ``upstream(method, path)``: the upstream server's answer to a request without a body
#: (sent by the proxy itself, never counted or faulted).
Upstream = Callable[[str, str], Reply]

_EXPANDED: Final = re.compile(r"^/([^/_][^/]*)/(_pit|_update_by_query|_delete_by_query)$")


def plain_name(name: str) -> bool:
    """Whether ``name`` names one index or alias: not a wildcard, an exclusion, date math,
    ``_all`` or a remote cluster's index."""
    return bool(name) and not ("*" in name or name[0] in "-<+_" or ":" in name)


def path_names(exchange: Exchange) -> list[str]:
    """The comma-separated names of the request's index part (``[]`` for ``/_search``)."""
    part = exchange.index_part
    return [name for name in part.split(",") if name] if part else []


class AliasesCoverEveryIndex(Rule):
    """Replace an alias of several indexes by those indexes in a point-in-time open, an
    update-by-query and a delete-by-query (see the module docstring)."""

    def __init__(self, upstream: Upstream) -> None:
        self.upstream = upstream

    def before(self, exchange: Exchange) -> Reply | None:
        match = _EXPANDED.match(exchange.path)
        if exchange.method != "POST" or match is None:
            return None
        names = path_names(exchange)
        resolved: list[str] = []
        changed = False
        for name in names:
            indexes = self._indexes_of(name) if plain_name(name) else None
            if indexes is None or len(indexes) < 2:
                resolved.append(name)
                continue
            changed = True
            resolved.extend(index for index in indexes if index not in resolved)
        if changed:
            expression = urllib.parse.quote(",".join(resolved), safe=",")
            exchange.path = f"/{expression}/{match.group(2)}"
        return None

    def _indexes_of(self, name: str) -> list[str] | None:
        """The indexes the alias ``name`` points at (sorted), or ``None`` when ``name`` is
        no alias or one with a filter or routing."""
        reply = self.upstream("GET", f"/_alias/{urllib.parse.quote(name, safe='')}")
        body = reply.json()
        if reply.status != 200 or not isinstance(body, dict):
            return None
        indexes: list[str] = []
        for index, entry in body.items():
            aliases = entry.get("aliases", {}) if isinstance(entry, dict) else {}
            spec = aliases.get(name)
            if not isinstance(spec, dict):
                return None
            if any(key in spec for key in ("filter", "routing", "index_routing", "search_routing")):
                return None
            indexes.append(index)
        return sorted(indexes)
