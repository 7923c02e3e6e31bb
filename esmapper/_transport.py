"""Sending a non-idempotent request exactly once, and telling when its outcome is unknown.

elasticsearch-py resends a request on a connection error, a timeout or a 429/502/503/504
(``max_retries=3`` by default). For a write that is not idempotent (a create, a conditional
write or delete, an alias swap, a ``_reindex`` pass, a bulk of deletes) such a blind resend
turns a lost response into a second, different request: the first one may have been
applied, and the resend then fails (409, 404, ``resource_already_exists_exception``) or
applies twice. The rule everywhere in esmapper: **an unknown outcome is unknown.**

- :func:`once` gives the client to send such a request with: the transport's retries are
  off (``max_retries=0``, ``retry_on_status=()``, ``retry_on_timeout=False``), so the
  caller sees the first error.
- :func:`send_or_read_back` sends a request whose effect can be checked (an index exists,
  a block is set, a document holds what was sent) and settles an unknown outcome with
  that check: applied is done, not applied is sent once more, deliberately.
- :func:`is_unknown_outcome` tells whether an error means "sent, but whether it was applied
  is not known": a connection error or a timeout (``elastic_transport.ConnectionError``,
  ``ConnectionTimeout``) or a response that could not be read (any other
  ``elastic_transport.TransportError``, e.g. a truncated body or an unparsable one). An
  :class:`~elasticsearch.ApiError` is never an unknown outcome: the server answered.

After an unknown outcome the caller reads the state back (``GET`` the document, the alias,
the index) and decides from what is there; it resends deliberately only a request whose
resend is harmless or whose effect it has just seen is missing.

A server that cannot be connected to at all is said once, in esmapper's words:

- :class:`NamedTransport`, the transport of the clients a Mapper makes from URLs, raises
  :class:`~esmapper.errors.ServerUnreachableError` (naming the URLs and what to check:
  connection refused, a host name that does not resolve) where the client raised its
  ``ConnectionError`` after its retries; it is that ``ConnectionError`` too, so every
  rule above (and any caller's ``except TransportError``) applies to it unchanged.
- :func:`quiet_transport_retries` keeps elastic_transport's warning per retry of a
  :class:`NamedTransport`'s request on one line: it logs each retry at WARNING with the
  whole traceback (``exc_info``), a page of traceback per attempt while a server is down;
  the filter puts the error's one-line text in the message instead, unless the
  ``elastic_transport.transport`` logger is enabled for DEBUG (then the tracebacks stay).
  The logger is the process's: the filter leaves the records of every other transport
  (the program's own clients, a client handed to a Mapper) as elastic_transport made them.

:func:`unwarned` gives a view of a client whose answers' ``Warning`` headers are dropped
before the client reads them, for the requests whose server warnings are esmapper's
business, not the caller's (the tasks API's "technical preview", the ``.tasks`` system
index): elasticsearch-py turns each such header into an ``ElasticsearchWarning``, and the
only other way to hide them, switching the process's ``warnings`` filters, is a library
changing its user's process-wide state (and not thread-safe: another thread's warnings
would be swallowed meanwhile, a filter it set undone).
"""

from __future__ import annotations

import dataclasses
import logging
import re
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from elastic_transport import ApiError, HttpHeaders, Transport, TransportApiResponse, TransportError
from elastic_transport import ConnectionError as TransportConnectionError
from elasticsearch import Elasticsearch

from esmapper.errors import ServerUnreachableError

__all__ = [
    "NamedTransport",
    "is_unknown_outcome",
    "once",
    "quiet_transport_retries",
    "send_or_read_back",
    "unreachable",
    "unwarned",
]

T = TypeVar("T")

log = logging.getLogger("esmapper")


def once(client: Elasticsearch) -> Elasticsearch:
    """``client`` with the transport's own retries switched off (a view sharing its
    connections): a request sent through it is sent once, whatever happens."""
    return client.options(max_retries=0, retry_on_status=(), retry_on_timeout=False)


