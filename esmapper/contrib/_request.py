"""The one rule for a session per web request, shared by every web integration.

Each integration (:mod:`esmapper.contrib.flask`, :mod:`esmapper.contrib.fastapi`,
:mod:`esmapper.contrib.django`'s middleware, and any other) ends a request's session here:

1. **open**: :meth:`RequestSession.open` (``mapper.session(**options)``, the options checked
   once at set-up time by :func:`checked_options`).
2. **settle**, once the request produced a response and *before* that response is sent:
   :meth:`RequestSession.settle` with ``commit=commit_when(response)`` (by default
   :func:`commit_on_success`: the status is below 400). A commit that raises leaves the
   session settled (it is not tried again) and its error goes through the framework's error
   handling, so the client gets an error response instead of a success for data that was
   never written. An error response rolls back: nothing the request changed is written.
3. **end**, always (the request is over, with the exception that ended it, if any):
   :meth:`RequestSession.end`. A session that step 2 did not settle is rolled back when
   there was an exception, committed otherwise; then it is closed, in every case (also when
   the commit raises).

A :class:`RequestSession` is a context manager whose exit is step 3, so a synchronous
framework's hook (a Django middleware) is::

    with RequestSession.open(mapper, options) as held:
        response = get_response(request)          # an exception: rolled back, closed
        held.settle(commit=commit_when(response))  # before the response is sent
    return response                                # closed by now

:data:`ERROR_STATUSES` and :func:`error_body` say which HTTP status and JSON body an
integration's error handlers give an esmapper error that reaches them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from esmapper.errors import (
    DocumentNotFoundError,
    DocumentValidationError,
    DuplicateDocumentError,
    EsmapperError,
    QueryValidationError,
    VersionConflictError,
)
from esmapper.options import Options

if TYPE_CHECKING:
    from esmapper.mapper import Mapper
    from esmapper.session import Session

__all__ = [
    "ERROR_STATUSES",
    "RequestSession",
    "checked_options",
    "commit_on_success",
    "error_body",
    "error_status",
]

#: The HTTP status of each esmapper error the integrations' handlers answer: a missing
#: document is 404, a stale version or an existing id 409 (the client may read again and
#: retry), an invalid filter, sort or aggregation expression or a document its model's
#: rules refuse 422.
ERROR_STATUSES: Mapping[type[EsmapperError], int] = {
    DocumentNotFoundError: 404,
    VersionConflictError: 409,
    DuplicateDocumentError: 409,
    DocumentValidationError: 422,
    QueryValidationError: 422,
}


def commit_on_success(status: int) -> bool:
    """The default rule: a request whose response has ``status`` commits when the status is
    below 400 (a success or a redirect); an error response (4xx/5xx) rolls back."""
    return status < 400


def checked_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` for ``mapper.session()``, checked now (at set-up time, not on the first
    request): raises ``TypeError`` for an unknown option, ``ValueError`` for a bad value."""
    Options().merge(**options)
    return dict(options)


@attrs.define
class RequestSession:
    """The session of one request and whether it was already committed or rolled back."""

    session: Session
    settled: bool = False

    @classmethod
    def open(cls, mapper: Mapper, options: Mapping[str, Any]) -> RequestSession:
        """A new session of ``mapper`` with ``options`` (nothing is sent)."""
        return cls(mapper.session(**options))

    def settle(self, *, commit: bool) -> None:
        """Commit (``commit`` true: flushes the pending writes in bulk requests, raising
        what the flush raises) or roll back (nothing is sent), once: later calls do nothing.
        The session counts as settled before the commit runs, so a failing commit is not
        tried again by :meth:`end`."""
        if self.settled:
            return
        self.settled = True
        if commit:
            self.session.commit()
        else:
            self.session.rollback()

    def end(self, error: BaseException | None = None) -> None:
        """The request is over (``error``: the exception that ended it). Unsettled, the
        session commits without ``error`` and rolls back with one; it is closed in every
        case (a failing commit's error is raised after the close)."""
        try:
            self.settle(commit=error is None)
        finally:
            self.session.close()

    def __enter__(self) -> RequestSession:
        return self

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        self.end(exc)


def error_status(error: BaseException) -> int | None:
    """The HTTP status :data:`ERROR_STATUSES` gives ``error`` (by its class, subclasses
    included), or ``None`` when it is none of them."""
    for kind, status in ERROR_STATUSES.items():
        if isinstance(error, kind):
            return status
    return None


def error_body(error: EsmapperError) -> dict[str, Any]:
    """The JSON body of an error response for ``error``: ``detail`` (the message) and
    ``error`` (the class name), with the document ``ids`` involved, the ``field`` of a
    document validation error and the ``field``, ``position`` and ``expression`` of a query
    error when known (never the index name: a client has no use for it)."""
    body: dict[str, Any] = {"detail": str(error), "error": type(error).__name__}
    ids = [id for id in error.ids if id is not None]
    if ids:
        body["ids"] = ids
    if isinstance(error, DocumentValidationError) and error.field is not None:
        body["field"] = error.field
    if isinstance(error, QueryValidationError):
        for name in ("field", "position", "expression"):
            value = getattr(error, name)
            if value is not None:
                body[name] = value
    return body
