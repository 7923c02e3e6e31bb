"""Reading a lock document: a document deleted as it was read is not there."""

from __future__ import annotations

from typing import Any

from esmapper.locks import LockProvider


class _Answer:
    def __init__(self, body: dict[str, Any]) -> None:
        self.body = body


class _Client:
    def __init__(self, body: dict[str, Any]) -> None:
        self.answer = body

    def get(self, **_: Any) -> _Answer:
        return _Answer(self.answer)


def test_a_lock_answered_found_false_is_not_held_by_anyone() -> None:
    client = _Client({"_index": "esmapper-locks", "_id": "reindex:x", "found": False})
    provider = LockProvider(client)  # type: ignore[arg-type]
    assert provider.read("reindex:x") is None
    assert provider.holder("reindex:x") is None


def test_a_lock_document_is_read_with_its_source() -> None:
    source = {"owner": "me", "expires_at": "2026-12-05T01:00:00Z"}
    client = _Client({"_id": "reindex:x", "found": True, "_source": source, "_seq_no": 3})
    provider = LockProvider(client)  # type: ignore[arg-type]
    read = provider.read("reindex:x")
    assert read is not None and read["_source"] == source
    holder = provider.holder("reindex:x")
    assert holder is not None and holder.owner == "me"
