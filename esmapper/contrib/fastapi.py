"""One esmapper :class:`~esmapper.session.Session` per FastAPI request.

Usage::

    import esmapper as em
    from fastapi import FastAPI
    from esmapper.contrib.fastapi import EsmapperFastAPI, MapperDep, SessionDep

    def build_mapper() -> em.Mapper:          # called by the lifespan, in each worker
        return em.Mapper("http://127.0.0.1:9200", models=[Employee])

    esm = EsmapperFastAPI(build_mapper, consistency="wait")   # session options
    app = FastAPI(lifespan=esm.lifespan)      # builds the mapper at start-up, closes it after
    esm.init_app(app)                         # before the routes: the route class, the handlers

    @app.post("/employees/{id}/birthday")
    def birthday(id: str, session: SessionDep) -> dict[str, int]:
        employee = session.get(Employee, id)
        if employee is None:
            raise em.DocumentNotFoundError(id)     # the handler answers 404
        employee.age += 1       # tracked by the session; written before the response is sent
        return {"age": employee.age}

    @app.get("/stats")
    def stats(mapper: MapperDep) -> dict[str, int]:
        return {"employees": mapper.repository(Employee).count()}

What happens in each request (the rule every esmapper web integration shares: the guide's
"Sessions in web apps" page, section "The rule for every request"):

1. The first dependency asking for :data:`SessionDep` (or :data:`SessionRunnerDep`) opens
   the request's session, ``mapper.session(**session_options)``; a request that asks for
   none opens none. Every dependency of the request gets the same session.
2. Once the endpoint returned and its response is built, **before it is sent**, the route
   class :class:`EsmapperRoute` (which :meth:`EsmapperFastAPI.init_app` makes the app's)
   commits the session when ``commit_when(response)`` is true (by default: the status is
   below 400; the commit runs in the threadpool) and rolls it back otherwise. A failing
   commit is an error response, never a success for data that was not written: its error
   goes through the app's exception handlers (a ``VersionConflictError`` is a 409), else it
   is a 500.
3. An exception out of the endpoint or a dependency (``HTTPException`` included) rolls the
   session back. The session is closed in every case.

Write errors are answered by the handlers :meth:`EsmapperFastAPI.init_app` installs:
``DocumentNotFoundError`` 404, ``VersionConflictError`` and ``DuplicateDocumentError`` 409,
``DocumentValidationError`` and ``QueryValidationError`` 422, each with a JSON body
``{"detail": message, "error": class name, "ids": [...]}`` (a validation error adds its
``field``, a query error ``field``, ``position`` and ``expression``, when known).

**Threads and ``async def``.** The mapper is shared by every request and thread-safe; a
session is not, and each request gets its own. FastAPI runs ``def`` endpoints and
dependencies in its threadpool: that is where :data:`SessionDep` belongs. The session is
synchronous (every read and write waits for Elasticsearch): an ``async def`` endpoint or
dependency that takes :data:`SessionDep` would block the event loop, so the route refuses
it when it is declared (``TypeError``). An ``async def`` endpoint takes a
:data:`SessionRunnerDep` instead and awaits :meth:`SessionRunner.run`, which calls a
function with the session in the threadpool, one call at a time.

**When the session ends.** Once the response is built, before it is sent: after the code
after ``yield`` of the dependencies declared ``Depends(..., scope="function")`` (it may
still use the session; an exception there rolls back), before that of the others (FastAPI
runs it after the response is sent, when the session is closed). A ``StreamingResponse``
body, a generator endpoint (refused when declared if it takes the session) or a background
task runs later too: the request's session refuses them (``RuntimeError``); open one with
``mapper.session()`` there. Routers take the route class too:
``APIRouter(route_class=EsmapperRoute)``; a route of another class, or a websocket route,
that asks for the session fails the lifespan's start-up and is refused at request time
(``RuntimeError``). Requires FastAPI
0.121 or later (the ``scope`` of dependencies).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Annotated, Any, Concatenate, ParamSpec, TypeVar

import anyio
import attrs
from fastapi import Depends, FastAPI, Request, Response, WebSocket
from fastapi.dependencies.models import Dependant
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute, APIRouter, APIWebSocketRoute
from starlette.concurrency import run_in_threadpool
from starlette.requests import HTTPConnection
from starlette.routing import BaseRoute

from esmapper.contrib import _request
from esmapper.contrib._request import RequestSession
from esmapper.errors import EsmapperError
from esmapper.mapper import Mapper
from esmapper.session import Session

__all__ = [
    "CommitPredicate",
    "EsmapperFastAPI",
    "EsmapperRoute",
    "MapperDep",
    "SessionDep",
    "SessionRunner",
    "SessionRunnerDep",
    "commit_on_success",
    "error_response",
    "get_mapper",
    "get_session",
    "get_session_runner",
    "init_app",
]

P = ParamSpec("P")
T = TypeVar("T")

#: ``commit_when(response) -> bool``: whether a request that produced ``response`` commits.
CommitPredicate = Callable[[Response], bool]

#: The attribute of ``app.state`` holding the set-up, and of ``request.state`` the request's.
_STATE_KEY = "esmapper"


def commit_on_success(response: Response) -> bool:
    """The default ``commit_when``: commit unless the response is an error (status >= 400)."""
    return _request.commit_on_success(response.status_code)


@attrs.define
class _AppState:
    """What :meth:`EsmapperFastAPI.init_app` keeps in ``app.state.esmapper``."""

    extension: EsmapperFastAPI
    mapper: Mapper | None


@attrs.define
class _Slot:
    """What the route keeps in ``request.state.esmapper``: the request's app, and its
    session once a dependency opened it (with the set-up that opened it)."""

    app: Any
    held: RequestSession | None = None
    state: _AppState | None = None
    runner: SessionRunner | None = None
    response: Response | None = None
    ended: bool = False

    def session(self) -> Session:
        if self.ended:
            raise RuntimeError(
                "the request's esmapper session is over (committed or rolled back, and closed, "
                "before the response was sent): a StreamingResponse body, a background task or "
                "a yield dependency's code after its yield runs later; open a session there "
                "with `with mapper.session() as session:` (MapperDep), and commit it yourself"
            )
        if self.held is None:
            state = _app_state(self.app)
            mapper = _open_mapper(state)
            self.held = RequestSession.open(mapper, state.extension.session_options)
            self.state = state
        return self.held.session

    async def finish(self, response: Response | None, error: BaseException | None) -> None:
        """End the request's session (if one was opened): commit in the threadpool when the
        request produced ``response`` without ``error`` and ``commit_when(response)``; else
        roll back. Closed in every case; a failing commit raises (after the close)."""
        self.ended = True
        held, state = self.held, self.state
        if held is None or state is None:
            return  # no session was asked for
        with held:  # ends it: closed, rolled back if commit_when itself raised
            if error is None and response is not None and state.extension.commit_when(response):
                await run_in_threadpool(held.settle, commit=True)  # blocking: a thread
            else:
                held.settle(commit=False)  # nothing is sent


class EsmapperFastAPI:
    """The FastAPI integration: ``EsmapperFastAPI(mapper, **session_options)``.

    ``mapper`` is a :class:`~esmapper.mapper.Mapper`, which the caller owns (opens and
    closes), or a function returning one, which :meth:`lifespan` calls at start-up, in each
    worker process, and whose mapper it closes at shutdown. ``session_options``
    (``consistency``, ``soft_deletes``, ...) are passed to ``mapper.session()`` for every
    request and checked here. ``commit_when(response)`` decides whether a request that
    produced ``response`` commits (default :func:`commit_on_success`: status below 400).
    ``error_handlers=False`` leaves the esmapper errors to the app's own handlers.
    """

    def __init__(
        self,
        mapper: Mapper | Callable[[], Mapper],
        *,
        commit_when: CommitPredicate | None = None,
        error_handlers: bool = True,
        **session_options: Any,
    ) -> None:
        if not isinstance(mapper, Mapper) and not callable(mapper):
            raise TypeError(
                "EsmapperFastAPI takes a Mapper or a function returning one, "
                f"not {type(mapper).__name__}"
            )
        self.mapper = mapper
        self.commit_when: CommitPredicate = commit_when or commit_on_success
        self.error_handlers = error_handlers
        self.session_options = _request.checked_options(session_options)

    def init_app(self, app: FastAPI) -> None:
        """Set ``app`` up: its routes become :class:`EsmapperRoute` (call this before adding
        any route), the esmapper error handlers are added (unless ``error_handlers=False``)
        and the set-up is kept in ``app.state.esmapper``.

        Raises ``RuntimeError`` when ``app`` is already set up or already has routes of
        another class."""
        if isinstance(getattr(app.state, _STATE_KEY, None), _AppState):
            raise RuntimeError(f"esmapper is already set up on the FastAPI app {app.title!r}")
        early = [
            f"{' '.join(sorted(r.methods or ()))} {r.path}"
            for r in app.router.routes
            if isinstance(r, APIRoute) and not isinstance(r, EsmapperRoute)
        ]
        if early:
            raise RuntimeError(
                f"routes were added before esmapper was set up ({', '.join(early)}): call "
                "init_app(app, ...) right after creating the app, before its routes"
            )
        app.router.route_class = EsmapperRoute
        mapper = self.mapper if isinstance(self.mapper, Mapper) else None
        setattr(app.state, _STATE_KEY, _AppState(self, mapper))
        if self.error_handlers:
            for kind in _request.ERROR_STATUSES:
                app.add_exception_handler(kind, error_response)

    @asynccontextmanager
    async def lifespan(self, app: FastAPI) -> AsyncIterator[None]:
        """The app's lifespan (``FastAPI(lifespan=esm.lifespan)``, or entered from your own):
        builds the mapper when a function was given (nothing is sent: the client connects
        on first use) and closes it at shutdown. Raises ``RuntimeError`` when
        :meth:`init_app` was not called on ``app``, or when a route of ``app`` asks for the
        session but is not an :class:`EsmapperRoute` (nothing would end its session: the
        routes of an ``APIRouter()`` included without ``route_class=EsmapperRoute``, a
        websocket route), at start-up rather than on its first request."""
        state = _app_state(app)
        unended = _routes_without_the_rule(app)
        if unended:
            raise RuntimeError(
                f"these routes ask for the esmapper session, but nothing would commit or close "
                f"it: {', '.join(unended)}; give their router "
                "APIRouter(route_class=EsmapperRoute) (a websocket route opens its own, "
                "`with mapper.session() as session:`)"
            )
        if isinstance(self.mapper, Mapper):
            yield
            return
        state.mapper = await run_in_threadpool(self.mapper)
        try:
            yield
        finally:
            mapper, state.mapper = state.mapper, None
            await run_in_threadpool(mapper.close)


def init_app(
    app: FastAPI,
    mapper: Mapper | Callable[[], Mapper],
    *,
    commit_when: CommitPredicate | None = None,
    error_handlers: bool = True,
    **session_options: Any,
) -> EsmapperFastAPI:
    """``EsmapperFastAPI(mapper, ...).init_app(app)``: returns the extension (its
    :meth:`~EsmapperFastAPI.lifespan` builds a mapper given as a function)."""
    extension = EsmapperFastAPI(
        mapper, commit_when=commit_when, error_handlers=error_handlers, **session_options
    )
    extension.init_app(app)
    return extension


def _app_state(app: Any) -> _AppState:
    state = getattr(getattr(app, "state", None), _STATE_KEY, None)
    if not isinstance(state, _AppState):
        raise RuntimeError(
            "esmapper is not set up on this FastAPI app: call "
            "esmapper.contrib.fastapi.init_app(app, mapper) (or EsmapperFastAPI(...).init_app)"
        )
    return state


def _open_mapper(state: _AppState) -> Mapper:
    if state.mapper is None:
        raise RuntimeError(
            "the esmapper mapper is not open: give the app its lifespan, "
            "FastAPI(lifespan=esm.lifespan) (in tests, use `with TestClient(app):`); the "
            "lifespan of an app mounted in another (app.mount) does not run: give its "
            "EsmapperFastAPI the Mapper itself, or include its routes as an APIRouter"
        )
    return state.mapper


def _slot(request: HTTPConnection) -> _Slot:
    if isinstance(request, WebSocket):
        raise RuntimeError(
            f"the websocket route {request.url.path} has no per-request esmapper session "
            "(nothing would commit or close it): open one yourself, "
            "`with mapper.session() as session:` (MapperDep), run in the threadpool"
        )
    assert isinstance(request, Request)
    slot = getattr(request.state, _STATE_KEY, None)
    if not isinstance(slot, _Slot):
        _app_state(request.app)  # not set up at all: say that first
        route = request.scope.get("route")
        where = f" {request.method} {getattr(route, 'path', request.url.path)}"
        raise RuntimeError(
            f"the route{where} is not an EsmapperRoute, so nothing would commit its session: "
            "add it after init_app(app, ...), or give its router "
            "APIRouter(route_class=EsmapperRoute)"
        )
    return slot


def get_session(request: HTTPConnection) -> Session:
    """The dependency giving the request's session (opened on first use; the same one for
    every dependency of the request). Use it from ``def`` endpoints and dependencies."""
    return _slot(request).session()


def get_mapper(request: HTTPConnection) -> Mapper:
    """The dependency giving the app's mapper (shared by every request, thread-safe; from an
    ``async def`` endpoint, call it through ``run_in_threadpool``). Raises ``RuntimeError``
    before the lifespan built it."""
    return _open_mapper(_app_state(request.app))


class SessionRunner:
    """The request's session for ``async def`` code: ``await runner.run(fn, *args)`` calls
    ``fn(session, *args)`` in the threadpool and returns what it returns (one call at a
    time: the session is not thread-safe). The session is opened by the first call."""

    def __init__(self, slot: _Slot) -> None:
        self._slot = slot
        self._lock = anyio.Lock()

    async def run(
        self, fn: Callable[Concatenate[Session, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """``fn(session, *args, **kwargs)`` in the threadpool; raises what it raises."""

        def call() -> T:
            return fn(self._slot.session(), *args, **kwargs)

        async with self._lock:
            return await run_in_threadpool(call)


async def get_session_runner(request: HTTPConnection) -> SessionRunner:
    """The dependency giving the request's :class:`SessionRunner` (for ``async def``)."""
    slot = _slot(request)
    if slot.runner is None:
        slot.runner = SessionRunner(slot)
    return slot.runner


