"""esmapper.contrib.fastapi on the test server: what a request writes is committed before
its response is sent, and only when it succeeds; a failed commit is an error response; two
requests editing one document end in one 409, never a lost update."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx2 as httpx
import pytest
from fastapi import FastAPI, HTTPException
from fastapi.testclient import TestClient

import esmapper as em
from esmapper.contrib.fastapi import EsmapperFastAPI, MapperDep, SessionDep

from ..conftest import MakeMapper


class Note(em.Document, em.Versioned):
    class Index:
        name = "fastapi_notes"
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    text: str = em.field(em.Keyword(), default="")
    likes: int = em.field(em.Integer(), default=0)


class Hooks:
    """What the endpoints do between their read and their return (set by a test)."""

    def __init__(self) -> None:
        self.between: Callable[[], object] = lambda: None


def build_app(mapper: em.Mapper, hooks: Hooks) -> FastAPI:
    esm = EsmapperFastAPI(mapper, consistency="wait")
    app = FastAPI(lifespan=esm.lifespan)
    esm.init_app(app)

    @app.post("/notes/{id}", status_code=201)
    def create(id: str, text: str, session: SessionDep) -> dict[str, Any]:
        session.add(Note(id=id, text=text))
        return {"id": id}

    @app.post("/notes/{id}/then-fail")
    def create_then_fail(id: str, session: SessionDep) -> None:
        session.add(Note(id=id, text="never"))
        raise RuntimeError("the request fails after its write")

    @app.post("/notes/{id}/then-refuse")
    def create_then_refuse(id: str, session: SessionDep) -> None:
        session.add(Note(id=id, text="never"))
        raise HTTPException(400, "refused after the write")

    @app.put("/notes/{id}")
    def edit(id: str, text: str, session: SessionDep) -> dict[str, Any]:
        note = session.get(Note, id, cache=False)
        if note is None:
            raise em.DocumentNotFoundError(id)
        note.text = text
        hooks.between()
        return {"id": id, "text": text}

    @app.get("/notes")
    def search(q: str, session: SessionDep) -> list[str]:
        return [n.text for n in session.find(Note, q)]

    @app.get("/count")
    def count(mapper: MapperDep) -> int:
        return mapper.repository(Note).count()

    return app


@pytest.fixture
def mapper(make_mapper: MakeMapper) -> em.Mapper:
    return make_mapper(Note, configure=True)


@pytest.fixture
def hooks() -> Hooks:
    return Hooks()


@pytest.fixture
def client(mapper: em.Mapper, hooks: Hooks) -> Iterator[TestClient]:
    with TestClient(build_app(mapper, hooks), raise_server_exceptions=False) as running:
        yield running


def stored(mapper: em.Mapper, id: str) -> Note | None:
    return mapper.repository(Note).get(id, cache=False)


def test_a_successful_request_is_written_before_its_response(
    client: TestClient, mapper: em.Mapper
) -> None:
    assert client.post("/notes/n1", params={"text": "hello"}).status_code == 201
    note = stored(mapper, "n1")  # a real-time read right after the response
    assert note is not None and note.text == "hello"


def test_a_write_in_a_failing_request_is_not_committed(
    client: TestClient, mapper: em.Mapper
) -> None:
    assert client.post("/notes/n2/then-fail").status_code == 500
    assert stored(mapper, "n2") is None


def test_an_error_status_rolls_the_write_back(client: TestClient, mapper: em.Mapper) -> None:
    response = client.post("/notes/n3/then-refuse")
    assert response.status_code == 400 and response.json() == {"detail": "refused after the write"}
    assert stored(mapper, "n3") is None


def test_a_failed_commit_is_a_409_not_a_200(
    client: TestClient, mapper: em.Mapper, hooks: Hooks
) -> None:
    mapper.repository(Note).add(Note(id="n4", text="first"), consistency="wait")

    def someone_else_saves() -> None:
        other = stored(mapper, "n4")
        assert other is not None
        other.text = "theirs"
        mapper.repository(Note).save(other, consistency="wait")

    hooks.between = someone_else_saves  # between the request's read and its commit
    response = client.put("/notes/n4", params={"text": "mine"})
    assert response.status_code == 409
    body = response.json()
    assert body["error"] == "VersionConflictError" and body["ids"] == ["n4"]
    assert stored(mapper, "n4").text == "theirs"


def test_two_concurrent_edits_of_one_document_end_in_one_409(
    client: TestClient, mapper: em.Mapper, hooks: Hooks
) -> None:
    mapper.repository(Note).add(Note(id="n5", text="first"), consistency="wait")
    both_read = threading.Barrier(2, timeout=60)
    hooks.between = both_read.wait  # each request has read version 1 before either commits

    def edit(text: str) -> httpx.Response:
        return client.put("/notes/n5", params={"text": text})

    with ThreadPoolExecutor(2) as pool:
        responses = list(pool.map(edit, ["one", "two"]))
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200, 409]
    [winner] = [r.json()["text"] for r in responses if r.status_code == 200]
    assert stored(mapper, "n5").text == winner  # the 200 was written; the 409 was not


def test_the_handlers_answer_real_errors(client: TestClient, mapper: em.Mapper) -> None:
    missing = client.put("/notes/nobody", params={"text": "x"})
    assert missing.status_code == 404
    assert missing.json() == {
        "detail": 'Document "nobody" could not be found',
        "error": "DocumentNotFoundError",
        "ids": ["nobody"],
    }
    invalid = client.get("/notes", params={"q": "colour:red"})
    assert invalid.status_code == 422
    assert invalid.json()["error"] == "QueryValidationError"
    assert "colour" in invalid.json()["detail"]
    assert client.post("/notes/n6", params={"text": "a"}).status_code == 201
    duplicate = client.post("/notes/n6", params={"text": "b"})  # add over an existing id
    assert duplicate.status_code == 409
    assert duplicate.json()["error"] == "DuplicateDocumentError"
    assert stored(mapper, "n6").text == "a"
    assert client.get("/count").json() == 1
