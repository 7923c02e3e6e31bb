"""The bulk writer: the single path by which esmapper writes documents to Elasticsearch.

What it sends
    Each :class:`BulkAction` becomes its NDJSON lines (an action line such as
    ``{"index":{"_index":"employees","_id":"1","if_seq_no":3,"if_primary_term":1}}`` and,
    except for ``delete``, a source line) exactly once, with :mod:`esmapper._json` (orjson
    when installed). Every action is serialized and checked *before* the first request, so
    an action that cannot be serialized raises and nothing is written. The lines are cut
    into chunks of at most ``chunk_size`` actions and ``max_bytes`` bytes (an action larger
    than ``max_bytes`` on its own is sent alone rather than refused), and each chunk is one
    ``POST /_bulk`` whose body is the already encoded bytes (the client passes bytes through
    its NDJSON serializer untouched). ``refresh`` is sent on every chunk, and a
    ``filter_path`` that keeps only what outcomes read: each item's ``_id``, ``_index``,
    ``status``, ``result``, ``_seq_no``, ``_primary_term`` and ``error`` (whole), and a
    rejected request's ``error`` and ``status`` (``_version``, ``_shards`` and ``took``
    are left out). The answer is read from its bytes when the client can have a copy
    answering bytes (:func:`esmapper._raw_answers.raw_client`: an orjson client, what a
    ``Mapper`` made from a URL uses): one ``msgspec`` item per action
    (:mod:`esmapper._bulk_answers`), no dicts; otherwise (another serializer, a test
    double) from the client's parsed answer, into the same items. An error answer is
    raised as the client raises it.

What comes back
    :meth:`BulkWriter.write` returns one :class:`BulkOutcome` per action, in input order:
    the status, the id the server used (auto-generated ids included), the result and the
    new ``_seq_no``/``_primary_term``, or the server's error type and reason. It does not
    raise for item failures: the caller decides what a 404 delete or a 409 means.

Retries
    Items answered with 429 or 503 are sent again, alone (the other items of the chunk are
    done), after ``min(max_backoff, initial_backoff * 2**attempt)`` seconds, up to
    ``max_retries`` times; items still 429/503 after that are returned as failures with that
    status. A whole ``_bulk`` request answered 429 or 503 is retried the same way. Items
    refused by an index write block (403 ``cluster_block_exception``: a reindex blocks the
    old index from its final catch-up until the alias swap) were not applied either and
    have their own budget, independent of ``max_retries`` and of a call's ``retries=``
    (which may be 0): they are sent again, alone, after the same backoff schedule (at least
    :data:`MIN_BLOCK_BACKOFF`, at most what is left) until ``write_block_wait`` seconds of
    backoff are spent in one :meth:`BulkWriter.write` call, then returned as the 403
    failures. 409 and every other status are never retried. Writes to one document (same
    id and routing, whatever alias they name) are applied in the order given, retried or
    not: a request never carries two of them (a chunk is cut before the second), and chunks
    holding one document are sent one after the other, each with all its retries, so a
    retried item is never applied after a later write of its document. A chunk that gets no
    response (connection error, timeout, unreadable response) is *not* retried either,
    because its index/create/update items may have been applied and a resend would
    duplicate auto-id documents, turn a successful create into a 409, or apply a script
    twice: its items are returned as failures with status 0 and ``error_type``
    ``"connection_error"`` (``"transport_error"`` for an unreadable response;
    ``"not_sent"``, :data:`NOT_SENT`, when no connection could be made at all: a
    :class:`~esmapper.errors.ServerUnreachableError`, nothing of the chunk was sent), and
    the later chunks are still sent. For the same reason
    the writer switches off the client's own transport retries (``max_retries=0``,
    ``retry_on_status=()``) for its requests, so a dropped connection is not resent blindly
    (with several nodes, this also means a refused connection is not tried on another node).

What it raises
    ``ValueError`` / ``TypeError`` for invalid actions (programming errors, before anything
    is sent), and :class:`BulkRequestError` (a :class:`~esmapper.errors.DocumentError`) when
    a whole request is rejected with a status other than 429/503 (e.g. 400, 401, 403, 413),
    or answered with the wrong number of items. That error carries the status, the server's
    ``error_type`` and ``reason``, the ``ids`` of the rejected request, and ``outcomes``:
    every outcome known when it was raised (the earlier chunks, and items of the current
    chunk answered before a retry was rejected), in input order, to be processed like any
    other write. Actions without an outcome there were not applied (unless ``status`` is
    0, the wrong-number-of-items case); later chunks are not sent (a rejected request is a
    configuration or programming error, not a transient one).

Concurrency
    With ``concurrency=N`` (N > 1) the chunks of one :meth:`BulkWriter.write` call are sent
    by up to N threads at once, each chunk with its own 429/503 and write-block retries;
    the outcomes are the same as when sent one by one: one per action, in input order,
    whatever order the chunks were answered in. A call whose actions fit in one chunk,
    or that holds two actions on the same document (same id and routing: their
    order matters), is sent one chunk at a time as with N = 1, so two requests in flight
    never carry one document. When a request is rejected
    (:class:`BulkRequestError`), no further chunk is started, the chunks already in
    flight are waited for, and the error's ``outcomes`` include theirs. The per-call
    ``write_block_wait`` budget is shared by the threads.

What it never does
    It never drops a later chunk because an earlier one had item failures, never retries
    409 or connection failures, never re-serializes an action for a retry, never builds
    intermediate document objects, and never changes the caller's actions or bodies.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

import attrs
from elastic_transport import ConnectionError as TransportConnectionError
from elastic_transport import ConnectionTimeout, TransportError
from elasticsearch import ApiError, Elasticsearch

from esmapper import _json
from esmapper._bulk_answers import BulkItem, decode_items, item_of
from esmapper._bulk_encode import chunks as _chunks
from esmapper._bulk_encode import encode_all as _encode_all
from esmapper._bulk_threads import (
    check_concurrency,
    one_write_per_document,
    same_document_twice,
    send_concurrently,
)
from esmapper._limits import current as current_limits
from esmapper._raw_answers import RawJson, answer, parse, raw_client
from esmapper.errors import BulkItemFailure, BulkRequestError, ServerUnreachableError
from esmapper.model.state import version_of

__all__ = [
    "BulkAction",
    "BulkOp",
    "BulkOutcome",
    "BulkRequestError",
    "BulkStats",
    "BulkWriter",
    "MIN_BLOCK_BACKOFF",
    "NOT_SENT",
    "RETRYABLE_STATUSES",
]

BulkOp = Literal["index", "create", "delete", "update"]

#: Item and request statuses the writer retries with backoff.
RETRYABLE_STATUSES: frozenset[int] = frozenset({429, 503})

#: The ``error_type`` of the items of a chunk no connection could be made for (refused,
#: a host name that does not resolve: :class:`~esmapper.errors.ServerUnreachableError`):
#: nothing of it was sent, so it was not applied (unlike a ``"connection_error"``).
NOT_SENT = "not_sent"

#: The shortest wait (seconds) before resending items refused by a write block, so that
#: ``write_block_wait`` is spent even with ``initial_backoff=0``.
MIN_BLOCK_BACKOFF = 0.05

#: What the outcomes read of a ``_bulk`` answer (and a whole request's error).
_FILTER_PATH = (
    "items.*._id,items.*._index,items.*.status,items.*.result,items.*._seq_no,"
    "items.*._primary_term,items.*.error,error,status"
)

_HEADERS = {"accept": "application/json", "content-type": "application/x-ndjson"}


@attrs.define(slots=True)
class BulkAction:
    """One write in a bulk request.

    ``body`` is the ``_source`` for ``index``/``create``, the update body (``{"doc": ...}``,
    ``{"script": ...}``, with ``upsert``/``doc_as_upsert`` as needed) for ``update``, and
    ``None`` for ``delete``. ``id`` may be ``None`` for ``index``/``create`` (the server
    generates one). ``if_seq_no``/``if_primary_term`` go together and make the write
    conditional; ``retry_on_conflict`` is only valid for ``update``. ``ref`` is any object
    of the caller's (e.g. the model instance), handed back untouched in the outcome.
    ``require_alias`` (``index``/``create``/``update``) makes Elasticsearch refuse the item
    with a 404 ``index_not_found_exception`` unless ``index`` is an alias, instead of
    creating an index of that name. ``pipeline`` (``index``/``create`` only: the Update API
    has none) names the ingest pipeline the document runs through.

    ``source`` (``index``/``create``): the body already encoded, the JSON bytes of the
    ``_source`` (what the write pipeline's compiled encoder makes): sent as they are, and
    ``body`` may then be left ``None``: reading ``body`` decodes them (once). Assigning
    ``body`` drops ``source``.
    """

    op: BulkOp
    index: str
    id: str | None = None
    _body: Mapping[str, Any] | None = attrs.field(default=None, alias="body")
    if_seq_no: int | None = None
    if_primary_term: int | None = None
    routing: str | None = None
    retry_on_conflict: int | None = None
    ref: Any = None
    require_alias: bool = False
    pipeline: str | None = None
    source: bytes | None = None

    @property
    def body(self) -> Mapping[str, Any] | None:
        """The body (the ``_source`` of an ``index``/``create``): decoded from ``source``
        the first time it is read when only that was given."""
        body = self._body
        if body is None and self.source is not None:
            body = self._body = _json.loads(self.source)
        return body

    @body.setter
    def body(self, value: Mapping[str, Any] | None) -> None:
        self._body = value
        self.source = None

    @property
    def body_as_held(self) -> Mapping[str, Any] | bytes | None:
        """The body as held, without decoding: the dict, else the ``source`` bytes."""
        body = self._body
        return self.source if body is None else body


@attrs.define(slots=True)
class BulkOutcome:
    """The server's answer for one :class:`BulkAction`.

    ``ok`` is true for a 2xx item status (a delete of a missing document is 404 with
    ``result == "not_found"``, so not ok). ``status`` is 0 when the chunk got no response
    (``error_type`` ``"connection_error"``/``"transport_error"``, or :data:`NOT_SENT`:
    no connection could be made, the item was not applied). ``id`` and ``index`` are
    what the server used (the generated id for auto-id writes, the concrete index behind an
    alias), falling back to the action's when the server did not say.
    """

    action: BulkAction
    ok: bool
    status: int
    id: str | None
    index: str | None
    result: str | None = None
    seq_no: int | None = None
    primary_term: int | None = None
    error_type: str | None = None
    reason: str | None = None
    #: the item's error object as answered (``None``: none, or not from an answer): its
    #: causes (a script's line and position) beyond ``error_type`` and ``reason``
    error: Mapping[str, Any] | None = None

    @property
    def version(self) -> str | None:
        """``"<primary_term>:<seq_no>"`` after a write that has both, else ``None``."""
        return version_of(self.seq_no, self.primary_term)[0]

    def to_failure(self) -> BulkItemFailure:
        """This outcome as an :class:`~esmapper.errors.BulkItemFailure` (``document=ref``)."""
        error_type, reason = self.error_type, self.reason
        if error_type is None and self.result == "not_found":
            error_type = "not_found"
            reason = reason or f'Document "{self.id}" could not be found'
        return BulkItemFailure(
            id=self.id,
            index=self.index,
            op=self.action.op,
            status=self.status,
            error_type=error_type,
            reason=reason,
            document=self.action.ref,
        )


@attrs.define(slots=True)
class BulkStats:
    """Counters of one :meth:`BulkWriter.write` call.

    ``requests`` counts every ``_bulk`` request sent (retries included), ``retries`` the
    retry requests among them, ``retried_items`` the items those carried, ``bytes_sent`` the
    request bodies, ``backoffs`` the sleeps in order, ``chunks`` the initial chunks.
    """

    requests: int = 0
    retries: int = 0
    retried_items: int = 0
    bytes_sent: int = 0
    chunks: int = 0
    backoffs: list[float] = attrs.Factory(list)
    _lock: threading.Lock = attrs.field(factory=threading.Lock, repr=False, eq=False)

    def count_request(self, size: int, retried_items: int) -> None:
        """Count one request of ``size`` bytes (a retry when ``retried_items``)."""
        with self._lock:
            self.requests += 1
            self.bytes_sent += size
            if retried_items:
                self.retries += 1
                self.retried_items += retried_items

    def count_backoff(self, delay: float) -> None:
        """Record one backoff sleep."""
        with self._lock:
            self.backoffs.append(delay)


def _error_fields(error: Any) -> tuple[str | None, str | None]:
    """``(type, reason)`` of an Elasticsearch error object (or a plain string)."""
    if isinstance(error, Mapping):
        etype = error.get("type")
        reason = error.get("reason")
        cause = error.get("caused_by")
        if isinstance(cause, Mapping) and (cause.get("type") or cause.get("reason")):
            reason = f"{reason} (caused by {cause.get('type')}: {cause.get('reason')})"
        return (str(etype) if etype is not None else None), (
            str(reason) if reason is not None else None
        )
    if error is None:
        return None, None
    return None, str(error)


def _api_error_fields(e: ApiError) -> tuple[str | None, str | None]:
    body = e.body
    if isinstance(body, Mapping) and "error" in body:
        etype, reason = _error_fields(body["error"])
        return etype, reason or e.message
    return None, str(body) if body else e.message


class BulkWriter:
    """Writes :class:`BulkAction` s through the ``_bulk`` API (see the module docstring).

    ``chunk_size`` and ``max_bytes`` bound each request; ``max_retries``,
    ``initial_backoff`` and ``max_backoff`` shape the 429/503 retries; ``write_block_wait``
    is how many seconds of backoff one :meth:`write` spends on items refused by a write
    block (0: none); ``concurrency`` is how many chunks of one :meth:`write` may be in
    flight at once (1, the default: one after the other; see the module docstring);
    ``sleep`` is called with each backoff in seconds (inject a recorder in
    tests). A writer holds no per-call
    state except :attr:`last_stats`, so one writer can serve several threads (``last_stats``
    is then the stats of whichever call finished last).
    """

    def __init__(
        self,
        client: Elasticsearch,
        *,
        chunk_size: int = 500,
        max_bytes: int = 10 * 1024 * 1024,
        max_retries: int = 3,
        initial_backoff: float = 0.5,
        max_backoff: float = 30.0,
        write_block_wait: float = 30.0,
        concurrency: int = 1,
        sleep: Callable[[float], object] = time.sleep,
    ) -> None:
        if chunk_size < 1:
            raise ValueError("chunk_size must be at least 1")
        if max_bytes < 1:
            raise ValueError("max_bytes must be at least 1")
        if max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        if initial_backoff < 0 or max_backoff < 0:
            raise ValueError("backoff times must be >= 0")
        if not write_block_wait >= 0:
            raise ValueError("write_block_wait must be >= 0 seconds")
        self.concurrency = check_concurrency(concurrency)
        self.client = client
        # The writer owns the retry policy: no blind resend of a bulk body by the transport.
        self._client = client.options(max_retries=0, retry_on_status=())
        #: the same, its JSON answers left as bytes (``None``: the client cannot have
        #: such a copy): the items are read by :func:`esmapper._bulk_answers.decode_items`
        self._raw_client = raw_client(self._client)
        self.chunk_size = chunk_size
        self.max_bytes = max_bytes
        self.max_retries = max_retries
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.write_block_wait = float(write_block_wait)
        self.sleep = sleep
        self.last_stats: BulkStats | None = None

    def backoff(self, attempt: int) -> float:
        """Seconds to wait before retry number ``attempt + 1`` (``attempt`` counts from 0)."""
        return float(min(self.max_backoff, self.initial_backoff * 2**attempt))

    def write(
        self,
        actions: Iterable[BulkAction],
        *,
        refresh: bool | Literal["wait_for"] | None = None,
    ) -> list[BulkOutcome]:
        """Send ``actions`` and return one outcome per action, in input order.

        ``refresh`` (``True``, ``False``, ``"wait_for"`` or ``None`` to leave it out) is
        passed to every chunk's request. Inside a call with ``timeout=``/``retries=`` (see
        :mod:`esmapper._limits`) each request uses that ``request_timeout`` and items are
        retried up to ``retries`` times instead of ``max_retries``; items refused by a write
        block are retried for ``write_block_wait`` seconds of backoff in all, whatever
        ``retries`` says (module docstring).
        """
        actions = list(actions)
        return outcomes_of(actions, self._write(actions, refresh=refresh))

    def _write(
        self,
        actions: Sequence[BulkAction],
        *,
        refresh: bool | Literal["wait_for"] | None = None,
    ) -> list[BulkAnswer]:
        """:meth:`write` without an outcome object per applied item: one :data:`BulkAnswer`
        per action, in input order (the document write pipeline reads these)."""
        params: dict[str, str] = {"filter_path": _FILTER_PATH}
        if refresh is not None:
            if refresh == "wait_for":
                params["refresh"] = "wait_for"
            elif isinstance(refresh, bool):
                params["refresh"] = "true" if refresh else "false"
            else:
                raise ValueError(f"refresh must be a bool, 'wait_for' or None, not {refresh!r}")
        limits = current_limits()
        client, raw = self._client, self._raw_client
        if limits.timeout is not None:
            client = client.options(request_timeout=limits.timeout)
            raw = None if raw is None else raw.options(request_timeout=limits.timeout)
        max_retries = self.max_retries if limits.retries is None else limits.retries
        blobs = _encode_all(actions)
        outcomes: list[BulkAnswer | None] = [None] * len(actions)
        stats = BulkStats()
        blocked = _BlockWait(self.write_block_wait)
        try:
            chunks = _chunks(blobs, self.chunk_size, self.max_bytes)
            repeats = same_document_twice(actions)
            if repeats:  # their order matters: one write per document and request
                chunks = one_write_per_document(chunks, actions)
            stats.chunks = len(chunks)
            send = functools.partial(
                self._send_chunk,
                actions=actions,
                blobs=blobs,
                outcomes=outcomes,
                params=params,
                stats=stats,
                client=client,
                raw=raw,
                max_retries=max_retries,
                blocked=blocked,
            )
            threads = min(self.concurrency, len(chunks))
            if threads > 1 and not repeats:
                try:
                    send_concurrently(chunks, send, threads)
                except BulkRequestError as e:
                    # the chunks that were in flight with the rejected one are answered
                    e.outcomes = _known(actions, outcomes)
                    raise
            else:
                for chunk in chunks:
                    send(chunk)
        finally:
            self.last_stats = stats
        return [o for o in outcomes if o is not None]

    def _send_chunk(
        self,
        chunk: list[int],
        *,
        actions: Sequence[BulkAction],
        blobs: list[bytes],
        outcomes: list[BulkAnswer | None],
        params: Mapping[str, str],
        stats: BulkStats,
        client: Elasticsearch,
        raw: Elasticsearch | None,
        max_retries: int,
        blocked: _BlockWait,
    ) -> None:
        """Send one chunk and its 429/503 and write-block retries; fills ``outcomes`` at the
        chunk's positions. ``raw``: ``client``'s copy answering bytes (the items decoded
        by :func:`esmapper._bulk_answers.decode_items`), if it has one."""
        pending = chunk
        attempt = 0
        while True:
            body = b"".join([blobs[i] for i in pending])
            stats.count_request(len(body), len(pending) if attempt else 0)
            request = functools.partial(
                (client if raw is None else raw).perform_request,
                "POST",
                "/_bulk",
                params=params,
                headers=_HEADERS,
                body=body,
                endpoint_id="bulk",
                path_parts={},
            )
            try:  # (an error answer of the raw copy raised as the client raises it)
                items = _items_of((request() if raw is None else answer(request)).body)
            except ApiError as e:
                status = int(e.meta.status)
                etype, reason = _api_error_fields(e)
                if status not in RETRYABLE_STATUSES:
                    raise BulkRequestError(
                        f"the _bulk request for {len(pending)} actions was rejected with "
                        f"status {status}: {etype}: {reason}",
                        status=status,
                        outcomes=_known(actions, outcomes),
                        index=actions[pending[0]].index,
                        ids=[actions[i].id for i in pending],
                        error_type=etype,
                        reason=reason,
                    ) from e
                if attempt < max_retries:
                    delay = self.backoff(attempt)
                    attempt += 1
                    stats.count_backoff(delay)
                    self.sleep(delay)
                    continue
                for i in pending:
                    outcomes[i] = _failed(actions[i], status, etype, reason)
                return
            except TransportError as e:
                # No usable response: the items may or may not have been applied (but not
                # when no connection could be made at all: NOT_SENT)
                if isinstance(e, ServerUnreachableError):
                    kind = NOT_SENT
                elif isinstance(e, (TransportConnectionError, ConnectionTimeout)):
                    kind = "connection_error"
                else:
                    kind = "transport_error"
                for i in pending:
                    outcomes[i] = _failed(actions[i], 0, kind, f"{type(e).__name__}: {e}")
                return

            if items is None or len(items) != len(pending):
                got = len(items) if isinstance(items, list) else "no"
                raise BulkRequestError(
                    f"the _bulk response has {got} items for {len(pending)} actions",
                    status=0,
                    outcomes=_known(actions, outcomes),
                    index=actions[pending[0]].index,
                    ids=[actions[i].id for i in pending],
                )
            retry: list[int] = []
            can_retry = attempt < max_retries
            throttled = waiting = False
            for i, result in zip(pending, items, strict=True):
                status = result.status
                if 200 <= status < 300 and result.error is None:
                    outcomes[i] = result  # the common case: the item itself is the answer
                elif can_retry and status in RETRYABLE_STATUSES:
                    retry.append(i)
                    throttled = True
                elif status == 403 and blocked.left > 0 and _write_blocked(result):
                    retry.append(i)  # not applied: sent again once the block is gone
                    waiting = True
                else:
                    outcomes[i] = _outcome(actions[i], result)
            if not retry:
                return
            if throttled:
                delay = self.backoff(attempt)
                attempt += 1
            else:
                delay = min(blocked.left, max(MIN_BLOCK_BACKOFF, self.backoff(blocked.rounds)))
            if waiting:
                delay = blocked.spend(delay)
            stats.count_backoff(delay)
            self.sleep(delay)
            pending = retry


class _BlockWait:
    """What is left of one :meth:`BulkWriter.write` call's ``write_block_wait``."""

    __slots__ = ("_lock", "left", "rounds")

    def __init__(self, seconds: float) -> None:
        self.left = seconds
        self.rounds = 0
        self._lock = threading.Lock()

    def spend(self, delay: float) -> float:
        """Take ``delay`` seconds (at most what is left) off the budget; returns what was
        taken. Safe to call from several threads."""
        with self._lock:
            delay = min(delay, self.left)
            self.left = max(0.0, self.left - delay)
            if self.left < 1e-6:  # rounding: nothing meaningful left to wait
                self.left = 0.0
            self.rounds += 1
            return delay