#: ``session: SessionDep`` in a ``def`` endpoint or dependency: the request's session.
SessionDep = Annotated[Session, Depends(get_session)]
#: ``runner: SessionRunnerDep`` in an ``async def`` one: ``await runner.run(fn, ...)``.
SessionRunnerDep = Annotated[SessionRunner, Depends(get_session_runner)]
#: ``mapper: MapperDep``: the app's mapper.
MapperDep = Annotated[Mapper, Depends(get_mapper)]


def error_response(request: Request, error: Exception) -> JSONResponse:
    """The handler of the esmapper errors :meth:`EsmapperFastAPI.init_app` installs: their
    status (404, 409 or 422) and JSON body ``{"detail", "error", "ids", ...}``."""
    assert isinstance(error, EsmapperError)
    status = _request.error_status(error) or 500
    return JSONResponse(_request.error_body(error), status_code=status)


def _target(call: Callable[..., Any] | None) -> Any:
    """The function FastAPI calls for ``call`` (a partial's, an instance's ``__call__``)."""
    while isinstance(call, functools.partial):
        call = call.func
    if call is None:
        return None
    target = call if inspect.isroutine(call) or inspect.isclass(call) else type(call).__call__
    return inspect.unwrap(target)


def _is_async(call: Callable[..., Any] | None) -> bool:
    target = _target(call)
    return inspect.iscoroutinefunction(target) or inspect.isasyncgenfunction(target)


