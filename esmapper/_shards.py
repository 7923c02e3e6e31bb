"""Whether Elasticsearch answered a search, a scroll page or a count completely: the one
place that reads an answer's ``_shards`` and ``timed_out``. Every search, scroll page and
count esmapper sends goes through it.

A cluster answers a search that some shards could not serve (a node left, a search queue
was full, a circuit breaker tripped, a shard ran past the search's ``timeout``) with status
200, the hits and aggregations of the shards that did answer, ``_shards.failed > 0`` with
``_shards.failures[]`` (or ``timed_out: true``, the timed-out shards counted as
successful). ``allow_partial_search_results`` defaults to true (the cluster setting
``search.default_allow_partial_results``). A scroll page reports its failed shards the same
way, and so does ``_count``, which has no such parameter. Such an answer lists fewer
documents, a lower total and count, smaller aggregations, and says nothing else.

The rules:

- **A listing that decides writes** (the reindex's id listings and counts, the stale-copy
  check, re-key's audit, the scans of ``patch_all``/``remove_all``/``batch_process``, the
  migration records, custom-field definitions, by-id searches) asks for a complete answer,
  ``allow_partial_search_results=false`` on every search, and checks
  every answer anyway (:func:`require_complete`): scroll pages and counts cannot ask, and a
  server may answer a timeout in part all the same. A shard failure raises
  :class:`~esmapper.errors.PartialResultsError` naming the shards (:func:`search_all`,
  :func:`scroll_all`, :func:`count_all`); it is never taken for "these documents do not
  exist". The server's own refusal (``search_phase_execution_exception``, "Partial shards
  failure", status 5xx or 429) becomes the same error (:func:`refusal`).
- **A user's read** (``find``, ``count``, ``exists``, ``aggregate``) is refused the same
  way by default, the error carrying what the shards that answered gave; with
  ``partial_results=True`` it is returned, marked (``results.partial``,
  ``results.shards``). :class:`~esmapper._search.SearchRequest` applies this.

Retries: a refusal answered 429/503/504 is resent by the client's transport (a search is
safe to resend); esmapper does not retry a partial answer by itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final, TypeVar

from elastic_transport import ObjectApiResponse
from elasticsearch import ApiError, Elasticsearch

from esmapper._pit import is_context_missing
from esmapper.errors import PartialResultsError
from esmapper.results import Count, ShardFailure, Shards

__all__ = [
    "count_all",
    "partial_error",
    "refusal",
    "require_complete",
    "scroll_all",
    "search_all",
    "sent",
    "shards_of",
]

#: What a listing's error suggests (a user's read suggests ``partial_results=True``).
_AGAIN: Final = "run it again once every shard is available (GET _cluster/health)"
#: The reasons of Elasticsearch's refusal of a partial answer
#: (``allow_partial_search_results=false``).
_REFUSALS: Final = ("Partial shards failure", "Search rejected due to missing shards")

R = TypeVar("R")


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _failure(raw: Any) -> ShardFailure:
    raw = raw if isinstance(raw, Mapping) else {}
    reason = raw.get("reason")
    if isinstance(reason, Mapping):
        cause = reason.get("caused_by")
        error_type, text = reason.get("type"), reason.get("reason")
        if not text and isinstance(cause, Mapping):
            text = cause.get("reason")
    else:
        error_type, text = None, reason
    shard = raw.get("shard")
    return ShardFailure(
        index=None if raw.get("index") is None else str(raw["index"]),
        shard=shard if isinstance(shard, int) else None,
        node=None if raw.get("node") is None else str(raw["node"]),
        error_type=None if error_type is None else str(error_type),
        reason=None if text is None else str(text),
    )


def shards_of(response: Mapping[str, Any] | ObjectApiResponse[Any]) -> Shards:
    """The :class:`~esmapper.results.Shards` of a search, scroll or count answer (its body,
    or the client's response): its ``_shards`` and ``timed_out`` (an answer without
    ``_shards``, e.g. an error body, reads as complete)."""
    raw = response.get("_shards")
    raw = raw if isinstance(raw, Mapping) else {}
    failures = raw.get("failures")
    return Shards(
        total=_int(raw.get("total")),
        successful=_int(raw.get("successful")),
        skipped=_int(raw.get("skipped")),
        failed=_int(raw.get("failed")),
        failures=tuple(map(_failure, failures)) if isinstance(failures, list) else (),
        timed_out=response.get("timed_out") is True,
    )


def partial_error(
    shards: Shards,
    *,
    what: str,
    index: str | None,
    results: Any = None,
    remedy: str = _AGAIN,
) -> PartialResultsError:
    """The :class:`PartialResultsError` of ``what`` (e.g. ``"the id listing of
    notes-v1"``), answered by ``shards`` only."""
    first = shards.failures[0] if shards.failures else None
    return PartialResultsError(
        f"{what} is incomplete, refused: {shards}. Its answer misses the documents of those "
        f"shards; {remedy}",
        shards=shards,
        results=results,
        index=index,
        error_type=first.error_type if first else ("timed_out" if shards.timed_out else None),
        reason=first.reason if first else None,
    )


def require_complete(
    response: Mapping[str, Any] | ObjectApiResponse[Any],
    *,
    what: str,
    index: str | None,
    results: Any = None,
    remedy: str = _AGAIN,
) -> Shards:
    """The shards of ``response``; raises :class:`PartialResultsError` when some failed or
    timed out (``results``: what the call would have returned, carried by the error)."""
    shards = shards_of(response)
    if not shards.complete:
        raise partial_error(shards, what=what, index=index, results=results, remedy=remedy)
    return shards


def refusal(
    exc: ApiError, *, what: str, index: str | None, remedy: str = _AGAIN
) -> PartialResultsError | None:
    """The :class:`PartialResultsError` of Elasticsearch's refusal to answer a search in
    part (``search_phase_execution_exception``: "Partial shards failure" or "Search rejected
    due to missing shards", with the ``failed_shards``); ``None`` for any other error
    (a bad query is "all shards failed": not a partial answer), and for a point in time
    gone on some shards (404, ``search_context_missing_exception``: the caller's
    :class:`~esmapper.errors.SnapshotExpiredError`, see :mod:`esmapper._pit`)."""
    if is_context_missing(exc):
        return None
    body = exc.body if isinstance(exc.body, Mapping) else {}
    error = body.get("error")
    if not isinstance(error, Mapping) or error.get("type") != "search_phase_execution_exception":
        return None
    reason = str(error.get("reason") or "")
    if not reason.startswith(_REFUSALS):
        return None
    raw = error.get("failed_shards")
    failures = tuple(map(_failure, raw)) if isinstance(raw, list) else ()
    shards = Shards(failed=max(1, len(failures)), failures=failures)
    return partial_error(shards, what=what, index=index, remedy=remedy)


def sent(send: Callable[[], R], *, what: str, index: str | None, remedy: str = _AGAIN) -> R:
    """``send()``, the server's refusal of a partial answer raised as
    :class:`PartialResultsError` (:func:`refusal`); other errors as they are."""
    try:
        return send()
    except ApiError as exc:
        error = refusal(exc, what=what, index=index, remedy=remedy)
        if error is None:
            raise
        raise error from exc


def search_all(
    client: Elasticsearch, *, what: str, index: str | None, **params: Any
) -> ObjectApiResponse[Any]:
    """``client.search(index=index, **params)`` with ``allow_partial_search_results=false``;
    raises :class:`PartialResultsError` when the server refuses or the answer is partial
    anyway, the client's errors otherwise (a 404 too, unless ``client`` ignores it: then
    the 404 answer is returned as it came)."""
    response = sent(
        lambda: client.search(index=index, allow_partial_search_results=False, **params),
        what=what,
        index=index,
    )
    require_complete(response.body, what=what, index=index)
    return response


def count_all(client: Elasticsearch, *, what: str, index: str, **params: Any) -> int:
    """``GET /<index>/_count`` (``params``: its query...): the count, when every shard
    answered; raises :class:`PartialResultsError` (carrying the lower count) otherwise,
    the client's errors as they are (``NotFoundError`` for a missing index)."""
    response = client.count(index=index, **params)
    count = int(response["count"])
    shards = shards_of(response.body)
    if not shards.complete:
        raise partial_error(shards, what=what, index=index, results=Count(count, shards))
    return count


def scroll_all(
    client: Elasticsearch, *, what: str, index: str, scroll: str = "2m", **params: Any
) -> Iterator[list[dict[str, Any]]]:
    """The hits of a search over ``index``, a page at a time: a scroll (``POST
    /<index>/_search?scroll=...&allow_partial_search_results=false``, then ``POST
    /_search/scroll`` per page), each page checked (:func:`require_complete`: a scroll page
    cannot ask for completeness, and a failed shard's documents would be missing from the
    rest of the scroll); the scroll is cleared at the end, also when a page is partial or
    the caller stops early. Raises :class:`PartialResultsError` as :func:`search_all`."""
    response = sent(
        lambda: client.search(
            index=index, scroll=scroll, allow_partial_search_results=False, **params
        ),
        what=what,
        index=index,
    )
    scroll_id = response.get("_scroll_id")
    try:
        require_complete(response.body, what=what, index=index)
        while hits := response["hits"]["hits"]:
            yield hits
            response = client.scroll(scroll_id=scroll_id, scroll=scroll)
            require_complete(response.body, what=what, index=index)
            scroll_id = response.get("_scroll_id", scroll_id)
    finally:
        if scroll_id:
            client.options(ignore_status=404).clear_scroll(scroll_id=scroll_id)