def _items_of(body: Any) -> list[BulkItem] | None:
    """The items of a ``_bulk`` answer: decoded from its bytes (an answer of the raw
    copy), else read from the parsed answer (``None``: it has no list of items). An answer
    the types refuse is parsed as the user's client parses it (not JSON: raises
    ``elastic_transport.SerializationError``, a transport error, as that client does)."""
    if isinstance(body, RawJson):
        found = decode_items(body)
        if found is not None:
            return found
        body = parse(body)
    items = body.get("items") if isinstance(body, Mapping) else None
    if not isinstance(items, list):
        return None
    parsed: list[BulkItem] = []
    for item in items:
        (result,) = item.values()  # each item is {op: {...}}
        parsed.append(item_of(result))
    return parsed


def _write_blocked(result: BulkItem) -> bool:
    """An item refused by an index write block (``PUT /<index>/_block/write``, which a
    reindex sets on the old index just before its alias swap): not applied, so it is safe
    to send again; the retry goes through the alias to the new index."""
    error = result.error
    return (
        result.status == 403
        and isinstance(error, Mapping)
        and error.get("type") == "cluster_block_exception"
        and "index write (api)" in str(error.get("reason", ""))
    )


def _outcome(action: BulkAction, r: BulkItem) -> BulkOutcome:
    """The outcome of one item (the action's id and index when the server did not say)."""
    error, status = r.error, r.status
    etype, reason = (None, None) if error is None else _error_fields(error)
    return BulkOutcome(
        action,
        error is None and 200 <= status < 300,
        status,
        action.id if r._id is None else r._id,
        action.index if r._index is None else r._index,
        r.result,
        r._seq_no,
        r._primary_term,
        etype,
        reason,
        error if isinstance(error, Mapping) else None,
    )


