"""Delete everything a test created under its index prefix.

Works on real Elasticsearch and on noida-db: names are listed with wildcard *reads* and then
deleted by exact name (wildcard deletes are refused by ``action.destructive_requires_name``,
and noida-db answers ``indices.exists`` with a wildcard wrongly).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from elasticsearch import Elasticsearch

_CHUNK = 50  # index names per DELETE request, to keep URLs short
_SAFE_PREFIX = re.compile(r"[a-z0-9][a-z0-9_.+-]*")


def _names(body: Any, prefix: str) -> list[str]:
    """Keys of a dict response that start with ``prefix``, sorted."""
    return sorted(n for n in body if n.startswith(prefix)) if isinstance(body, dict) else []


def _listed(body: Any, key: str, prefix: str) -> list[str]:
    """Names under ``body[key]`` (a list of ``{"name": ...}``) that start with ``prefix``."""
    items = body.get(key, []) if isinstance(body, dict) else []
    return sorted(t["name"] for t in items if t.get("name", "").startswith(prefix))


def _chunks(names: list[str]) -> Iterable[list[str]]:
    """``names`` in lists of at most _CHUNK."""
    return (names[i : i + _CHUNK] for i in range(0, len(names), _CHUNK))


def delete_prefixed(client: Elasticsearch, prefix: str) -> None:
    """Delete every index, alias, index template (composable and legacy), component
    template and ingest pipeline whose name starts with ``prefix``.

    ``prefix`` must be a non-empty, lowercase index-name prefix without wildcards, so that this
    can never delete everything.
    """
    if not _SAFE_PREFIX.fullmatch(prefix):
        raise ValueError(f"refusing to delete by unsafe index prefix {prefix!r}")
    pattern = f"{prefix}*"
    lenient = client.options(ignore_status=404)

    # Aliases under the prefix that point at indices outside it (others go with their index).
    aliases = lenient.indices.get_alias(name=pattern, expand_wildcards="all").body
    actions: list[Any] = [
        {"remove": {"index": index, "alias": alias}}
        for index in _names(aliases, "")
        if not index.startswith(prefix)
        for alias in _names(aliases[index].get("aliases", {}), prefix)
    ]
    if actions:
        client.indices.update_aliases(actions=actions)

    indices = client.indices.get(
        index=pattern, expand_wildcards="all", allow_no_indices=True, ignore_unavailable=True
    ).body
    for chunk in _chunks(_names(indices, prefix)):
        client.indices.delete(index=chunk, ignore_unavailable=True)

    # Composable templates first: a component template in use cannot be deleted.
    found = lenient.indices.get_index_template(name=pattern).body
    for name in _listed(found, "index_templates", prefix):
        lenient.indices.delete_index_template(name=name)
    legacy = client.options(ignore_status=(400, 404, 410))  # deprecated API; may be gone
    for name in _names(legacy.indices.get_template(name=pattern).body, prefix):
        legacy.indices.delete_template(name=name)
    found = lenient.cluster.get_component_template(name=pattern).body
    for name in _listed(found, "component_templates", prefix):
        lenient.cluster.delete_component_template(name=name)
    pipelines = lenient.ingest.get_pipeline(id=pattern).body
    for name in _names(pipelines, prefix):
        lenient.ingest.delete_pipeline(id=name)
