"""esmapper.contrib.flask: one session per request, committed on success, rolled back on
errors, always closed. A fake mapper records what happens to its sessions."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask, abort

import esmapper as em
from esmapper.contrib import flask as esm_flask
from esmapper.contrib.flask import EsmapperFlask, current_mapper, get_session, init_app, session


class FakeSession:
    def __init__(self, log: list[str], options: dict[str, Any], fail_commit: bool) -> None:
        self.log = log
        self.options = options
        self.fail_commit = fail_commit

    def commit(self) -> None:
        self.log.append("commit")
        if self.fail_commit:
            raise em.VersionConflictError("stale")

    def rollback(self) -> None:
        self.log.append("rollback")

    def close(self) -> None:
        self.log.append("close")


class FakeMapper:
    def __init__(self, *, fail_commit: bool = False) -> None:
        self.log: list[str] = []
        self.sessions: list[FakeSession] = []
        self.fail_commit = fail_commit

    def session(self, **options: Any) -> FakeSession:
        self.log.append("open")
        created = FakeSession(self.log, options, self.fail_commit)
        self.sessions.append(created)
        return created


def make_app(mapper: Any, *, testing: bool = True, **options: Any) -> Flask:
    app = Flask(__name__)
    app.config["TESTING"] = testing
    init_app(app, mapper, **options)

    @app.get("/ok")
    def ok() -> str:
        return "ok"

    @app.get("/boom")
    def boom() -> str:
        raise RuntimeError("boom")

    @app.get("/missing")
    def missing() -> str:
        abort(404)

    @app.get("/invalid")
    def invalid() -> tuple[str, int]:
        return "invalid form", 400

    @app.get("/same")
    def same() -> str:
        assert session._get_current_object() is get_session()  # type: ignore[attr-defined]
        assert current_mapper._get_current_object() is mapper  # type: ignore[attr-defined]
        return str(id(get_session()))

    return app


def test_commit_on_success_then_close() -> None:
    mapper = FakeMapper()
    response = make_app(mapper, consistency="wait").test_client().get("/ok")
    assert response.status_code == 200
    assert mapper.log == ["open", "commit", "close"]
    assert mapper.sessions[0].options == {"consistency": "wait"}


def test_rollback_on_exception_then_close() -> None:
    mapper = FakeMapper()
    client = make_app(mapper).test_client()
    with pytest.raises(RuntimeError, match="boom"):  # TESTING propagates exceptions
        client.get("/boom")
    assert mapper.log == ["open", "rollback", "close"]


def test_rollback_on_exception_served_as_500() -> None:
    mapper = FakeMapper()
    response = make_app(mapper, testing=False).test_client().get("/boom")
    assert response.status_code == 500
    assert mapper.log == ["open", "rollback", "close"]


@pytest.mark.parametrize("path", ["/missing", "/invalid"])
def test_rollback_on_error_responses(path: str) -> None:
    mapper = FakeMapper()
    response = make_app(mapper).test_client().get(path)
    assert response.status_code >= 400
    assert mapper.log == ["open", "rollback", "close"]


def test_a_failing_commit_is_an_error_response_not_a_lost_write() -> None:
    mapper = FakeMapper(fail_commit=True)
    response = make_app(mapper, testing=False).test_client().get("/ok")
    assert response.status_code == 500  # the commit ran before the response was sent
    assert mapper.log == ["open", "commit", "close"]  # committed once, closed anyway


def test_a_failing_commit_propagates_when_testing() -> None:
    mapper = FakeMapper(fail_commit=True)
    with pytest.raises(em.VersionConflictError):
        make_app(mapper).test_client().get("/ok")
    assert mapper.log == ["open", "commit", "close"]


def test_commit_when_decides() -> None:
    mapper = FakeMapper()
    app = Flask(__name__)
    EsmapperFlask(app, mapper, commit_when=lambda response: True)  # type: ignore[arg-type]

    @app.get("/invalid")
    def invalid() -> tuple[str, int]:
        return "kept anyway", 422

    assert app.test_client().get("/invalid").status_code == 422
    assert mapper.log == ["open", "commit", "close"]


def test_one_session_per_request_and_the_proxies() -> None:
    mapper = FakeMapper()
    client = make_app(mapper).test_client()
    first = client.get("/same")
    second = client.get("/same")
    assert first.status_code == second.status_code == 200
    assert len(mapper.sessions) == 2
    assert mapper.log == ["open", "commit", "close"] * 2


def test_a_request_context_driven_by_hand_commits_at_teardown() -> None:
    mapper = FakeMapper()
    app = make_app(mapper)
    with app.test_request_context("/ok"):
        app.preprocess_request()  # before_request: opens the session
        assert get_session() is mapper.sessions[0]  # type: ignore[comparison-overlap]
    assert mapper.log == ["open", "commit", "close"]


def test_an_application_context_session_is_closed_not_committed() -> None:
    mapper = FakeMapper()
    app = make_app(mapper)
    with app.app_context():
        assert get_session() is get_session()
    assert mapper.log == ["open", "close"]


def test_the_factory_pattern_and_several_apps() -> None:
    extension = EsmapperFlask(consistency="wait")
    one, two = FakeMapper(), FakeMapper()
    apps = [Flask("one"), Flask("two")]
    extension.init_app(apps[0], one)  # type: ignore[arg-type]
    extension.init_app(apps[1], two, soft_deletes="all")  # type: ignore[arg-type]
    for app in apps:
        app.get("/ok")(lambda: "ok")
        assert app.test_client().get("/ok").status_code == 200
    assert one.sessions[0].options == {"consistency": "wait"}
    assert two.sessions[0].options == {"consistency": "wait", "soft_deletes": "all"}
    assert EsmapperFlask.state(apps[1]).mapper is two  # type: ignore[comparison-overlap]


def test_set_up_errors() -> None:
    with pytest.raises(TypeError, match="needs a mapper"):
        EsmapperFlask(Flask(__name__))
    with pytest.raises(TypeError, match="unknown option"):
        init_app(Flask(__name__), FakeMapper(), colour="blue")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="consistency"):
        init_app(Flask(__name__), FakeMapper(), consistency="soon")  # type: ignore[arg-type]
    app = Flask(__name__)
    init_app(app, FakeMapper())  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="already set up"):
        init_app(app, FakeMapper())  # type: ignore[arg-type]


def test_using_the_session_without_set_up() -> None:
    with pytest.raises(RuntimeError, match="application context"):
        get_session()
    app = Flask("bare")
    with app.app_context(), pytest.raises(RuntimeError, match="init_app"):
        session.get(object, "x")  # type: ignore[type-var]
    with app.app_context(), pytest.raises(RuntimeError, match="not set up"):
        _ = current_mapper.models


def test_with_a_real_session() -> None:
    """The real Session class: nothing pending, so nothing is sent (no server needed)."""
    mapper = em.Mapper("http://127.0.0.1:9", models=[])
    app = Flask(__name__)
    init_app(app, mapper, consistency="wait")
    seen: list[em.Session] = []

    @app.get("/")
    def index() -> str:
        seen.append(get_session())
        assert isinstance(session, em.Session)
        return "ok"

    assert app.test_client().get("/").status_code == 200
    assert seen[0].closed and seen[0].options.consistency == "wait"
    assert esm_flask.EXTENSION_KEY in app.extensions
    mapper.close()
