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

from elastic_transport import ApiError, TransportError
from elasticsearch import Elasticsearch

__all__ = ["is_unknown_outcome", "once"]


def once(client: Elasticsearch) -> Elasticsearch:
    """``client`` with the transport's own retries switched off (a view sharing its
    connections): a request sent through it is sent once, whatever happens."""
    return client.options(max_retries=0, retry_on_status=(), retry_on_timeout=False)


def is_unknown_outcome(exc: BaseException) -> bool:
    """Whether ``exc``, raised by a request that may have reached the server, leaves its
    outcome unknown: a transport error (connection dropped, timeout, unreadable response),
    not an API error (the server answered with a status)."""
    return isinstance(exc, TransportError) and not isinstance(exc, ApiError)