def _is_generator(call: Callable[..., Any] | None) -> bool:
    target = _target(call)
    return inspect.isgeneratorfunction(target) or inspect.isasyncgenfunction(target)


def _takes(dependant: Dependant, *calls: Callable[..., Any]) -> bool:
    """Whether ``dependant`` is given the value of one of ``calls`` as a parameter (a
    ``dependencies=[Depends(...)]`` of a route, router or app is run but not given: its
    dependant has no name)."""
    return any(d.call in calls and d.name is not None for d in dependant.dependencies)


def _asks_for_session(dependant: Dependant) -> bool:
    """Whether ``dependant`` or any of its dependencies asks for the request's session."""
    return any(
        d.call in (get_session, get_session_runner) or _asks_for_session(d)
        for d in dependant.dependencies
    )


def _all_routes(routes: Iterable[BaseRoute]) -> Iterator[BaseRoute]:
    """``routes`` and those of the routers included among them (recent FastAPI keeps an
    included router as one entry holding its ``original_router``; earlier versions copy
    its routes into the including router)."""
    for route in routes:
        included = getattr(route, "original_router", None)
        if isinstance(included, APIRouter):
            yield from _all_routes(included.routes)
        else:
            yield route


def _routes_without_the_rule(app: FastAPI) -> list[str]:
    """``METHOD /path (name)`` of the routes of ``app`` that ask for the session but are
    not :class:`EsmapperRoute` (the path as declared on its router; ``websocket /path``
    for a websocket route)."""
    found = []
    for route in _all_routes(app.router.routes):
        if isinstance(route, EsmapperRoute):
            continue
        if not isinstance(route, (APIRoute, APIWebSocketRoute)):
            continue
        if _asks_for_session(route.dependant):
            kind = (
                "websocket"
                if isinstance(route, APIWebSocketRoute)
                else " ".join(sorted(route.methods or ()))
            )
            found.append(f"{kind} {route.path} ({route.name})")
    return found


