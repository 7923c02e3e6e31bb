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
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from elastic_transport import ApiError, TransportError
from elasticsearch import Elasticsearch

__all__ = ["is_unknown_outcome", "once", "send_or_read_back"]

T = TypeVar("T")

log = logging.getLogger("esmapper")


def once(client: Elasticsearch) -> Elasticsearch:
    """``client`` with the transport's own retries switched off (a view sharing its
    connections): a request sent through it is sent once, whatever happens."""
    return client.options(max_retries=0, retry_on_status=(), retry_on_timeout=False)


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
