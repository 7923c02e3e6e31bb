"""The contacts API as two uvicorn worker processes sharing Redis: an edit through one
worker is read through the other at once (its cached copy is not served stale)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from examples.contacts_api.models import build_mapper
from examples.contacts_api.workers import Workers


@pytest.fixture
def workers(es_url: str, index_prefix: str, redis_url: str) -> Iterator[Workers]:
    with build_mapper(es_url, index_prefix=index_prefix) as mapper:
        mapper.configure_indexes()
    env = {
        "ESMAPPER_URL": es_url,
        "ESMAPPER_INDEX_PREFIX": index_prefix,
        "ESMAPPER_REDIS_URL": redis_url,
    }
    with Workers(2, "127.0.0.1", 0, env) as running:
        yield running


def call(url: str, method: str = "GET", body: Any = None) -> tuple[int, Any, str]:
    """``(status, JSON body, worker pid)`` of ``method url``."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            raw = response.read()
            return response.status, json.loads(raw) if raw else None, response.headers["X-Worker"]
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read()), error.headers["X-Worker"]


def test_an_edit_through_one_worker_is_read_through_the_other(workers: Workers) -> None:
    one, two = workers.private_urls
    status, ada, _ = call(f"{one}/contacts", "POST", {"name": "Ada", "company": "acme"})
    assert status == 201
    for round, (writer, reader) in enumerate([(one, two), (two, one)] * 2):
        status, before, read_by = call(f"{reader}/contacts/{ada['id']}")  # cached by reader
        assert status == 200
        edit = {"version": before["version"], "name": f"Ada {round}"}
        status, edited, written_by = call(f"{writer}/contacts/{ada['id']}", "PATCH", edit)
        assert status == 200, edited
        status, after, read_again_by = call(f"{reader}/contacts/{ada['id']}")
        assert after == edited  # the new name and version, not the reader's cached copy
        assert read_by == read_again_by != written_by  # two processes answered
    status, listed, _ = call(f"{workers.url}/contacts?q=name:Ada")  # the shared port serves
    assert status == 200 and listed["total"] == 1


def test_a_delete_through_one_worker_is_seen_by_the_other(workers: Workers) -> None:
    one, two = workers.private_urls
    _, bob, _ = call(f"{one}/contacts", "POST", {"name": "Bob", "company": "acme"})
    assert call(f"{two}/contacts/{bob['id']}")[0] == 200  # cached by worker two
    assert call(f"{one}/contacts/{bob['id']}", "DELETE")[0] == 204
    status, body, _ = call(f"{two}/contacts/{bob['id']}")
    assert status == 404 and body["error"] == "DocumentNotFoundError"


def test_a_worker_stops_when_the_process_that_started_it_is_gone(workers: Workers) -> None:
    """No orphan keeps serving when the test process dies without stopping its workers:
    each worker stops at the end of its stdin, which the parent's exit closes."""
    first, second = workers.procs
    assert first.stdin is not None
    first.stdin.close()  # what the parent's death does to the pipe
    assert first.wait(60) == 0  # a clean shutdown (the lifespan closed its mapper)
    assert second.poll() is None and call(f"{workers.private_urls[1]}/contacts")[0] == 200
