"""Async search (``repo.async_search``): a search the cluster runs in the background, its
results read later by id, for searches that take longer than a request should wait.

The search is compiled and read by the search core (:class:`~esmapper._search.SearchRequest`):
the same filter language, feature clauses (soft deletes, tenants, custom fields), sort,
paging, source filtering, highlight and aggregations as ``find``, the same
``before_query``/``after_query`` signals, the same hydration into the model's documents.
What it sends:

- :meth:`AsyncSearch.submit`: ``POST /<alias>/_async_search`` with the body ``find`` would
  send, ``wait_for_completion_timeout`` (``wait=``), ``keep_alive`` and
  ``keep_on_completion`` (omitted when not given: the cluster's defaults, 1s, 5d and false);
- :meth:`AsyncSearch.get`: ``GET /_async_search/<id>`` (``wait_for_completion_timeout``,
  ``keep_alive``: a new lifetime from now); with ``delete=True`` a search that is done is
  then deleted (``DELETE /_async_search/<id>``);
- :meth:`AsyncSearch.status`: ``GET /_async_search/status/<id>`` (no hits);
- :meth:`AsyncSearch.delete`: ``DELETE /_async_search/<id>`` (cancels it if it runs).

Each answer is ``{"id", "is_running", "is_partial", ..., "response": <a search
answer>}``; the page is read from ``response`` as ``find`` reads it, and carries
``results.async_id`` and ``results.is_running``. While the search runs, Elasticsearch gives
no hits (only the count and aggregations of the shards done so far). Shard failures are
refused as ``find`` refuses them (:class:`~esmapper.errors.PartialResultsError` carrying the
page, its ``async_id`` included) unless ``partial_results=True``; a search that failed as a
whole raises the client's ``ApiError`` for its ``error``. An id the cluster does not keep
(expired, deleted: 404; wrong: 400 ``invalid id``) raises
:class:`~esmapper.errors.AsyncSearchNotFoundError`.

An async page is one page: ``next_page()`` returns ``False`` (submit another search with
``page=`` or ``search_after=results.search_after_token``). ``snapshot=`` and ``cache_key``
are refused (a point in time and a cached page belong to ``find``). Every request is a read
(a submit starts a search, it writes no document), so the transport's retries apply.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, Generic, TypeVar

from elasticsearch import ApiError, BadRequestError, NotFoundError
from typing_extensions import Unpack

from esmapper._keywords import FindKeywords
from esmapper._limits import applied
from esmapper._search_answers import results as read_results
from esmapper._shards import sent, shards_of
from esmapper.errors import AsyncSearchNotFoundError, EsmapperError, QueryValidationError
from esmapper.options import given
from esmapper.results import AsyncSearchStatus, FindResults

if TYPE_CHECKING:
    from elasticsearch.dsl.query import Query

    from esmapper._search import SearchRequest
    from esmapper._searching import Searching
    from esmapper.model import Document

__all__ = ["AsyncSearch", "duration"]

T = TypeVar("T", bound="Document")

_DURATION: Final = re.compile(r"([0-9]+)(d|h|m|s|ms)")
_UNIT_SECONDS: Final = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
#: Elasticsearch refuses a shorter ``keep_alive`` for an async search.
_MIN_KEEP_ALIVE: Final = 1.0


def duration(name: str, value: object, *, minimum: float = 0.0) -> str | None:
    """``value`` (``None``, an Elasticsearch duration like ``"5s"``/``"1h"`` or a
    ``timedelta``) as the duration string sent, at least ``minimum`` seconds; ``None``
    stays ``None`` (the cluster's default). Raises :class:`QueryValidationError` naming
    ``name`` before anything is sent."""
    if value is None:
        return None
    if isinstance(value, _dt.timedelta):
        millis = value // _dt.timedelta(milliseconds=1)
        text = f"{millis // 1000}s" if millis % 1000 == 0 else f"{millis}ms"
        seconds = value.total_seconds()
    elif isinstance(value, str) and (match := _DURATION.fullmatch(value.strip())):
        text = f"{int(match.group(1))}{match.group(2)}"
        seconds = int(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    else:
        raise QueryValidationError(
            f"{name}={value!r} is not a duration: a whole number and a unit (d, h, m, s, "
            "ms), e.g. '5s' or '1h', or a datetime.timedelta",
            field=name,
        )
    if seconds < minimum:
        raise QueryValidationError(
            f"{name}={value!r} is too short: at least {minimum:g}s", field=name
        )
    return text


def _millis(answer: Mapping[str, Any], key: str) -> _dt.datetime | None:
    value = answer.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        return None
    return _dt.datetime.fromtimestamp(value / 1000, tz=_dt.timezone.utc)


class AsyncSearch(Generic[T]):
    """The async searches of one repository (``repo.async_search``); see the module
    docstring for what each call sends."""

    def __init__(self, repo: Searching[T]) -> None:
        self._repo = repo

    def submit(
        self,
        filter: str | Query | None = None,
        *,
        wait: str | _dt.timedelta | None = None,
        keep_alive: str | _dt.timedelta | None = None,
        keep_on_completion: bool | None = None,
        **options: Unpack[FindKeywords],
    ) -> FindResults[T]:
        """Start the search ``find(filter, **options)`` would send, in the background
        (``POST /<alias>/_async_search``), and wait up to ``wait`` for it (the cluster's
        default: 1s). Returns its page: the results when it finished within ``wait``,
        else ``is_running`` with ``async_id`` to :meth:`get` it later. ``keep_alive``: how
        long the cluster keeps it (default 5d; at least 1s); ``keep_on_completion=True``
        keeps a search that finished within ``wait`` too (else it has no ``async_id``).
        Raises QueryValidationError before sending for a bad argument (``snapshot`` and
        ``cache_key`` are refused), PartialResultsError for shard failures (see the
        module docstring). A missing index: an empty page, nothing kept."""
        kwargs = given(options)
        if kwargs.get("snapshot") not in (None, False):
            raise QueryValidationError(
                "snapshot= pages through a point in time, which an async search does not; "
                "use find(snapshot=...) or submit one async search per page",
                field="snapshot",
            )
        if kwargs.get("cache_key") is not None:
            raise QueryValidationError(
                "cache_key= stores a page of find(); an async search's pages are kept by "
                "the cluster (keep_alive=)",
                field="cache_key",
            )
        if keep_on_completion is not None and not isinstance(keep_on_completion, bool):
            raise QueryValidationError(
                f"keep_on_completion={keep_on_completion!r} must be True or False",
                field="keep_on_completion",
            )
        params: dict[str, Any] = {
            "wait_for_completion_timeout": duration("wait", wait),
            "keep_alive": duration("keep_alive", keep_alive, minimum=_MIN_KEEP_ALIVE),
            "keep_on_completion": keep_on_completion,
        }
        params = {k: v for k, v in params.items() if v is not None}
        request = self._repo._request(filter, kwargs)
        with applied(request.options.timeout, request.options.retries):
            request._refresh_for_consistency()
            client = request.ctx.client

            def submit(**search: Any) -> Any:
                return client.async_search.submit(**search, **params)

            answer = request._send(request.page_body(request.page, request.search_after),
                                   None, via=submit)  # fmt: skip
            if answer is None:  # no index (yet): nothing matches, nothing kept
                return FindResults(hits=[], total=0, page=request.page, has_more=False,
                                   limit=request.limit)  # fmt: skip
            return _page(request, answer, None)

    def get(
        self,
        search: str | FindResults[T],
        *,
        wait: str | _dt.timedelta | None = None,
        keep_alive: str | _dt.timedelta | None = None,
        delete: bool = False,
        **options: Unpack[FindKeywords],
    ) -> FindResults[T]:
        """The page of the async search ``search`` (the page :meth:`submit` returned, or
        its ``async_id``): ``GET /_async_search/<id>``, waiting up to ``wait`` for it to
        finish (default: answer at once), ``keep_alive`` a new lifetime from now. Given an
        id, ``options`` are the keywords it was submitted with that say how to read it
        (``limit``, ``includes``/``excludes``, ``aggregations``, ``sort``...; the filter is
        not needed; its documents are read as partial, a save of one writes only the fields
        that changed, since the submit's ``includes``/``excludes`` are not known; an answer
        holding more hits than ``limit`` reads raises QueryValidationError); given the
        page, they are not taken. ``delete=True`` deletes it once
        done (the page returned is its last). Raises AsyncSearchNotFoundError for an id the
        cluster does not keep, PartialResultsError for shard failures."""
        async_id, request = self._target(search, options)
        params: dict[str, Any] = {
            "wait_for_completion_timeout": duration("wait", wait),
            "keep_alive": duration("keep_alive", keep_alive, minimum=_MIN_KEEP_ALIVE),
        }
        params = {k: v for k, v in params.items() if v is not None}
        with applied(request.options.timeout, request.options.retries):
            client = request.ctx.client
            answer = _by_id(
                async_id,
                request.target,
                lambda: client.async_search.get(id=async_id, **params).body,
            )
            done = not answer.get("is_running")
            try:
                return _page(request, answer, async_id)
            except QueryValidationError:
                done = False  # read with the wrong keywords: kept for a read with the right
                raise
            finally:
                if delete and done:
                    self._delete(request, async_id, missing_ok=True)

    def status(self, search: str | FindResults[T]) -> AsyncSearchStatus:
        """Where the async search ``search`` (a page or its id) is:
        ``GET /_async_search/status/<id>``. Raises AsyncSearchNotFoundError for an id the
        cluster does not keep."""
        async_id, request = self._target(search, {})
        with applied(request.options.timeout, request.options.retries):
            client = request.ctx.client
            answer = _by_id(
                async_id, request.target, lambda: client.async_search.status(id=async_id).body
            )
        completion = answer.get("completion_status")
        return AsyncSearchStatus(
            async_id=str(answer.get("id", async_id)),
            is_running=bool(answer.get("is_running")),
            is_partial=bool(answer.get("is_partial")),
            shards=shards_of(answer),
            completion_status=completion if isinstance(completion, int) else None,
            started_at=_millis(answer, "start_time_in_millis"),
            expires_at=_millis(answer, "expiration_time_in_millis"),
        )

    def delete(self, search: str | FindResults[T]) -> None:
        """Delete the async search ``search`` (a page or its id), cancelling it if it
        runs: ``DELETE /_async_search/<id>``. Raises AsyncSearchNotFoundError for an id
        the cluster does not keep (already deleted or expired)."""
        async_id, request = self._target(search, {})
        with applied(request.options.timeout, request.options.retries):
            self._delete(request, async_id, missing_ok=False)

    def _delete(self, request: SearchRequest, async_id: str, *, missing_ok: bool) -> None:
        client = request.ctx.client
        try:
            _by_id(async_id, request.target, lambda: client.async_search.delete(id=async_id))
        except AsyncSearchNotFoundError:
            if not missing_ok:
                raise

    def _target(self, search: object, options: Mapping[str, Any]) -> tuple[str, SearchRequest]:
        """``(id, the request that reads its answers)`` of ``search`` (a page from
        :meth:`submit` or :meth:`get`, or an id); raises QueryValidationError for another
        value, a page that is not an async search's, or options given with a page."""
        if isinstance(search, FindResults):
            if search.async_id is None or search._async_request is None:
                raise QueryValidationError(
                    "this page has no async search id: it is not an async search's, or the "
                    "cluster did not keep it (it finished within wait=; submit with "
                    "keep_on_completion=True to keep it)",
                    field="async_id",
                )
            if options:
                raise QueryValidationError(
                    f"{', '.join(sorted(options))}: a page is read as it was submitted; "
                    "pass its async_id to read it another way",
                    field="options",
                )
            return search.async_id, search._async_request
        if not isinstance(search, str) or not search.strip():
            raise QueryValidationError(
                f"an async search id must be a non-empty string or a page from "
                f"async_search.submit(), not {search!r}",
                field="async_id",
            )
        kwargs = given(dict(options))
        request = self._repo._request(None, kwargs)
        # the submit's includes/excludes are not known: its documents may be partial, a
        # save of one writes only the fields that changed (never defaults over the rest)
        request.source_unknown = True
        return search, request


def _by_id(async_id: str, index: str, call: Any) -> Any:
    """``call()`` (a request naming the async search ``async_id``), its 404 raised as
    :class:`AsyncSearchNotFoundError`."""
    try:
        return sent(call, what=f"the async search {async_id}", index=index)
    except (NotFoundError, BadRequestError) as exc:
        if not _unknown_id(exc, async_id):
            raise  # the search's own failure (its index is gone...), not the id
        raise AsyncSearchNotFoundError(
            f"no async search {async_id!r}: the cluster keeps it for its keep_alive after "
            "the last submit or get that set it (5 days by default), until it is deleted; "
            "submit the search again",
            async_id=async_id,
            index=index,
            error_type=str(exc.error),
            reason=_reason(exc),
        ) from exc


def _unknown_id(exc: ApiError, async_id: str) -> bool:
    """Whether ``exc`` says the cluster keeps no async search ``async_id``: 404
    ``resource_not_found_exception``, or 400 ``invalid id: [<id>]`` (an id it cannot
    decode: not one it made)."""
    if isinstance(exc, NotFoundError):
        return exc.error == "resource_not_found_exception"
    return exc.error == "illegal_argument_exception" and (_reason(exc) or "").startswith(
        f"invalid id: [{async_id}]"
    )


def _reason(exc: ApiError) -> str | None:
    error = exc.body.get("error") if isinstance(exc.body, Mapping) else None
    if isinstance(error, Mapping):
        reason = error.get("reason")
        return None if reason is None else str(reason)
    return None


def _refuse_unseen(request: SearchRequest, results: FindResults[Any], async_id: object) -> None:
    """Refuse the page of an async search read by id that holds a document the read's
    options do not see (the model's features' ``visible`` rules, as a ``get`` by id
    applies them: another tenant's document under ``tenant=``...): it was submitted with
    other keywords, and is not handed to this reader."""
    options = request.options
    rules = [rule for rule in (hook(options) for hook in request.info.points.visible) if rule]
    if rules and any(not rule.test(doc) for doc in results for rule in rules):
        raise QueryValidationError(
            f"the async search {async_id} holds documents these keywords do not see "
            "(another tenant's, or ones its soft_deletes= hides): get its id with the "
            "keywords it was submitted with",
            field="async_id",
        )


def _page(
    request: SearchRequest, answer: Mapping[str, Any], async_id: str | None
) -> FindResults[Any]:
    """The page of an async search's ``answer``, read as ``find`` reads a search answer."""
    error = answer.get("error")
    if error is not None and not answer.get("is_running"):
        kind = error.get("type") if isinstance(error, Mapping) else None
        reason = error.get("reason") if isinstance(error, Mapping) else error
        raise EsmapperError(
            f"the async search {answer.get('id', async_id)} of {request.target} failed: "
            f"{kind}: {reason}",
            index=request.target,
            error_type=None if kind is None else str(kind),
            reason=None if reason is None else str(reason),
        )
    response = answer.get("response")
    if not isinstance(response, Mapping):
        response = {"hits": {"hits": []}, "_shards": {}}
    hits = (response.get("hits") or {}).get("hits") or []
    most = request.limit + (1 if request._peeks else 0)
    if request.limit > 0 and len(hits) > most:  # read with other keywords than submitted
        raise QueryValidationError(
            f"the async search {answer.get('id', async_id)} holds {len(hits)} hits, more "
            f"than limit={request.limit} reads: get its id with the keywords it was "
            "submitted with (limit=, sort=, includes=...), or pass the page submit returned",
            field="limit",
        )
    shards = shards_of(response)
    results = read_results(request, dict(response), request.page, None, shards)
    if request.source_unknown:  # read by id: the submit's keywords are not known
        _refuse_unseen(request, results, answer.get("id", async_id))
    results._fetch_next = None  # one page per async search
    kept = answer.get("id", async_id)
    results.async_id = str(kept) if kept else None
    results.is_running = bool(answer.get("is_running"))
    results._async_request = request if kept else None
    what = "the async search" if not kept else f"the async search {kept}"
    request._settle(shards, what, results)
    return results
