"""Markers esmapper keeps in an index's mapping ``_meta``: read one, set one.

``_meta`` may be written under a write block, so a reindex can record what it does to an
index that is blocked (:mod:`esmapper.indexes.blocks`, :mod:`esmapper.indexes.leftovers`).
A key is removed by setting it to ``None`` (servers differ on whether ``PUT _mapping``
replaces ``_meta`` or merges it; a null value means "absent" for both).
"""

from __future__ import annotations

from typing import Any

from elasticsearch import Elasticsearch

from esmapper._transport import once, send_or_read_back

__all__ = ["put_meta", "read_meta"]


def read_meta(client: Elasticsearch, index: str) -> dict[str, Any]:
    """``index``'s mapping ``_meta`` (``GET /<index>/_mapping``), ``{}`` without one."""
    body: dict[str, Any] = dict(client.indices.get_mapping(index=index).body)
    entry: dict[str, Any] = next(iter(body.values()), {})
    return dict(entry.get("mappings", {}).get("_meta") or {})


def put_meta(client: Elasticsearch, index: str, key: str, value: Any) -> None:
    """Set ``_meta[key] = value`` on ``index``, keeping the other keys.

    Sends ``GET /<index>/_mapping`` and ``PUT /<index>/_mapping`` with the merged ``_meta``
    once; a lost answer is read back (the value is there: done; else sent once more).
    Raises the client's errors."""
    meta = {**read_meta(client, index), key: value}
    send_or_read_back(
        lambda: once(client).indices.put_mapping(index=index, meta=meta),
        lambda: read_meta(client, index).get(key) == value,
        what=f"PUT /{index}/_mapping",
    )
