"""Point-in-time lifetimes: the ``snapshot=`` keep-alive, telling a
point in time that is gone from other errors, and the error that says how far a scan got.

A point in time lives for its keep-alive after the *last* request that named it: opening
it (``POST /<index>/_pit?keep_alive=K``) and every page (``"pit": {"id", "keep_alive":
K}``) extend it, so ``K`` must cover the longest gap between two page requests, i.e. the
time the caller spends on one page.
"""

from __future__ import annotations

import datetime as _dt
import logging
import re
from collections.abc import Sequence
from typing import Any, Final

import attrs
from elastic_transport import TransportError
from elasticsearch import ApiError, Elasticsearch

from esmapper.errors import QueryValidationError, SnapshotExpiredError
from esmapper.results import encode_token

__all__ = [
    "CONTEXT_MISSING",
    "DEFAULT_KEEP_ALIVE",
    "PitTarget",
    "context_reason",
    "expired_error",
    "is_context_missing",
    "keep_alive",
    "lost_shards",
    "release",
]

log = logging.getLogger("esmapper.query")

#: The keep-alive of ``snapshot=True`` and of the scans of ``batch_process``,
#: ``patch_all`` and ``remove_all``: long enough for a slow page, short enough that an
#: abandoned point in time is freed soon.
DEFAULT_KEEP_ALIVE: Final = "5m"
#: The error type Elasticsearch gives a search whose point in time is gone.
CONTEXT_MISSING: Final = "search_context_missing_exception"

_DURATION = re.compile(r"([0-9]+)(d|h|m|s|ms|micros|nanos)")
_GONE = re.compile(r"no search context found|point in time .*not found|pit .*not found", re.I)


def keep_alive(value: object) -> str | None:
    """The keep-alive a ``snapshot=`` value asks for; ``None`` means no point in time.

    ``False``/``None``: none. ``True``: :data:`DEFAULT_KEEP_ALIVE`. An Elasticsearch
    duration, a positive whole number and a unit (``d h m s ms micros nanos``, lower case:
    ``"90s"``, ``"5m"``, ``"1h"``), or a positive ``timedelta``: that lifetime. Anything else
    raises :class:`QueryValidationError` naming ``snapshot`` (sends nothing). The server
    refuses a lifetime over its ``search.max_keep_alive`` (24h by default) when the point
    in time is opened.
    """
    if value is None or value is False:
        return None
    if value is True:
        return DEFAULT_KEEP_ALIVE
    if isinstance(value, _dt.timedelta):
        micros = value // _dt.timedelta(microseconds=1)
        if micros < 1000:
            raise _invalid(value, "it must be at least 1ms")
        if micros % 1_000_000 == 0:
            return f"{micros // 1_000_000}s"
        return f"{micros // 1000}ms"
    if isinstance(value, str):
        match = _DURATION.fullmatch(value.strip())
        if match is None:
            raise _invalid(value, "expected a whole number and a unit: d, h, m, s, ms")
        if int(match.group(1)) == 0:
            raise _invalid(value, "a point in time needs a positive lifetime")
        return f"{int(match.group(1))}{match.group(2)}"
    raise _invalid(value, "expected True, a duration string or a timedelta")


def _invalid(value: object, why: str) -> QueryValidationError:
    return QueryValidationError(
        f"snapshot={value!r} is not a point-in-time keep-alive ({why}; e.g. snapshot='5m')",
        field="snapshot",
    )


def _error_types(node: Any, found: set[str]) -> set[str]:
    if isinstance(node, dict):
        kind = node.get("type")
        if isinstance(kind, str):
            found.add(kind)
        for child in node.values():
            _error_types(child, found)
    elif isinstance(node, list):
        for child in node:
            _error_types(child, found)
    return found


def is_context_missing(exc: ApiError) -> bool:
    """Whether a 404 answer to a point-in-time search says the point in time is gone
    (``search_context_missing_exception`` anywhere in the error, or its usual reason)."""
    if exc.meta.status != 404:
        return False
    if CONTEXT_MISSING in _error_types(exc.body, set()):
        return True
    return _GONE.search(str(exc.body)) is not None


def context_reason(exc: ApiError) -> str:
    """The server's reason in the error of a point in time that is gone."""
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error")
    if not isinstance(error, dict):
        return str(exc)
    for cause in [*(error.get("root_cause") or []), error.get("caused_by") or {}, error]:
        if isinstance(cause, dict) and cause.get("reason"):
            return str(cause["reason"])
    return str(exc)


def lost_shards(response: dict[str, Any]) -> str | None:
    """The reason of a shard failure saying the point in time is gone, in an answer that
    succeeded on the other shards (its hits would silently miss those shards' documents);
    ``None`` when there is none."""
    failures = (response.get("_shards") or {}).get("failures") or []
    for failure in failures:
        if CONTEXT_MISSING in _error_types(failure, set()):
            reason = (failure.get("reason") or {}).get("reason")
            return str(reason or CONTEXT_MISSING)
    return None


def expired_error(
    model: str,
    *,
    keep_alive: str,
    processed: int,
    pages: int,
    last_sort: Sequence[Any] | None,
    index: str | None = None,
    error_type: str | None = CONTEXT_MISSING,
    reason: str | None = None,
) -> SnapshotExpiredError:
    """The :class:`SnapshotExpiredError` of a scan of ``model`` that got this far."""
    token = None if last_sort is None else encode_token(last_sort)
    if token is None:
        where = "before any page was read; run it again"
    else:
        where = (
            f"after sort value {list(last_sort or [])!r}; continue after it with "
            f"search_after={token!r} (same filter and sort)"
        )
    message = (
        f"the point in time of the {model} scan is gone after {pages} page(s), "
        f"{processed} document(s): it expired (no page was requested within its keep-alive "
        f"{keep_alive}) or was closed. Pass snapshot= a keep-alive longer than one page "
        f"takes, {where}"
    )
    return SnapshotExpiredError(
        message,
        processed=processed,
        pages=pages,
        last_sort=last_sort,
        search_after=token,
        keep_alive=keep_alive,
        index=index,
        error_type=error_type,
        reason=reason,
    )


def release(client: Elasticsearch, pit_id: str) -> None:
    """Close a point in time (``DELETE /_pit``) that is no longer needed; never raises (a
    point in time that cannot be closed expires by itself)."""
    try:
        client.close_point_in_time(id=pit_id)
    except (ApiError, TransportError) as exc:
        log.debug("closing point in time failed (it expires by itself): %s", exc)


@attrs.frozen(slots=True)
class PitTarget:
    """Where to open a point in time (or send a by-query request): ``index`` (the path
    part of ``POST /<index>/_pit``) and whether it is a list esmapper made, sent with
    ``ignore_unavailable=true`` (and ``allow_no_indices=true`` by a by-query request)."""

    index: str
    listed: bool
