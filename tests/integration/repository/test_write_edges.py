"""Edges of the write pipeline found by an adversarial review: partial saves that would
overwrite what was not read, resends after a lost answer that would overwrite a newer
write, nested undeclared fields, by-query requests that never answer."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper.testing.faults import FaultProxy


class Item(em.InnerDoc):
    name: str = ""
    qty: int = 0


class Place(em.InnerDoc):
    city: str = ""
    country: str = ""


class Thing(em.Document, em.HasDates, em.SoftDeletes, em.Versioned):
    class Index:
        name = "things"

    name: str = em.field(em.Keyword(), default="")
    age: int = em.field(em.Integer(), default=0)
    items: list[Item] = em.field(factory=list)
    place: Place | None = None
    data: dict[str, Any] | None = None


class Memo(em.Document):
    """Not Versioned: saves are unconditional."""

    class Index:
        name = "memos"

    text: str = ""


@pytest.fixture
def raw(es_url: str) -> Iterator[Elasticsearch]:
    with Elasticsearch(es_url) as client:
        yield client


@pytest.fixture
def proxied(es_url: str, index_prefix: str) -> Iterator[tuple[FaultProxy, em.Mapper]]:
    with (
        FaultProxy(es_url) as proxy,
        em.Mapper(
            proxy.url, models=[Thing, Memo], index_prefix=index_prefix, sleep=lambda _s: None
        ) as m,
    ):
        m.configure_indexes()
        yield proxy, m


def stored(raw: Elasticsearch, repo: em.Repository[Any], id: str) -> dict[str, Any]:
    return dict(raw.get(index=repo.spec.alias, id=id)["_source"])


def before_read_back(mapper: em.Mapper, action: Callable[[], object]) -> None:
    """Run ``action`` (another writer) just before the pipeline reads a write back."""
    real = mapper.client.mget

    def mget(**kwargs: Any) -> Any:
        mapper.client.mget = real  # type: ignore[method-assign]
        action()
        return real(**kwargs)

    mapper.client.mget = mget  # type: ignore[method-assign]


# -- partial saves ----------------------------------------------------------------------


def test_assigning_an_unloaded_field_its_default_is_written(
    proxied: tuple[FaultProxy, em.Mapper], raw: Elasticsearch
) -> None:
    repo = proxied[1].repository(Thing)
    repo.add(Thing(id="b", name="n", age=40, place=Place(city="R")), consistency="wait")
    doc = repo.find_one("id:b", includes=["name"])
    doc.age = 0
    doc.place = None
    repo.save(doc)
    source = stored(raw, repo, "b")
    assert source["age"] == 0 and source["place"] is None and source["name"] == "n"


def test_a_partially_loaded_list_cannot_be_saved(
    proxied: tuple[FaultProxy, em.Mapper], raw: Elasticsearch
) -> None:
    repo = proxied[1].repository(Thing)
    repo.add(Thing(id="a", items=[Item(name="x", qty=5)]), consistency="wait")
    doc = repo.find_one("id:a", includes=["items.name"])
    doc.items[0].name = "y"
    with pytest.raises(em.DocumentError, match="'items'"):
        repo.save(doc)
    assert stored(raw, repo, "a")["items"] == [{"name": "x", "qty": 5}]


def test_an_unloaded_field_mutated_in_place_is_refused(
    proxied: tuple[FaultProxy, em.Mapper], raw: Elasticsearch
) -> None:
    repo = proxied[1].repository(Thing)
    repo.add(Thing(id="t", items=[Item(name="kept")]), consistency="wait")
    doc = repo.find_one("id:t", includes=["name"])
    doc.items.append(Item(name="new"))  # items were not loaded: [] stands in for them
    with pytest.raises(em.DocumentError, match="not \\(fully\\) loaded"):
        repo.save(doc)
    assert stored(raw, repo, "t")["items"] == [{"name": "kept", "qty": 0}]


def test_removing_keys_of_a_loaded_dict_is_refused_on_a_partial_document(
    proxied: tuple[FaultProxy, em.Mapper], raw: Elasticsearch
) -> None:
    repo = proxied[1].repository(Thing)
    repo.add(Thing(id="d", data={"k": 1, "j": 2}), consistency="wait")
    doc = repo.find_one("id:d", excludes=["age"])
    doc.data.pop("k")
    with pytest.raises(em.DocumentError, match="remove keys"):
        repo.save(doc)
    assert stored(raw, repo, "d")["data"] == {"k": 1, "j": 2}


def test_a_partial_document_saves_twice_in_a_session(
    proxied: tuple[FaultProxy, em.Mapper], raw: Elasticsearch
) -> None:
    m = proxied[1]
    repo = m.repository(Thing)
    repo.add(
        Thing(id="ss", name="a", age=3, place=Place(city="R", country="IT")), consistency="wait"
    )
    with m.session() as s:
        doc = s.find(Thing, "id:ss", includes=["name"]).hits[0].document
        doc.name = "b"
        s.flush()
        doc.name = "c"
    source = stored(raw, repo, "ss")
    assert (source["name"], source["age"], source["place"]) == (
        "c",
        3,
        {"city": "R", "country": "IT"},
    )


def test_undeclared_keys_inside_embedded_objects_survive(
    proxied: tuple[FaultProxy, em.Mapper], raw: Elasticsearch
) -> None:
    repo = proxied[1].repository(Thing)
    repo.add(Thing(id="x", place=Place(city="R")), consistency="wait")
    raw.update(index=repo.spec.alias, id="x", doc={"place": {"zip": "00100"}}, refresh=True)
    doc = repo.get("x")
    doc.age = 3
    repo.save(doc)
    repo.patch("x", em.ActionPatch(lambda d: setattr(d, "age", 4)))
    assert stored(raw, repo, "x")["place"] == {"city": "R", "country": "", "zip": "00100"}


# -- resends after a lost answer ------------------------------------------------------------


def test_a_lost_save_overwritten_before_the_read_back_is_unknown_not_resent(
    proxied: tuple[FaultProxy, em.Mapper], raw: Elasticsearch
) -> None:
    proxy, m = proxied
    repo = m.repository(Memo)
    doc = repo.add(Memo(id="a", text="v1"), consistency="wait")
    doc.text = "mine"
    proxy.drop_connection(path=r"/_bulk$", after_forwarding=True)
    before_read_back(
        m, lambda: raw.index(index=repo.spec.alias, id="a", document={"text": "theirs"})
    )
    with pytest.raises(em.OutcomeUnknownError):
        repo.save(doc)
    assert stored(raw, repo, "a")["text"] == "theirs"  # their later write survives
    assert proxy.count(r"/_bulk$") == 2  # the add and the save: nothing resent


def test_a_lost_unconditional_save_not_applied_is_resent_at_the_version_read(
    proxied: tuple[FaultProxy, em.Mapper], raw: Elasticsearch
) -> None:
    proxy, m = proxied
    repo = m.repository(Memo)
    doc = repo.add(Memo(id="r", text="v1"), consistency="wait")
    doc.text = "v2"
    proxy.drop_connection(path=r"/_bulk$")
    repo.save(doc)
    assert stored(raw, repo, "r")["text"] == "v2"
    sent = [r for r in proxy.requests if r.path.endswith("/_bulk")]
    assert len(sent) == 3


def test_a_rejected_resend_still_settles_what_was_stored(
    es_url: str, index_prefix: str, raw: Elasticsearch
) -> None:
    with (
        FaultProxy(es_url) as proxy,
        em.Mapper(
            proxy.url,
            models=[Thing],
            index_prefix=index_prefix,
            sleep=lambda _s: None,
            bulk_chunk_size=1,
        ) as m,
    ):
        m.configure_indexes()
        repo = m.repository(Thing)
        a, b = Thing(id="a"), Thing(id="b")
        proxy.drop_connection(path=r"/_bulk$", skip=1)  # b's chunk never reaches the server
        before_read_back(m, lambda: proxy.reply_status(403, path=r"/_bulk$"))  # its resend: 403
        with pytest.raises(em.BulkWriteError) as caught:
            repo.add([a, b])
        assert caught.value.succeeded == [a] and a.version is not None
        assert raw.exists(index=repo.spec.alias, id="a")


# -- by query --------------------------------------------------------------------------------


def test_remove_all_without_any_answer_is_unknown_not_zero(
    proxied: tuple[FaultProxy, em.Mapper], raw: Elasticsearch
) -> None:
    proxy, m = proxied
    repo = m.repository(Memo)
    repo.add([Memo(id=f"m{i}") for i in range(3)], consistency="wait")
    proxy.drop_connection(path=r"_delete_by_query", times=10)
    with pytest.raises(em.OutcomeUnknownError):
        repo.remove_all()


def test_patch_by_ids_finds_documents_written_a_moment_ago(
    proxied: tuple[FaultProxy, em.Mapper], raw: Elasticsearch
) -> None:
    repo = proxied[1].repository(Thing)
    repo.add([Thing(id="p1", age=10), Thing(id="p2", age=20)])  # not refreshed
    repo.patch(["p1", "p2"], em.ActionPatch(lambda d: setattr(d, "age", d.age + 1)))
    assert [stored(raw, repo, i)["age"] for i in ("p1", "p2")] == [11, 21]


def test_a_soft_delete_by_patch_is_hidden_from_unrefreshed_searches(
    proxied: tuple[FaultProxy, em.Mapper],
) -> None:
    repo = proxied[1].repository(Thing)
    repo.add(Thing(id="s1"), consistency="immediate")
    repo.patch("s1", em.PartialPatch({"is_deleted": True}))
    assert repo.count("id:s1") == 0


# -- update_with_retry: a lost answer is read back, never a second call of fn -------------


def test_update_with_retry_settles_a_lost_save_by_reading_it_back(
    proxied: tuple[FaultProxy, em.Mapper], raw: Elasticsearch
) -> None:
    proxy, m = proxied
    repo = m.repository(Thing)
    repo.add(Thing(id="u", age=1), consistency="wait")
    seen: list[int] = []

    def bump(thing: Thing) -> None:
        seen.append(thing.age)
        thing.age += 1

    proxy.drop_connection(path=r"/_bulk$", after_forwarding=True)  # applied, answer lost
    saved = repo.update_with_retry("u", bump)
    assert saved.age == 2
    assert seen == [1]  # fn ran once: the applied save was read back, not retried
    assert stored(raw, repo, "u")["age"] == 2
    assert proxy.count(r"/_bulk$") == 2  # the add and the save: nothing resent
