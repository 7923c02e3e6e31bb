"""Adversarial review: a definition change that lands while a write is in flight (its
``idx`` computed from the mapping read before the change, sent after it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import esmapper as em
from tests.integration.conftest import MakeMapper
from tests.integration.distributed.conftest import wait_leased

#: what the hook type runs once, in the middle of a write (after the mapping was read)
_hooks: list[Callable[[], object]] = []


class HookType:
    """Runs a pending hook when it processes a value: a definition change made by another
    writer at the worst moment, deterministically."""

    type = "hook"

    def mapping(self) -> Any:
        return em.Keyword()

    def process_value(self, doc: Any, value: Any, definition: Any) -> em.ProcessResult:
        while _hooks:
            _hooks.pop()()
        return em.ProcessResult(value)


class Racer(em.Document, em.Versioned, em.HasCustomFields):
    class Index:
        name = "cf_racers"
        tenant_field = "company_id"
        custom_field_types = [*em.standard_field_types(), HookType()]  # noqa: RUF012
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    name: str = em.field(em.Keyword(), default="")
    company_id: str = em.field(em.Keyword(), default="")


@pytest.fixture
def rmapper(make_mapper: MakeMapper) -> em.Mapper:
    return make_mapper(Racer, configure=True)
    _hooks.clear()


def _setup(m: em.Mapper) -> tuple[em.CustomFieldRepository, em.Repository[Racer]]:
    fields = m.custom_fields(Racer)
    fields.add_field("acme", "Hook", "hook", process_order=-1)  # processed first
    fields.add_field("acme", "Level", "int")
    return fields, m.repository(Racer)


def test_a_slot_freed_and_reused_during_a_write_does_not_take_its_stale_value(
    rmapper: em.Mapper,
) -> None:
    fields, repo = _setup(rmapper)

    def reuse() -> None:
        fields.remove_field("acme", "Level", hard=True)
        assert fields.add_field("acme", "Score", "int").index_slot == 1  # Level's slot

    _hooks.append(reuse)
    doc = repo.add(
        Racer(name="r", company_id="acme", custom_fields={"Hook": "x", "Level": 5}),
        consistency="immediate",
    )
    assert not _hooks  # the hook ran mid-write
    # the document has no Score: its former Level value must not be found as one
    assert repo.count("score:5", tenant="acme") == 0
    stored = rmapper.client.get(index=rmapper.spec(Racer).alias, id=doc.id or "").body
    assert (stored["_source"].get("idx") or {}).get("int-1") is None
    # the object in hand says what is stored, and saves again without a conflict
    assert doc.idx == {"hook-1": "x"}
    doc.name = "r2"
    repo.save(doc, consistency="immediate")
    assert repo.count("score:5", tenant="acme") == 0


def test_a_field_added_during_a_write_indexes_its_value(rmapper: em.Mapper) -> None:
    fields, repo = _setup(rmapper)
    _hooks.append(lambda: fields.add_field("acme", "Grade", "int"))
    doc = repo.add(
        Racer(name="r", company_id="acme", custom_fields={"Hook": "x", "Grade": 7}),
        consistency="immediate",
    )
    assert not _hooks
    # written after the field existed (the write returned after add_field did)
    assert repo.count("grade:7", tenant="acme") == 1
    assert doc.idx == {"hook-1": "x", "int-2": 7}
    doc.name = "r1"
    repo.save(doc, consistency="immediate")  # its version is current: no conflict
    with rmapper.session(consistency="immediate") as session:  # its version is current
        loaded = session.get(Racer, doc.id or "")
        assert loaded is not None
        loaded.name = "r2"
    assert repo.count("grade:7", tenant="acme") == 1


def test_a_write_without_a_definition_change_sends_no_recheck(rmapper: em.Mapper) -> None:
    _, repo = _setup(rmapper)
    repo.add(Racer(name="a", company_id="acme", custom_fields={"Level": 1}))
    searches: list[Any] = []
    original = rmapper.client.mget

    def counting(*args: Any, **kwargs: Any) -> Any:
        searches.append(kwargs)
        return original(*args, **kwargs)

    rmapper.client.mget = counting  # type: ignore[method-assign]
    try:
        repo.add(Racer(name="b", company_id="acme", custom_fields={"Level": 2}))
    finally:
        del rmapper.client.mget
    assert searches == []


def test_a_field_renamed_during_a_write_is_found_by_its_new_name(rmapper: em.Mapper) -> None:
    fields, repo = _setup(rmapper)
    _hooks.append(lambda: fields.rename_field("acme", "Level", "Rank") and None)
    repo.add(
        Racer(name="r", company_id="acme", custom_fields={"Hook": "x", "Level": 3}),
        consistency="immediate",
    )
    assert repo.count("rank:3", tenant="acme") == 1


def _lease(m: em.Mapper) -> None:
    link = getattr(m.cache, "link", None)
    assert link is None or wait_leased(link)


def test_a_slot_reused_by_another_process_during_a_write_through_redis(
    es_url: str, redis_url: str, index_prefix: str
) -> None:
    # two mappers on one Redis stand for two processes: each its own local cache layer,
    # its own repository (this one never hears of the other's changes but through Redis)
    mappers = [
        em.Mapper(es_url, models=[Racer], index_prefix=index_prefix, redis=redis_url)
        for _ in range(2)
    ]
    try:
        mine, other = mappers
        mine.configure_indexes()
        for m in mappers:
            _lease(m)
        _setup(other)
        repo = mine.repository(Racer)
        # the mapping is cached (and recently loaded: no recheck before the write)
        repo.add(Racer(name="w", company_id="acme", custom_fields={"Level": 1}))
        theirs = other.custom_fields(Racer)

        def reuse() -> None:
            theirs.remove_field("acme", "Level", hard=True)
            theirs.add_field("acme", "Score", "int")

        _hooks.append(reuse)
        doc = repo.add(
            Racer(name="r", company_id="acme", custom_fields={"Hook": "x", "Level": 5}),
            consistency="immediate",
        )
        assert not _hooks
        assert repo.count("score:5", tenant="acme") == 0
        assert doc.idx == {"hook-1": "x"}
    finally:
        for m in mappers:
            m.close()
