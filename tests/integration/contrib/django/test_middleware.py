"""EsmapperMiddleware on the test server: what a request writes is committed before its
response is sent, and only when it succeeds; a failed commit is an error response; two
requests editing one document end in one 409, never a lost update."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.http import HttpRequest
from django.test import Client

import esmapper as em
from esmapper.contrib.django import _mapper, close_mapper, get_mapper, session

from .documents import Note
from .urls import Hooks


@pytest.fixture
def mapper(esmapper_django_mapper: em.Mapper) -> em.Mapper:
    return esmapper_django_mapper


@pytest.fixture
def client() -> Iterator[Client]:
    yield Client(raise_request_exception=False)
    Hooks.between = staticmethod(lambda: None)


def stored(mapper: em.Mapper, id: str) -> Note | None:
    return mapper.repository(Note).get(id, cache=False)


def test_the_process_mapper_is_the_tests(mapper: em.Mapper) -> None:
    assert get_mapper() is mapper


def test_a_successful_request_is_written_before_its_response(
    client: Client, mapper: em.Mapper
) -> None:
    assert client.post("/notes/n1?text=hello").status_code == 201
    note = stored(mapper, "n1")  # a real-time read right after the response
    assert note is not None and note.text == "hello"


def test_a_write_in_a_failing_request_is_not_committed(client: Client, mapper: em.Mapper) -> None:
    assert client.post("/notes/n2/then-fail").status_code == 500
    assert stored(mapper, "n2") is None


def test_an_error_status_rolls_the_write_back(client: Client, mapper: em.Mapper) -> None:
    response = client.post("/notes/n3/then-refuse")
    assert response.status_code == 400
    assert stored(mapper, "n3") is None


def test_a_failed_commit_is_a_409_not_a_200(client: Client, mapper: em.Mapper) -> None:
    mapper.repository(Note).add(Note(id="n4", text="first"), consistency="wait")

    def someone_else_saves() -> None:
        other = stored(mapper, "n4")
        assert other is not None
        other.text = "theirs"
        mapper.repository(Note).save(other, consistency="wait")

    Hooks.between = staticmethod(someone_else_saves)  # between the request's read and commit
    response = client.post("/notes/n4/edit?text=mine", HTTP_ACCEPT="application/json")
    assert response.status_code == 409
    body = response.json()
    assert body["error"] == "VersionConflictError" and body["ids"] == ["n4"]
    assert stored(mapper, "n4").text == "theirs"
    page = client.post("/notes/n4/edit?text=mine2", HTTP_ACCEPT="text/html")  # again
    assert page.status_code == 409 and page["Content-Type"].startswith("text/plain")
    assert stored(mapper, "n4").text == "theirs"


def test_two_concurrent_edits_of_one_document_end_in_one_409(
    client: Client, mapper: em.Mapper
) -> None:
    for round in range(5):
        id = f"n5-{round}"
        mapper.repository(Note).add(Note(id=id, text="first"), consistency="wait")
        both_read = threading.Barrier(2, timeout=60)
        Hooks.between = staticmethod(both_read.wait)  # both read version 1 before a commit

        def edit(text: str, id: str = id) -> tuple[int, str]:
            response = Client(raise_request_exception=False).post(
                f"/notes/{id}/edit?text={text}", HTTP_ACCEPT="application/json"
            )
            return response.status_code, response.content.decode()

        with ThreadPoolExecutor(2) as pool:
            answers = dict(zip(["one", "two"], pool.map(edit, ["one", "two"]), strict=True))
        statuses = sorted(status for status, _ in answers.values())
        assert statuses == [200, 409], answers
        winner = next(text for text, (status, _) in answers.items() if status == 200)
        assert stored(mapper, id).text == winner  # the 409's write is not in


def test_the_esmapper_errors_are_answered(client: Client, mapper: em.Mapper) -> None:
    missing = client.post("/notes/nobody/edit?text=x", HTTP_ACCEPT="application/json")
    assert missing.status_code == 404
    assert missing.json() == {
        "detail": 'Document "nobody" could not be found',
        "error": "DocumentNotFoundError",
        "ids": ["nobody"],
    }
    page = client.post("/notes/nobody/edit?text=x", HTTP_ACCEPT="text/html")
    assert page.status_code == 404 and "text/html" in page["Content-Type"]  # Django's page
    query = client.get("/search?q=salary:>3", HTTP_ACCEPT="application/json")
    assert query.status_code == 422
    assert query.json()["error"] == "QueryValidationError" and query.json()["field"] == "salary"
    plain = client.get("/search?q=salary:>3")
    assert plain.status_code == 422 and plain["Content-Type"].startswith("text/plain")


def test_the_session_needs_the_middleware_and_refuses_async_code() -> None:
    with pytest.raises(RuntimeError, match='add "esmapper\\.contrib'):
        session(HttpRequest())

    async def in_a_view(request: HttpRequest) -> None:
        session(request)

    request = HttpRequest()
    from esmapper.contrib.django.middleware import RequestState

    request._esmapper = RequestState()  # type: ignore[attr-defined]
    with pytest.raises(RuntimeError, match="would block the event loop"):
        asyncio.run(in_a_view(request))


def test_a_stream_is_committed_before_its_body_and_a_redirect_commits(
    client: Client, mapper: em.Mapper
) -> None:
    streamed = client.get("/notes/s1/then-stream")
    assert streamed.status_code == 200
    assert b"".join(streamed.streaming_content) == b"committed"
    assert client.post("/notes/s2/then-redirect").status_code == 302
    assert stored(mapper, "s2").text == "redirected"


def test_a_request_that_asks_for_no_session_builds_no_mapper() -> None:
    close_mapper()  # no test mapper either: the settings' would be built on use
    client = Client(raise_request_exception=False)
    assert client.get("/plain").status_code == 200
    assert _mapper._State.mapper is None