def _failed(action: BulkAction, status: int, etype: str | None, reason: str | None) -> BulkOutcome:
    return BulkOutcome(
        action=action,
        ok=False,
        status=status,
        id=action.id,
        index=action.index,
        error_type=etype,
        reason=reason,
    )


#: What the writer keeps for one action (internal: :meth:`BulkWriter.write` returns
#: outcomes): the server's item itself (a :class:`~esmapper._bulk_answers.BulkItem`) for a
#: write answered 2xx without an error, else its :class:`BulkOutcome`.
BulkAnswer = BulkOutcome | BulkItem


def outcome_of(action: BulkAction, answer: BulkAnswer) -> BulkOutcome:
    """The :class:`BulkOutcome` of one :data:`BulkAnswer` (the item read with defaults: the
    action's id and index when the server did not say)."""
    if isinstance(answer, BulkItem):
        return _outcome(action, answer)
    return answer


def outcomes_of(actions: Sequence[BulkAction], answers: Sequence[BulkAnswer]) -> list[BulkOutcome]:
    """The :class:`BulkOutcome` of each answer (``answers[i]`` is ``actions[i]``'s)."""
    return [outcome_of(a, answer) for a, answer in zip(actions, answers, strict=True)]


def _known(
    actions: Sequence[BulkAction], answers: Sequence[BulkAnswer | None]
) -> list[BulkOutcome]:
    """The outcomes of the answers received so far, in input order."""
    return [outcome_of(a, o) for a, o in zip(actions, answers, strict=True) if o is not None]
