"""A custom field's name under a lapsed tenant lock: a holder paused past its lease (after it
checked the tenant's names) resumes after another process took the lock over and used the
name; the name's create-only claim keeps one active field per name. And the tenant lock's
lease is a parameter.

The pause is simulated deterministically: the holder is held on an event right after its
checks, and its lease is ended by deleting its lock document (what an expiry allows
another process to do)."""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable
from typing import Any

import pytest
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper.custom_fields import repository as cf_repository
from esmapper.custom_fields import slots
from esmapper.ids import compose_id
from esmapper.model.codec import parse_datetime
from tests.integration.conftest import MakeMapper

from .models import Employee

PAUSED = "paused-holder"


def _active(fields: em.CustomFieldRepository, tenant: str, name: str) -> list[Any]:
    found = fields.find_by_tenant(tenant, consistency="immediate")
    return [d for d in found if d.name.lower() == name.lower()]


def _pause_in(
    monkeypatch: pytest.MonkeyPatch, owner: Any, attribute: str, *, after: bool = False
) -> tuple[threading.Event, threading.Event]:
    """Hold the thread named PAUSED when it calls ``owner.attribute`` (``after``: once the
    call returned)."""
    paused, resume = threading.Event(), threading.Event()
    real: Callable[..., Any] = getattr(owner, attribute)

    def held(*args: Any, **kwargs: Any) -> Any:
        result = real(*args, **kwargs) if after else None
        if threading.current_thread().name == PAUSED:
            paused.set()
            assert resume.wait(60)
        return result if after else real(*args, **kwargs)

    monkeypatch.setattr(owner, attribute, held)
    return paused, resume


def _run_paused(work: Callable[[], Any], outcome: dict[str, Any]) -> threading.Thread:
    def body() -> None:
        try:
            outcome["paused"] = work()
        except BaseException as exc:
            outcome["paused"] = exc

    thread = threading.Thread(target=body, name=PAUSED)
    thread.start()
    return thread


def _end_lease(es_client: Elasticsearch, index_prefix: str, tenant: str) -> None:
    lock = "customfield:" + compose_id(Employee.__esmapper__.name, tenant)  # type: ignore[attr-defined]
    es_client.delete(index=f"{index_prefix}esmapper-locks", id=lock, refresh=True)


def test_a_paused_holder_does_not_add_a_second_active_field_of_a_name(
    fields: em.CustomFieldRepository,
    make_mapper: MakeMapper,
    es_client: Elasticsearch,
    index_prefix: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    paused, resume = _pause_in(monkeypatch, slots, "allocate")
    outcome: dict[str, Any] = {}
    holder = _run_paused(lambda: fields.add_field("acme", "Level", "int"), outcome)
    assert paused.wait(60)  # it checked the names under its lock: "Level" is free
    _end_lease(es_client, index_prefix, "acme")
    other = make_mapper(Employee).custom_fields(Employee).add_field("acme", "level", "int")
    resume.set()
    holder.join(60)

    assert not isinstance(outcome["paused"], BaseException), outcome["paused"]
    assert outcome["paused"].id == other.id  # the field the other process added
    assert [d.id for d in _active(fields, "acme", "Level")] == [other.id]


def test_a_paused_rename_does_not_take_a_name_used_meanwhile(
    fields: em.CustomFieldRepository,
    make_mapper: MakeMapper,
    es_client: Elasticsearch,
    index_prefix: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    team = fields.add_field("acme", "Team", "string")
    paused, resume = _pause_in(monkeypatch, cf_repository, "check_free", after=True)
    outcome: dict[str, Any] = {}
    holder = _run_paused(lambda: fields.rename_field("acme", "Team", "Grade"), outcome)
    assert paused.wait(60)  # it found "Grade" free under its lock
    _end_lease(es_client, index_prefix, "acme")
    other = make_mapper(Employee).custom_fields(Employee).add_field("acme", "Grade", "int")
    resume.set()
    holder.join(60)

    assert isinstance(outcome["paused"], em.DocumentValidationError), outcome["paused"]
    assert [d.id for d in _active(fields, "acme", "Grade")] == [other.id]
    assert [d.id for d in _active(fields, "acme", "Team")] == [team.id]
    # the registry follows renames and deletes: the names are free again afterwards
    fields.remove_field("acme", "Grade")
    renamed = fields.rename_field("acme", "Team", "Grade")
    assert [d.id for d in _active(fields, "acme", "Grade")] == [renamed.id]
    assert fields.add_field("acme", "Team", "int").id != team.id


def test_the_tenant_lock_lease_is_a_parameter(
    fields: em.CustomFieldRepository,
    es_client: Elasticsearch,
    index_prefix: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for bad in (dt.timedelta(0), dt.timedelta(seconds=-1)):
        with pytest.raises(ValueError, match="lock_ttl"):
            fields.lock_ttl = bad
    with pytest.raises(ValueError, match="lock_wait"):
        fields.lock_wait = dt.timedelta(seconds=-1)
    fields.lock_ttl = dt.timedelta(seconds=7)
    seen: list[float] = []
    real = slots.allocate

    def allocate(*args: Any, **kwargs: Any) -> Any:
        lock = "customfield:" + compose_id(Employee.__esmapper__.name, "acme")  # type: ignore[attr-defined]
        source = es_client.get(index=f"{index_prefix}esmapper-locks", id=lock)["_source"]
        lease = parse_datetime(source["expires_at"]) - parse_datetime(source["acquired_at"])
        seen.append(lease.total_seconds())
        return real(*args, **kwargs)

    monkeypatch.setattr(slots, "allocate", allocate)
    fields.add_field("acme", "Level", "int")
    assert len(seen) == 1 and 7 <= seen[0] < 8
