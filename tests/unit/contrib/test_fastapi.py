"""esmapper.contrib.fastapi: one session per request, committed before the response is sent,
rolled back on errors, always closed; the error handlers; async endpoints. A fake mapper
records what happens to its sessions."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace
from typing import Annotated, Any, cast

import anyio
import pytest
from fastapi import (
    APIRouter,
    BackgroundTasks,
    Depends,
    FastAPI,
    HTTPException,
    Request,
    Response,
    WebSocket,
)
from fastapi.responses import (
    FileResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    StreamingResponse,
)
from fastapi.testclient import TestClient
from starlette.types import ASGIApp, Message, Receive, Scope, Send

import esmapper as em
from esmapper.contrib.fastapi import (
    EsmapperFastAPI,
    EsmapperRoute,
    MapperDep,
    SessionDep,
    SessionRunnerDep,
    get_session,
    init_app,
)
from esmapper.session import Session


class FakeSession:
    def __init__(self, mapper: FakeMapper, options: dict[str, Any]) -> None:
        self.mapper = mapper
        self.options = SimpleNamespace(**options)  # as Session.options: by attribute
        self.threads: list[int] = []

    def commit(self) -> None:
        self.mapper.log.append("commit")
        self.threads.append(threading.get_ident())
        if self.mapper.fail_commit is not None:
            raise self.mapper.fail_commit

    def rollback(self) -> None:
        self.mapper.log.append("rollback")

    def close(self) -> None:
        self.mapper.log.append("close")


class FakeMapper:
    def __init__(self, *, fail_commit: Exception | None = None) -> None:
        self.log: list[str] = []
        self.sessions: list[FakeSession] = []
        self.fail_commit = fail_commit

    def session(self, **options: Any) -> FakeSession:
        self.log.append("open")
        created = FakeSession(self, options)
        self.sessions.append(created)
        return created

    def close(self) -> None:
        self.log.append("mapper closed")


def make_app(mapper: FakeMapper, **options: Any) -> FastAPI:
    esm = EsmapperFastAPI(lambda: mapper, **options)  # type: ignore[arg-type,return-value]
    app = FastAPI(lifespan=esm.lifespan)
    esm.init_app(app)

    @app.get("/ok")
    def ok(session: SessionDep) -> dict[str, str]:
        return {"session": str(id(session))}

    @app.get("/missing")
    def missing(session: SessionDep) -> None:
        raise HTTPException(404, "no such thing")

    @app.get("/invalid")
    def invalid(session: SessionDep) -> JSONResponse:
        return JSONResponse({"errors": ["bad"]}, status_code=400)

    @app.get("/boom")
    def boom(session: SessionDep) -> None:
        raise RuntimeError("boom")

    @app.get("/nothing")
    def nothing() -> str:
        return "no session asked for"

    return app


@pytest.fixture
def mapper() -> FakeMapper:
    return FakeMapper()


@pytest.fixture
def client(mapper: FakeMapper) -> Iterator[TestClient]:
    with TestClient(make_app(mapper, consistency="wait")) as running:
        yield running


def test_commit_on_success_then_close(client: TestClient, mapper: FakeMapper) -> None:
    assert client.get("/ok").status_code == 200
    assert mapper.log == ["open", "commit", "close"]
    assert vars(mapper.sessions[0].options) == {"consistency": "wait"}


def test_the_commit_runs_in_the_threadpool_not_on_the_event_loop(
    client: TestClient, mapper: FakeMapper
) -> None:
    loop_threads: list[int] = []

    @the_app(client).get("/loop")
    async def loop() -> int:
        loop_threads.append(threading.get_ident())
        return 1

    client.get("/loop")
    client.get("/ok")
    assert mapper.sessions[0].threads and mapper.sessions[0].threads[0] != loop_threads[0]


@pytest.mark.parametrize("path", ["/missing", "/invalid"])
def test_an_error_status_rolls_back(client: TestClient, mapper: FakeMapper, path: str) -> None:
    assert client.get(path).status_code in (400, 404)
    assert mapper.log == ["open", "rollback", "close"]


def test_an_exception_rolls_back_and_is_a_500(mapper: FakeMapper) -> None:
    with TestClient(make_app(mapper), raise_server_exceptions=False) as client:
        assert client.get("/boom").status_code == 500
    assert mapper.log == ["open", "rollback", "close", "mapper closed"]


def test_an_exception_propagates_to_the_test_client(client: TestClient, mapper: FakeMapper) -> None:
    with pytest.raises(RuntimeError, match="boom"):
        client.get("/boom")
    assert mapper.log == ["open", "rollback", "close"]


def test_a_conflicting_commit_is_a_409_not_a_200() -> None:
    mapper = FakeMapper(fail_commit=em.VersionConflictError("stale", ids=["e1"]))
    with TestClient(make_app(mapper)) as client:
        response = client.get("/ok")
    assert response.status_code == 409  # the commit ran before the response was sent
    assert response.json() == {"detail": "stale", "error": "VersionConflictError", "ids": ["e1"]}
    assert mapper.log == ["open", "commit", "close", "mapper closed"]  # once, closed anyway


def test_any_other_failing_commit_is_a_500() -> None:
    mapper = FakeMapper(fail_commit=em.OutcomeUnknownError("lost answer"))
    with TestClient(make_app(mapper), raise_server_exceptions=False) as client:
        assert client.get("/ok").status_code == 500
    assert mapper.log == ["open", "commit", "close", "mapper closed"]


def test_commit_when_decides(mapper: FakeMapper) -> None:
    app = make_app(mapper, commit_when=lambda response: response.status_code != 200)
    with TestClient(app) as client:
        assert client.get("/invalid").status_code == 400
        assert client.get("/ok").status_code == 200
    assert mapper.log == ["open", "commit", "close", "open", "rollback", "close", "mapper closed"]


def test_a_request_that_asks_for_no_session_opens_none(
    client: TestClient, mapper: FakeMapper
) -> None:
    assert client.get("/nothing").status_code == 200
    assert mapper.log == []


def inner(session: SessionDep) -> int:
    return id(session)


def sync_dependency(session: SessionDep) -> str:
    return session.options.consistency  # type: ignore[return-value]


async def async_dependency(session: SessionDep) -> None:
    pass


def the_app(client: TestClient) -> FastAPI:
    assert isinstance(client.app, FastAPI)
    return client.app


def test_one_session_per_request_shared_by_its_dependencies(
    client: TestClient, mapper: FakeMapper
) -> None:
    @the_app(client).get("/twice")
    def twice(session: SessionDep, inner_id: Annotated[int, Depends(inner)]) -> bool:
        return id(session) == inner_id

    assert client.get("/twice").json() is True
    assert client.get("/twice").json() is True
    assert mapper.log == ["open", "commit", "close"] * 2


def test_an_async_endpoint_taking_the_session_is_refused_when_declared(
    client: TestClient,
) -> None:
    app = the_app(client)
    with pytest.raises(TypeError, match=r"GET /blocking: the async def blocking takes"):

        @app.get("/blocking")
        async def blocking(session: SessionDep) -> None:
            pass

    with pytest.raises(TypeError, match=r"async def async_dependency takes .* SessionRunnerDep"):

        @app.get("/nested")
        def nested(value: Annotated[None, Depends(async_dependency)]) -> None:
            pass


def test_a_sync_dependency_of_an_async_endpoint_may_take_the_session(
    client: TestClient, mapper: FakeMapper
) -> None:
    @the_app(client).get("/mixed")
    async def mixed(consistency: Annotated[str, Depends(sync_dependency)]) -> str:
        return consistency

    assert client.get("/mixed").json() == "wait"
    assert mapper.log == ["open", "commit", "close"]


def test_an_async_endpoint_runs_session_calls_in_the_threadpool(
    client: TestClient, mapper: FakeMapper
) -> None:
    seen: dict[str, Any] = {}

    def options_of(session: Session, key: str) -> Any:
        seen["thread"] = threading.get_ident()
        return getattr(session.options, key)

    @the_app(client).get("/async")
    async def read(runner: SessionRunnerDep) -> Any:
        seen["loop"] = threading.get_ident()
        return await runner.run(options_of, "consistency")

    assert client.get("/async").json() == "wait"
    assert seen["thread"] != seen["loop"]
    assert mapper.log == ["open", "commit", "close"]


def test_a_route_of_another_class_is_refused_at_request_time(
    client: TestClient, mapper: FakeMapper
) -> None:
    plain = APIRouter()  # not route_class=EsmapperRoute

    @plain.get("/plain")
    def handler(session: SessionDep) -> None:
        pass

    good = APIRouter(route_class=EsmapperRoute)

    @good.get("/good")
    def good_handler(session: SessionDep) -> str:
        return "ok"

    app = the_app(client)
    app.include_router(plain)
    app.include_router(good)
    with pytest.raises(RuntimeError, match=r"GET /plain is not an EsmapperRoute.*route_class"):
        client.get("/plain")
    assert client.get("/good").status_code == 200
    assert mapper.log == ["open", "commit", "close"]


def test_the_error_handlers_answer_json() -> None:
    errors: dict[str, Callable[[], Exception]] = {
        "missing": lambda: em.DocumentNotFoundError("e1", index="secret-index"),
        "duplicate": lambda: em.DuplicateDocumentError("exists", ids=["e2"]),
        "query": lambda: em.QueryValidationError(
            "unknown field 'colour'", field="colour", position=0, expression="colour:red"
        ),
    }
    app = FastAPI()
    init_app(app, em.Mapper("http://127.0.0.1:9", models=[]))

    @app.get("/raise/{name}")
    def raising(name: str) -> None:
        raise errors[name]()

    client = TestClient(app)
    missing = client.get("/raise/missing")
    assert missing.status_code == 404
    assert missing.json() == {
        "detail": 'Document "e1" could not be found',
        "error": "DocumentNotFoundError",
        "ids": ["e1"],
    }
    assert client.get("/raise/duplicate").status_code == 409
    query = client.get("/raise/query")
    assert query.status_code == 422
    assert query.json() == {
        "detail": "unknown field 'colour'",
        "error": "QueryValidationError",
        "field": "colour",
        "position": 0,
        "expression": "colour:red",
    }


def test_without_the_error_handlers_an_esmapper_error_is_a_500() -> None:
    app = FastAPI()
    init_app(app, em.Mapper("http://127.0.0.1:9", models=[]), error_handlers=False)

    @app.get("/missing")
    def missing() -> None:
        raise em.DocumentNotFoundError("e1")

    assert TestClient(app, raise_server_exceptions=False).get("/missing").status_code == 500


def test_the_lifespan_builds_and_closes_a_mapper_given_as_a_function(mapper: FakeMapper) -> None:
    app = make_app(mapper)
    with TestClient(app) as client:
        assert client.get("/ok").status_code == 200
    assert mapper.log[-1] == "mapper closed"
    with pytest.raises(RuntimeError, match=r"mapper is not open.*lifespan"):
        TestClient(app).get("/ok")  # no lifespan: no mapper


def test_a_mapper_given_as_such_is_the_callers_and_stays_open() -> None:
    mapper = em.Mapper("http://127.0.0.1:9", models=[])
    esm = EsmapperFastAPI(mapper, consistency="wait")
    app = FastAPI(lifespan=esm.lifespan)
    esm.init_app(app)
    seen: list[Session] = []

    @app.get("/")
    def index(session: SessionDep, given: MapperDep) -> bool:
        seen.append(session)
        return given is mapper

    with TestClient(app) as client:
        assert client.get("/").json() is True
    assert seen[0].closed and seen[0].options.consistency == "wait"  # a real, closed Session
    assert TestClient(app).get("/").json() is True  # without the lifespan too
    mapper.close()


def test_set_up_errors() -> None:
    with pytest.raises(TypeError, match="takes a Mapper or a function"):
        EsmapperFastAPI("http://127.0.0.1:9200")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="unknown option"):
        EsmapperFastAPI(FakeMapper, colour="blue")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="consistency"):
        EsmapperFastAPI(FakeMapper, consistency="soon")  # type: ignore[arg-type]
    app = FastAPI()
    init_app(app, FakeMapper)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="already set up"):
        init_app(app, FakeMapper)  # type: ignore[arg-type]
    late = FastAPI()

    @late.get("/early")
    def early() -> None:
        pass

    with pytest.raises(RuntimeError, match=r"routes were added before.*/early"):
        init_app(late, FakeMapper)  # type: ignore[arg-type]


def test_using_the_session_without_set_up() -> None:
    app = FastAPI()
    router = APIRouter(route_class=EsmapperRoute)

    @router.get("/")
    def index(session: Annotated[Session, Depends(get_session)]) -> None:
        pass

    @router.get("/free")
    def free() -> str:
        return "no session"

    app.include_router(router)
    client = TestClient(app)
    with pytest.raises(RuntimeError, match=r"not set up on this FastAPI app.*init_app"):
        client.get("/")
    assert client.get("/free").json() == "no session"


def test_concurrent_requests_get_their_own_session_in_their_own_thread(
    client: TestClient, mapper: FakeMapper
) -> None:
    together = threading.Barrier(2, timeout=60)

    @the_app(client).get("/together")
    def at_once(session: SessionDep) -> list[int]:
        together.wait()  # both requests are in the endpoint at the same time
        return [id(session), threading.get_ident()]

    with ThreadPoolExecutor(2) as pool:
        answers = list(pool.map(lambda _: client.get("/together").json(), range(2)))
    sessions, threads = zip(*answers, strict=True)
    assert len(set(sessions)) == 2 and len(set(threads)) == 2
    assert sorted(mapper.log) == sorted(["open", "commit", "close"] * 2)


def audited(session: SessionDep) -> Iterator[None]:
    yield
    assert isinstance(session, FakeSession)
    session.mapper.log.append(f"audit with {session.options.consistency}")


def refusing(session: SessionDep) -> Iterator[None]:
    yield
    raise HTTPException(418, "refused after the endpoint")


exits: list[str] = []


def scoped(session: SessionDep) -> Iterator[None]:
    try:
        yield
    finally:
        exits.append("exited")


def test_a_function_scoped_yield_dependency_exits_before_the_commit(
    client: TestClient, mapper: FakeMapper
) -> None:
    """Its code after ``yield`` runs before the response is sent: it may still use the
    session (its changes are committed with the request's), and an error it raises there
    rolls the request back instead of following a commit."""

    app = the_app(client)

    @app.get("/audited")
    def audited_endpoint(_: Annotated[None, Depends(audited, scope="function")]) -> int:
        return 1

    @app.get("/refused")
    def refused_endpoint(_: Annotated[None, Depends(refusing, scope="function")]) -> int:
        return 1

    assert client.get("/audited").status_code == 200
    assert mapper.log == ["open", "audit with wait", "commit", "close"]
    mapper.log.clear()
    assert client.get("/refused").status_code == 418
    assert mapper.log == ["open", "rollback", "close"]


def test_a_commit_failing_after_a_function_scoped_dependency_is_still_a_409() -> None:
    mapper = FakeMapper(fail_commit=em.VersionConflictError("stale", ids=["e1"]))
    app = make_app(mapper)
    exits.clear()

    @app.get("/scoped")
    def endpoint(_: Annotated[None, Depends(scoped, scope="function")]) -> int:
        return 1

    with TestClient(app) as client:
        response = client.get("/scoped")
    assert response.status_code == 409 and response.json()["error"] == "VersionConflictError"
    assert exits == ["exited"]
    assert mapper.log == ["open", "commit", "close", "mapper closed"]


def test_the_session_is_not_reopened_after_the_request(
    client: TestClient, mapper: FakeMapper
) -> None:
    """A background task (or a streamed body) that reaches for the request's session after
    the response was built gets an error, not a new session that nothing commits or closes."""
    errors: list[str] = []

    @the_app(client).get("/later")
    async def later(runner: SessionRunnerDep, tasks: BackgroundTasks) -> int:
        async def task() -> None:
            try:
                await runner.run(lambda session: mapper.log.append("used"))
            except RuntimeError as error:
                errors.append(str(error))

        tasks.add_task(task)
        return 1

    assert client.get("/later").status_code == 200
    assert mapper.log == []  # no session was opened, none left open
    assert len(errors) == 1 and "session is over" in errors[0]


def test_a_generator_endpoint_taking_the_session_is_refused_when_declared(
    client: TestClient,
) -> None:
    """A generator's body runs while the response is sent, after the commit and the close."""
    app = the_app(client)
    with pytest.raises(TypeError, match=r"GET /stream: the endpoint 'stream' is a generator"):

        @app.get("/stream", response_model=None)
        def stream(session: SessionDep) -> Iterator[int]:
            yield 1

    with pytest.raises(TypeError, match=r"GET /astream: the endpoint 'astream' is a generator"):

        @app.get("/astream", response_model=None)
        async def astream(runner: SessionRunnerDep) -> AsyncIterator[int]:
            yield 1

    @app.get("/fed", response_model=None)
    def fed(consistency: Annotated[str, Depends(sync_dependency)]) -> Iterator[str]:
        yield consistency  # read by a dependency, before the commit: allowed

    if getattr(app.routes[-1], "is_json_stream", False):  # FastAPI streams generators
        assert client.get("/fed").text.strip() == '"wait"'


def test_a_websocket_route_has_no_request_session_but_has_the_mapper(
    client: TestClient, mapper: FakeMapper
) -> None:
    app = the_app(client)

    @app.websocket("/ws")
    async def socket(websocket: WebSocket, session: SessionDep) -> None:
        await websocket.accept()

    @app.websocket("/ws-mapper")
    async def socket_mapper(websocket: WebSocket, given: MapperDep) -> None:
        await websocket.accept()
        await websocket.send_json(given is mapper)  # type: ignore[comparison-overlap]
        await websocket.close()

    refused = pytest.raises(RuntimeError, match=r"websocket route /ws has no per-request")
    with refused, client.websocket_connect("/ws"):
        pass
    with client.websocket_connect("/ws-mapper") as connected:
        assert connected.receive_json() is True
    assert mapper.log == []


def test_a_mounted_app_is_told_its_lifespan_does_not_run(mapper: FakeMapper) -> None:
    app = make_app(mapper)
    sub = make_app(mapper)
    app.mount("/sub", sub)
    with TestClient(app) as client:
        assert client.get("/ok").status_code == 200
        with pytest.raises(RuntimeError, match=r"mounted in another .* does not run"):
            client.get("/sub/ok")


class LogSent:
    """ASGI middleware: logs "sent" into the mapper's log when the response starts."""

    def __init__(self, app: ASGIApp, log: list[str]) -> None:
        self.app, self.log = app, log

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def logged(message: Message) -> None:
            if message["type"] == "http.response.start":
                self.log.append(f"sent {message['status']}")
            await send(message)

        await self.app(scope, receive, logged)


class Teapot(Exception):
    pass


def refuse_in_dependency(session: SessionDep) -> None:
    raise HTTPException(403, "refused by a dependency")


def every_kind_app(mapper: FakeMapper, tmp_path: Path) -> FastAPI:
    app = make_app(mapper)
    (tmp_path / "file.txt").write_text("file")

    @app.exception_handler(Teapot)
    def teapot(request: Request, error: Teapot) -> JSONResponse:
        return JSONResponse({"detail": "teapot"}, status_code=418)

    @app.get("/kind/dict")
    def as_dict(session: SessionDep) -> dict[str, int]:
        return {"a": 1}

    @app.get("/kind/json")
    def as_json(session: SessionDep) -> JSONResponse:
        return JSONResponse({"a": 1}, status_code=201)

    @app.get("/kind/plain", response_class=PlainTextResponse)
    def as_plain(session: SessionDep) -> str:
        return "plain"

    @app.get("/kind/stream")
    def as_stream(session: SessionDep) -> StreamingResponse:
        def body() -> Iterator[bytes]:
            mapper.log.append("body")
            yield b"streamed"

        return StreamingResponse(body())

    @app.get("/kind/file")
    def as_file(session: SessionDep) -> FileResponse:
        return FileResponse(tmp_path / "file.txt")

    @app.get("/kind/redirect")
    def as_redirect(session: SessionDep) -> RedirectResponse:
        return RedirectResponse("/elsewhere", status_code=303)

    @app.get("/kind/background")
    def with_background(session: SessionDep, tasks: BackgroundTasks) -> int:
        tasks.add_task(mapper.log.append, "task")
        return 1

    @app.get("/kind/http-error")
    def http_error(session: SessionDep) -> None:
        raise HTTPException(404)

    @app.get("/kind/dependency-error")
    def dependency_error(_: Annotated[None, Depends(refuse_in_dependency)]) -> None:
        pass

    @app.get("/kind/invalid")
    def invalid_query(session: SessionDep, n: int) -> int:
        return n

    @app.get("/kind/handled")
    def handled(session: SessionDep) -> None:
        raise Teapot()

    app.add_middleware(LogSent, log=mapper.log)
    return app


@pytest.mark.parametrize(
    ("kind", "log"),
    [
        ("dict", ["open", "commit", "close", "sent 200"]),
        ("json", ["open", "commit", "close", "sent 201"]),
        ("plain", ["open", "commit", "close", "sent 200"]),
        ("stream", ["open", "commit", "close", "sent 200", "body"]),
        ("file", ["open", "commit", "close", "sent 200"]),
        ("redirect", ["open", "commit", "close", "sent 303"]),
        ("background", ["open", "commit", "close", "sent 200", "task"]),
        ("http-error", ["open", "rollback", "close", "sent 404"]),
        ("dependency-error", ["open", "rollback", "close", "sent 403"]),
        ("invalid", ["open", "rollback", "close", "sent 422"]),
        ("handled", ["open", "rollback", "close", "sent 418"]),
    ],
)
def test_every_kind_of_response_is_settled_before_it_is_sent_and_closed_once(
    mapper: FakeMapper, tmp_path: Path, kind: str, log: list[str]
) -> None:
    with TestClient(every_kind_app(mapper, tmp_path), follow_redirects=False) as client:
        client.get(f"/kind/{kind}")
    assert mapper.log == [*log, "mapper closed"]


def test_an_async_endpoint_under_a_dependencies_list_opening_the_session_is_allowed(
    mapper: FakeMapper,
) -> None:
    """``dependencies=[Depends(get_session)]`` (of the app, a router or a route) runs the
    sync dependency in the threadpool and gives its value to no one: the async endpoints
    under it do not take the session and are not refused."""
    esm = EsmapperFastAPI(lambda: mapper)  # type: ignore[arg-type,return-value]
    app = FastAPI(lifespan=esm.lifespan, dependencies=[Depends(get_session)])
    esm.init_app(app)

    @app.get("/health")
    async def health() -> str:
        return "ok"

    @app.get("/stream", dependencies=[Depends(get_session)], response_model=None)
    def stream() -> Iterator[int]:
        yield 1

    with TestClient(app) as client:
        assert client.get("/health").json() == "ok"
    assert mapper.log == ["open", "commit", "close", "mapper closed"]


def nested(session: SessionDep) -> int:
    return 1


def test_routes_no_rule_would_end_are_refused_at_start_up(mapper: FakeMapper) -> None:
    """An APIRouter() included without the route class, or a websocket route, asking for
    the session (directly or through a dependency) fails the start-up, not its first
    request."""
    app = make_app(mapper)
    plain = APIRouter()

    @plain.post("/plain")
    def handler(value: Annotated[int, Depends(nested)]) -> int:
        return value

    @plain.get("/free")
    def free() -> str:
        return "no session: not refused"

    @app.websocket("/ws")
    async def socket(websocket: WebSocket, runner: SessionRunnerDep) -> None:
        pass

    good = APIRouter(route_class=EsmapperRoute)
    good.include_router(plain, prefix="/nested")
    app.include_router(good)
    refused = pytest.raises(
        RuntimeError,
        match=r"close it: websocket /ws \(socket\), POST (/nested)?/plain \(handler\); give",
    )
    with refused, TestClient(app):
        pass
    assert mapper.log == []  # the mapper was not built


def test_a_request_without_fastapis_function_exit_stack_is_refused() -> None:
    """The session is ended on FastAPI's function-scoped exit stack (FastAPI >= 0.121):
    without it, nothing is opened and the route says which FastAPI it needs."""
    mapper = FakeMapper()
    app = FastAPI()
    esm = init_app(app, lambda: cast(em.Mapper, mapper))

    def ok(session: SessionDep) -> int:
        return 1

    async def call(route: EsmapperRoute) -> Response:
        async with esm.lifespan(app):
            scope = {"type": "http", "method": "GET", "path": route.path, "headers": []}
            return await route.get_route_handler()(Request({**scope, "app": app}))

    with pytest.raises(RuntimeError, match=r"needs FastAPI 0\.121 or later"):
        anyio.run(call, EsmapperRoute("/ok", ok))
    assert mapper.log == ["mapper closed"]
