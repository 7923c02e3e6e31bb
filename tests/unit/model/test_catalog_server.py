"""``FieldCatalog.with_server``: declared names win and never call the server; names not
declared resolve in the server's fields; ``in`` answers for declared names only."""

from __future__ import annotations

import datetime as dt
import threading
from types import SimpleNamespace
from typing import Any

import pytest

from esmapper import _server_mapping
from esmapper.model.catalog import FieldCatalog

DECLARED = FieldCatalog({"properties": {"name": {"type": "text"}, "age": {"type": "long"}}})
SERVER = FieldCatalog({"properties": {"name": {"type": "keyword"}, "color": {"type": "keyword"}}})


def test_the_server_is_asked_only_for_names_not_declared() -> None:
    calls: list[int] = []

    def server() -> FieldCatalog:
        calls.append(1)
        return SERVER

    widened = DECLARED.with_server(server)
    assert widened.resolve("name").type == "text"
    assert "color" not in widened and "name" in widened
    assert calls == []
    assert widened.resolve("color").type == "keyword"
    assert calls == [1]
    assert widened.names() == ["age", "color", "name"]
    assert DECLARED.get("color") is None  # the original is not widened


def test_a_server_without_fields_leaves_the_declared_ones() -> None:
    widened = DECLARED.with_server(lambda: None)
    assert widened.get("color") is None
    assert widened.names() == ["age", "name"]


def test_threads_waiting_for_a_failed_read_share_its_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # N threads asking while one read hangs and fails: one read, N errors (not N reads in
    # turn, the last thread waiting N timeouts); the next ask reads again
    mappings = _server_mapping.ServerMappings()
    ctx = SimpleNamespace(clock=lambda: dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc))
    info = SimpleNamespace(cls=int, name="Int")
    reads: list[int] = []
    waiting = 4

    def failing_read(ctx: Any, info: Any) -> FieldCatalog:
        reads.append(1)
        while mappings._models[int].tickets < waiting:  # every thread has asked
            threading.Event().wait(0.01)
        raise ConnectionError("dropped")

    monkeypatch.setattr(_server_mapping, "_read", failing_read)
    errors: list[BaseException] = []

    def ask() -> None:
        try:
            mappings.catalog(ctx, info)  # type: ignore[arg-type]
        except ConnectionError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=ask) for _ in range(waiting)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(reads) == 1 and len(errors) == waiting
    monkeypatch.setattr(_server_mapping, "_read", lambda ctx, info: SERVER)
    assert mappings.catalog(ctx, info) is SERVER  # type: ignore[arg-type]