def _async_session_users(dependant: Dependant) -> Iterator[str]:
    """The names of the ``async def`` endpoint or dependencies of ``dependant`` that take
    the (synchronous) session directly."""
    if _is_async(dependant.call) and _takes(dependant, get_session):
        yield getattr(dependant.call, "__name__", repr(dependant.call))
    for sub in dependant.dependencies:
        yield from _async_session_users(sub)


async def _end_on_exit(
    slot: _Slot, exc_type: object, error: BaseException | None, tb: object
) -> bool:
    """The exit callback :class:`EsmapperRoute` pushes on FastAPI's function-scoped exit
    stack: ends the session by the request's response or the exception that ended it
    (``False``: the exception, if any, goes on)."""
    await slot.finish(slot.response if error is None else None, error)
    return False


class EsmapperRoute(APIRoute):
    """The route class that ends each request's session by the shared rule (see the module
    docstring): commit before the response is sent when ``commit_when(response)`` is true,
    rollback otherwise or on an exception, close always.

    Raises ``TypeError`` when an ``async def`` endpoint or dependency takes
    :data:`SessionDep` (use :data:`SessionRunnerDep` there). Subclass it to add behaviour of
    your own (call ``super().get_route_handler()``)."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        super().__init__(path, endpoint, **kwargs)
        methods = ", ".join(sorted(self.methods or ()))
        streams = _is_generator(self.dependant.call)
        if streams and _takes(self.dependant, get_session, get_session_runner):
            raise TypeError(
                f"{methods} {path}: the endpoint {getattr(endpoint, '__name__', endpoint)!r} "
                "is a generator, whose body runs while the response is sent, after the "
                "request's esmapper session was committed and closed: read what it streams "
                "in a def dependency taking SessionDep, or open a session in the generator "
                "(`with mapper.session() as session:`, MapperDep)"
            )
        blocking = sorted(set(_async_session_users(self.dependant)))
        if blocking:
            raise TypeError(
                f"{methods} {path}: the async def {', '.join(blocking)} takes the esmapper "
                "session (SessionDep), which is synchronous and would block the event loop: "
                "declare it with def (FastAPI runs it in its threadpool), or take a "
                "SessionRunnerDep and `await runner.run(fn, ...)`"
            )

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def handle(request: Request) -> Response:
            slot = _Slot(request.app)
            setattr(request.state, _STATE_KEY, slot)
            stack = request.scope.get("fastapi_function_astack")
            if not isinstance(stack, AsyncExitStack):
                raise RuntimeError(
                    "the request has no function-scoped exit stack: esmapper.contrib.fastapi "
                    "needs FastAPI 0.121 or later"
                )
            # FastAPI exits this stack once the response is built, before it is sent,
            # after the yield dependencies of scope="function" (entered later, so exited
            # first: their code after yield may use the session, or raise)
            stack.push_async_exit(functools.partial(_end_on_exit, slot))
            slot.response = await handler(request)  # an exception: ended by the exit
            return slot.response

        return handle
