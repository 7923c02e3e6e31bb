"""``soft_deletes="deleted"`` on a model without ``SoftDeletes`` is refused before anything
is sent (issue 29, item 11): nothing of such a model is ever soft-deleted, and its searches
have no ``is_deleted`` clause, so the call would have answered every document. ``"active"``
and ``"all"`` are taken (they mean every document there), and a session's mode applies only
to the models that have soft deletes, as a session's ``tenant`` applies only to the models
that have tenants."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import esmapper as em
from esmapper.testing.faults import FaultProxy
from tests.integration.conftest import MakeMapper

from .models import Employee, Message

READS: dict[str, Callable[[em.Repository[Message]], Any]] = {
    "find": lambda r: r.find(soft_deletes="deleted"),
    "find_one": lambda r: r.find_one("body:hello", soft_deletes="deleted"),
    "count": lambda r: r.count(soft_deletes="deleted"),
    "aggregate": lambda r: r.aggregate(aggregations="terms:tenant", soft_deletes="deleted"),
    "batch_process": lambda r: r.batch_process(None, print, soft_deletes="deleted"),
    "get": lambda r: r.get("t1:m1:h", soft_deletes="deleted"),
    "get_many": lambda r: r.get_many(["t1:m1:h"], soft_deletes="deleted"),
    "exists by id": lambda r: r.exists("t1:m1:h", soft_deletes="deleted"),
    "exists by filter": lambda r: r.exists(filter="body:hello", soft_deletes="deleted"),
    "remove_all": lambda r: r.remove_all("body:hello", soft_deletes="deleted"),
    "patch_all": lambda r: r.patch_all(
        "body:hello", em.PartialPatch({"body": "x"}), soft_deletes="deleted"
    ),
}


@pytest.fixture
def messages_through(make_mapper: MakeMapper, proxy: FaultProxy) -> em.Repository[Message]:
    mapper = make_mapper(Employee, Message, url=proxy.url, configure=True)
    repo = mapper.repository(Message)
    repo.add(Message(tenant="t1", message_id="m1", handler_type="h", body="hello"),
             consistency="wait")  # fmt: skip
    return repo


@pytest.mark.parametrize("call", list(READS))
def test_deleted_only_on_a_model_without_soft_deletes_is_refused(
    messages_through: em.Repository[Message], proxy: FaultProxy, call: str
) -> None:
    proxy.reset_counts()
    with pytest.raises(em.QueryValidationError) as raised:
        READS[call](messages_through)
    message = str(raised.value)
    assert "soft_deletes='deleted'" in message and "Message" in message
    assert "has no soft deletes" in message and "em.SoftDeletes" in message
    assert raised.value.field == "soft_deletes"
    assert isinstance(raised.value, ValueError)
    assert proxy.requests == []  # refused before anything was sent


def test_active_and_all_mean_every_document_there(mapper: em.Mapper) -> None:
    repo = mapper.repository(Message)
    stored = repo.add(Message(tenant="t1", message_id="m1", handler_type="h", body="hello"),
                      consistency="wait")  # fmt: skip
    for mode in ("active", "all"):
        assert [m.id for m in repo.find(soft_deletes=mode)] == [stored.id]
        assert repo.get(stored.id, soft_deletes=mode) is not None
        assert repo.count(soft_deletes=mode) == 1


def test_a_sessions_mode_applies_to_the_models_with_soft_deletes(mapper: em.Mapper) -> None:
    message = mapper.repository(Message).add(
        Message(tenant="t1", message_id="m1", handler_type="h"), consistency="wait"
    )
    mapper.repository(Employee).add(
        [Employee(id="gone", name="Gone", is_deleted=True), Employee(id="here", name="Here")],
        consistency="wait",
    )
    with mapper.session(soft_deletes="deleted") as session:
        assert [e.id for e in session.find(Employee)] == ["gone"]
        assert session.get(Employee, "here") is None
        # a model without soft deletes: the session's mode does not apply to it
        assert [m.id for m in session.find(Message)] == [message.id]
        assert session.get(Message, message.id) is not None
        # given to the call, it is the call's mistake
        with pytest.raises(em.QueryValidationError, match="Message, which has no soft deletes"):
            session.find(Message, soft_deletes="deleted")


def test_deleted_only_is_refused_on_a_cached_hit_too(
    make_mapper: MakeMapper, proxy: FaultProxy
) -> None:
    """A hit kept in process takes the cached get's own path (its checks worked out once
    per read): the refusal holds there as on a miss."""
    mapper = make_mapper(Employee, Message, url=proxy.url, configure=True, cache=em.InMemoryCache())
    repo = mapper.repository(Message)
    repo.add(Message(tenant="t1", message_id="m1", handler_type="h", body="hello"),
             consistency="wait")  # fmt: skip
    for _ in range(2):  # cached, then a copy of the kept document
        found = repo.get("t1:m1:h", cache=True, soft_deletes="all")
        assert found is not None and found.body == "hello"
    proxy.reset_counts()
    with pytest.raises(em.QueryValidationError, match="has no soft deletes"):
        repo.get("t1:m1:h", cache=True, soft_deletes="deleted")
    assert proxy.requests == []
