"""One esmapper :class:`~esmapper.session.Session` per Django request, by the rule every
esmapper web integration shares (the guide's "Sessions in web apps" page, section "The rule
for every request"), as Django's ``ATOMIC_REQUESTS`` does for the database.

Add the middleware (``esmapper.contrib.django.middleware.EsmapperMiddleware``) to
``settings.MIDDLEWARE``; a view gets the request's session with
:func:`esmapper.contrib.django.session`::

    from esmapper.contrib.django import session

    def birthday(request, id):
        employee = session(request).get(Employee, id)
        employee.age += 1        # tracked; written when the request succeeds
        return redirect("show", id=id)

What happens in each request:

1. The first :func:`session` call of the request opens its session,
   ``mapper.session(**settings.ESMAPPER["session"])`` (a request that asks for none opens
   none, and builds no mapper).
2. Once the view's response came back through the middlewares below this one, **before it
   is sent**: committed when ``commit_when(response)`` is true (by default: the status is
   below 400), rolled back otherwise. A failing commit is an error response, never a
   success for data that was not written: an error with a status (a stale version: 409) is
   answered as below, any other goes on to Django's 500 handling.
3. An exception out of the view that reaches this middleware rolls back; the session is
   closed in every case. Then the rows the sync helpers recorded during the request (see
   :func:`esmapper.contrib.django.sync`) are written, whatever the response: the database
   committed them (a failing write is logged; it does not change the response).

Errors (:func:`error_status`): ``DocumentNotFoundError`` raised by a view, or by the
commit, is a 404, ``VersionConflictError`` and ``DuplicateDocumentError`` 409,
``DocumentValidationError`` and ``QueryValidationError`` 422. A request that asks for JSON
(its ``Accept`` prefers ``application/json``, or it sent JSON) gets the JSON body
``{"detail", "error", "ids", ...}``; any other a plain-text one; a 404 of an HTML request
goes through Django's own 404 handling (``Http404``: the site's 404 page).

The middleware is synchronous: under ASGI, Django runs it, and the views below it, in a
thread (``sync_to_async``), one request per thread. An ``async def`` view cannot use the
session (each call would block the event loop); :func:`session` refuses to be called from
a running event loop (``RuntimeError``). A ``StreamingHttpResponse`` body runs after the
session was closed: read what it streams in the view.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase, JsonResponse

from esmapper.contrib import _request
from esmapper.contrib._request import RequestSession, error_status
from esmapper.contrib.django._mapper import get_config, get_mapper
from esmapper.errors import EsmapperError
from esmapper.session import Session

if TYPE_CHECKING:
    from esmapper.contrib.django._sync import Sync

__all__ = [
    "CommitPredicate",
    "EsmapperMiddleware",
    "RequestState",
    "commit_on_success",
    "current_request_state",
    "error_response",
    "error_status",
    "session",
]

#: ``commit_when(response) -> bool``: whether a request that produced ``response`` commits.
CommitPredicate = Callable[[HttpResponseBase], bool]
#: The attribute of the request that holds its :class:`RequestState`.
_ATTRIBUTE = "_esmapper"
_current: contextvars.ContextVar[RequestState | None] = contextvars.ContextVar(
    "esmapper_django_request", default=None
)


def commit_on_success(response: HttpResponseBase) -> bool:
    """The default ``commit_when``: commit unless the response is an error (status >= 400)."""
    return _request.commit_on_success(response.status_code)


class RequestState:
    """What the middleware keeps for one request: its session, once opened, and the rows
    the sync helpers must write when it ends."""

    def __init__(self) -> None:
        self.held: RequestSession | None = None
        self.ended = False
        #: ``(sync, database alias) -> primary keys``, in the order they were committed
        self.synced: dict[tuple[Sync[Any], str], dict[Any, None]] = {}

    def session(self) -> Session:
        if self.ended:
            raise RuntimeError(
                "the request's esmapper session is over (committed or rolled back, and "
                "closed, before the response was sent): open one with "
                "`with get_mapper().session() as session:` and commit it yourself"
            )
        if self.held is None:
            self.held = RequestSession.open(get_mapper(), get_config().session_options)
        return self.held.session

    def record(self, sync: Sync[Any], alias: str, pk: Any) -> None:
        """Write ``pk``'s row through ``sync`` when the request ends."""
        self.synced.setdefault((sync, alias), {})[pk] = None

    def write_synced(self) -> None:
        """Write the recorded rows (each sync's in one pass, by
        :meth:`~esmapper.contrib.django.Sync.write_committed`: a failure is logged, the
        response stands, since the database committed them)."""
        while self.synced:
            (sync, alias), pks = self.synced.popitem()
            sync.write_committed(list(pks), alias)