class _Unwarned:
    """A transport whose answers carry no ``Warning`` header (every other attribute is the
    wrapped transport's: its connections, retries and sniffing are shared)."""

    def __init__(self, inner: Transport) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def perform_request(self, *args: Any, **kwargs: Any) -> TransportApiResponse:
        answer = self._inner.perform_request(*args, **kwargs)
        headers = answer.meta.headers
        if "warning" not in headers:
            return answer
        kept = HttpHeaders({k: v for k, v in headers.items() if k.lower() != "warning"})
        return TransportApiResponse(dataclasses.replace(answer.meta, headers=kept), answer.body)


def unwarned(client: Elasticsearch) -> Elasticsearch:
    """A view of ``client`` (its connections shared; its ``options()`` views keep this)
    whose answers' ``Warning`` headers raise no ``ElasticsearchWarning``; the process's
    ``warnings`` filters are not touched. A client that is not an elasticsearch-py client
    (a test's stand-in) is returned as it is."""
    view = client.options()
    if not isinstance(view, Elasticsearch):
        return view
    transport = view.transport
    if not isinstance(transport, _Unwarned):
        view._transport = _Unwarned(transport)  # type: ignore[assignment]
    return view


def is_unknown_outcome(exc: BaseException) -> bool:
    """Whether ``exc``, raised by a request that may have reached the server, leaves its
    outcome unknown: a transport error (connection dropped, timeout, unreadable response),
    not an API error (the server answered with a status)."""
    return isinstance(exc, TransportError) and not isinstance(exc, ApiError)


def send_or_read_back(
    send: Callable[[], T],
    applied: Callable[[], bool],
    *,
    what: str,
    attempts: int = 2,
    logger: logging.Logger = log,
) -> T | None:
    """``send()`` (a request through :func:`once`); on an unknown outcome ask ``applied()``
    (a read of the state): ``True`` -> return ``None`` (done, no answer to return), ``False``
    -> send again, up to ``attempts`` sends in all, then raise the last error. Only for
    requests whose resend is harmless once ``applied()`` said they are not there (a create
    that answers "already exists" is handled by the caller's ``send``). ``what`` names the
    request in the warnings, logged to ``logger`` (a job's own logger, for a job)."""
    for attempt in range(1, attempts + 1):
        try:
            return send()
        except TransportError as exc:
            if not is_unknown_outcome(exc):
                raise
            if applied():
                logger.warning("%s: the answer was lost (%s); read back: it was applied", what, exc)
                return None
            if attempt == attempts:
                raise
            logger.warning(
                "%s: the answer was lost (%s); read back: not applied, resending", what, exc
            )
    raise AssertionError("unreachable")  # pragma: no cover


# -- a server that cannot be reached -------------------------------------------------------

#: What a failed connection's text says, per cause (urllib3 and requests spell them so).
_REFUSED = re.compile(r"Connection refused|ECONNREFUSED|actively refused", re.IGNORECASE)
_UNRESOLVED = re.compile(
    r"Name or service not known|nodename nor servname|Temporary failure in name resolution"
    r"|Failed to resolve|getaddrinfo failed|No address associated with hostname",
    re.IGNORECASE,
)


def _chain(exc: BaseException, *, other_attempts: bool = True) -> Iterator[BaseException]:
    """``exc``, the errors it carries (``errors``) and their causes, each once; without
    ``other_attempts``, only ``exc``'s own attempt: the errors of the other attempts a
    transport error carries (the transport puts the earlier attempts' in ``errors``) are
    left out."""
    seen: set[int] = set()
    queue: list[BaseException] = [exc]
    while queue:
        item = queue.pop(0)
        if id(item) in seen:
            continue
        if not other_attempts and item is not exc and isinstance(item, TransportError):
            continue
        seen.add(id(item))
        yield item
        queue.extend(e for e in getattr(item, "errors", ()) if isinstance(e, BaseException))
        queue.extend(e for e in (item.__cause__, item.__context__) if e is not None)


def _not_connected(attempt: BaseException) -> str | None:
    """Why the one attempt ``attempt`` could not connect (``"refused"``,
    ``"unresolved"``), or ``None``: it may have been sent."""
    chain = list(_chain(attempt, other_attempts=False))
    for item in chain:
        if isinstance(item, ConnectionRefusedError):
            return "refused"
        if isinstance(item, socket.gaierror):
            return "unresolved"
    # a TransportError's str() quotes its ``errors`` (other attempts): its own message only
    text = " ".join(
        str(item.message) if isinstance(item, TransportError) else str(item) for item in chain
    )
    if _UNRESOLVED.search(text):
        return "unresolved"
    if _REFUSED.search(text):
        return "refused"
    return None


