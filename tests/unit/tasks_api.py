"""The tasks API as esmapper sends it (``client.perform_request``: ``GET /_tasks``, ``GET
/_tasks/<id>``, ``POST /_tasks/<id>/_cancel``), answered by a test's fake ``tasks``
namespace (its ``list``, ``get`` and ``cancel``)."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote


def answer_tasks_request(tasks: Any, method: str, path: str, params: Any = None) -> Any:
    """What ``tasks`` answers to ``method path`` (``params``: the query of a listing)."""
    parts = [unquote(p) for p in path.strip("/").split("/")]
    assert parts[0] == "_tasks", path
    if method == "GET" and len(parts) == 1:
        return tasks.list(**(params or {}))
    if method == "GET" and len(parts) == 2:
        return tasks.get(parts[1])
    assert (method, parts[2:]) == ("POST", ["_cancel"]), (method, path)
    return tasks.cancel(parts[1])