def current_request_state() -> RequestState | None:
    """The state of the request this thread (or task) serves, if any."""
    return _current.get()


def session(request: HttpRequest) -> Session:
    """The request's :class:`~esmapper.session.Session` (opened on first use).

    Raises ``RuntimeError`` when :class:`EsmapperMiddleware` is not in
    ``settings.MIDDLEWARE`` (or the request is over), or when called from ``async`` code
    (the session would block the event loop)."""
    state = getattr(request, _ATTRIBUTE, None)
    if not isinstance(state, RequestState):
        raise RuntimeError(
            "this request has no esmapper session: add "
            '"esmapper.contrib.django.middleware.EsmapperMiddleware" to settings.MIDDLEWARE'
        )
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return state.session()
    raise RuntimeError(
        "the esmapper session is synchronous and would block the event loop: use it from a "
        "def view (Django runs it in a thread under ASGI), or wrap the code using it in "
        "asgiref's sync_to_async"
    )


def _wants_json(request: HttpRequest) -> bool:
    if (request.content_type or "").endswith("json"):
        return True
    accept = request.headers.get("Accept", "")
    return "json" in accept and "html" not in accept


def error_response(request: HttpRequest, error: EsmapperError) -> HttpResponse:
    """The response for ``error`` (status from ``_request.ERROR_STATUSES``): JSON for a JSON
    request, plain text otherwise. Raises ``Http404`` for the 404 of a non-JSON request (the
    site's 404 page), and ``error`` itself when it has no status."""
    status = error_status(error)
    if status is None:
        raise error
    if _wants_json(request):
        return JsonResponse(_request.error_body(error), status=status)
    if status == 404:
        raise Http404(str(error)) from error
    return HttpResponse(str(error), status=status, content_type="text/plain; charset=utf-8")


class EsmapperMiddleware:
    """The middleware (see the module docstring). Subclass it to change
    :meth:`commit_when` or :meth:`error_response`."""

    sync_capable = True
    async_capable = False

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response
        get_config()  # bad settings: fail at start-up

    def commit_when(self, response: HttpResponseBase) -> bool:
        """Whether a request that produced ``response`` commits (default:
        :func:`commit_on_success`)."""
        return commit_on_success(response)

    def error_response(self, request: HttpRequest, error: EsmapperError) -> HttpResponse:
        """The response for an esmapper error with a status (see :func:`error_response`)."""
        return error_response(request, error)

    def process_exception(
        self, request: HttpRequest, exception: Exception
    ) -> HttpResponseBase | None:
        """An esmapper error out of a view becomes its 404/409/422 response."""
        if isinstance(exception, EsmapperError) and _request.error_status(exception):
            return self.error_response(request, exception)
        return None

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        state = RequestState()
        setattr(request, _ATTRIBUTE, state)
        token = _current.set(state)
        try:
            try:
                response = self.get_response(request)
            except BaseException as exc:
                self._end(state, exc)
                raise
            response = self._settle(request, state, response)
            self._end(state, None)
            return response
        finally:
            _current.reset(token)

    def _settle(
        self, request: HttpRequest, state: RequestState, response: HttpResponseBase
    ) -> HttpResponseBase:
        held = state.held
        if held is None:
            return response
        try:
            held.settle(commit=self.commit_when(response))
        except EsmapperError as exc:
            if _request.error_status(exc) is None:
                self._end(state, exc)
                raise
            try:
                return self.error_response(request, exc)
            except Http404:
                self._end(state, exc)
                raise
        except BaseException as exc:
            self._end(state, exc)
            raise
        return response

    @staticmethod
    def _end(state: RequestState, error: BaseException | None) -> None:
        """Close the session (rolled back if unsettled with ``error``), then write the
        recorded rows (their failures are logged); an error of the close is raised after
        the writes."""
        if state.ended:
            return
        state.ended = True
        try:
            if state.held is not None:
                state.held.end(error)
        finally:
            state.write_synced()