def unreachable(exc: BaseException) -> str | None:
    """``"refused"`` or ``"unresolved"`` when ``exc`` (a client's connection error, after
    its retries) says no connection could be made, by its last attempt (that reason) and
    by every earlier one it carries (``errors``); ``None`` for anything else: an attempt
    whose connection dropped or timed out may have been sent, and the request applied."""
    earlier = [e for e in getattr(exc, "errors", ()) if isinstance(e, TransportError)]
    cause = _not_connected(exc)
    if cause is None or any(_not_connected(e) is None for e in earlier):
        return None
    return cause


def _what_to_check(cause: str, urls: list[str]) -> str:
    listed = ", ".join(urls) or "the configured URL"
    if cause == "unresolved":
        return (
            f"cannot reach Elasticsearch at {listed}: the host name does not resolve (DNS). "
            "Check the host name in the URL (a typo, a container name used outside its "
            "network) and the machine's name resolution"
        )
    return (
        f"cannot reach Elasticsearch at {listed}: the connection was refused (nothing listens "
        "there). Check that Elasticsearch is running and that the URL's host and port are "
        "the ones it listens on (9200 by default; http or https as it serves)"
    )


#: ``named``: this thread is in a :class:`NamedTransport`'s request (its retries' warnings
#: are esmapper's to shorten; those of the program's own clients are left as they are)
_sending = threading.local()


class NamedTransport(Transport):
    """The transport of the clients a Mapper makes from URLs: a request that could not
    connect (after the retries) raises :class:`~esmapper.errors.ServerUnreachableError`
    naming the URLs and what to check, chained to the client's ``ConnectionError``."""

    def perform_request(self, method: str, target: str, **kwargs: Any) -> Any:  # type: ignore[override]
        outer = getattr(_sending, "named", False)
        _sending.named = True  # its retry warnings are one line (_OneLineRetries)
        try:
            return super().perform_request(method, target, **kwargs)
        except TransportConnectionError as exc:
            if isinstance(exc, ServerUnreachableError):
                raise
            cause = unreachable(exc)
            if cause is None:
                raise
            urls = [node.base_url for node in self.node_pool.all()]
            raise ServerUnreachableError(
                _what_to_check(cause, urls),
                urls=urls,
                cause=cause,
                errors=exc.errors,
                error_type="connection_refused" if cause == "refused" else "unknown_host",
                reason=str(exc),
            ) from exc
        finally:
            _sending.named = outer


class _OneLineRetries(logging.Filter):
    """elastic_transport's "Retrying request after failure" warnings of the requests of a
    :class:`NamedTransport` without their traceback (the error's text is appended),
    unless the logger is enabled for DEBUG. The records of other transports (the
    program's own clients, a client handed to a Mapper) pass untouched."""

    def filter(self, record: logging.LogRecord) -> bool:
        if (
            record.exc_info
            and getattr(_sending, "named", False)
            and str(record.msg).startswith("Retrying request")
            and not logging.getLogger(record.name).isEnabledFor(logging.DEBUG)
        ):
            error = record.exc_info[1]
            record.msg = f"{record.msg}: %s"
            record.args = (*(record.args or ()), _short(error))  # type: ignore[misc]
            record.exc_info = None
            record.exc_text = None
        return True


def _short(error: BaseException | None) -> str:
    """The innermost error's text: ``[Errno 111] Connection refused``."""
    if error is None:
        return ""
    last = error
    for item in _chain(error):
        last = item
    return f"{type(last).__name__}: {last}"


_RETRY_FILTER = _OneLineRetries()
_filter_lock = threading.Lock()


def quiet_transport_retries() -> None:
    """Install the one-line retry warnings on ``elastic_transport.transport`` (once per
    process; the Mapper calls it)."""
    logger = logging.getLogger("elastic_transport.transport")
    with _filter_lock:
        if _RETRY_FILTER not in logger.filters:
            logger.addFilter(_RETRY_FILTER)
