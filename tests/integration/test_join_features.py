"""A child of a join (:mod:`esmapper._join`) with the other features built beside it: the
originals read, a repository with cache hooks (its removals and patches by id load the
documents first), ``update_with_retry`` and batch notifications. Each keeps the child's
routing (its parent id)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pytest
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper import signals
from esmapper.cache import InMemoryCache
from esmapper.indexes import ReindexError, reindex
from esmapper.patches import PartialPatch
from esmapper.signals import ChangeType, ModifiedDocument
from esmapper.testing.cluster import ClusterProxy
from esmapper.testing.faults import FaultProxy
from tests.integration.conftest import MakeMapper
from tests.integration.test_join_indexes import _RoutedHits


class Firm(em.Document):
    class Index:
        name = "join-firms"
        settings = {"number_of_shards": 3, "number_of_replicas": 0}  # noqa: RUF012
        join_field = "relation"

    name: str = em.field(em.Keyword(), default="")


class Clerk(em.Document, em.Versioned):
    class Index:
        name = "join-firms"
        settings = {"number_of_shards": 3, "number_of_replicas": 0}  # noqa: RUF012
        parent = Firm
        parent_field = "firm_id"

    firm_id: str | None = em.field(em.Keyword(), default=None)
    email: str = em.field(em.Keyword(), default="")
    age: int = em.field(em.Integer(), default=0)


class ClerkRepository(em.Repository[Clerk]):
    """Records the documents its ``invalidate_cache_for`` hook is given."""

    def __init__(self, mapper: em.Mapper, model: type[Clerk]) -> None:
        super().__init__(mapper, model)
        self.calls: list[tuple[ChangeType, list[tuple[Any, Any]]]] = []

    def invalidate_cache_for(
        self, documents: list[ModifiedDocument], change_type: ChangeType
    ) -> None:
        pairs = [
            (
                None if d.value is None else d.value.email,
                None if d.original is None else d.original.email,
            )
            for d in documents
        ]
        self.calls.append((change_type, pairs))


@pytest.fixture
def mapper(make_mapper: MakeMapper) -> em.Mapper:
    mapper = make_mapper(Firm, Clerk, configure=True, cache=InMemoryCache())
    mapper.register(Clerk, repository=ClerkRepository)
    return mapper


@pytest.fixture
def clerks(mapper: em.Mapper) -> ClerkRepository:
    repo = mapper.repository(Clerk)
    assert isinstance(repo, ClerkRepository)
    return repo


@pytest.fixture
def acme(mapper: em.Mapper) -> Firm:
    return mapper.repository(Firm).add(Firm(name="acme"))


def test_originals_of_a_child_are_read_with_its_routing_in_real_time(
    make_mapper: MakeMapper, acme: Firm
) -> None:
    clerks = make_mapper(Firm, Clerk).repository(Clerk)
    ann = clerks.add(Clerk(firm_id=acme.id, email="ann@acme", age=30))  # not refreshed
    originals: list[Any] = []

    def saving(sender: type, documents: list[ModifiedDocument], **_: object) -> None:
        originals.extend(None if d.original is None else d.original.email for d in documents)

    with signals.documents_saving.connected_to(saving, sender=Clerk):
        clerks.save(Clerk(id=ann.id, firm_id=acme.id, email="ann2@acme"), originals=True)
    assert originals == ["ann@acme"]


def test_a_hooked_child_removed_by_routed_id_shows_the_hook_its_original(
    clerks: ClerkRepository, acme: Firm, es_client: Elasticsearch
) -> None:
    ann = clerks.add(Clerk(firm_id=acme.id, email="ann@acme"))
    clerks.calls.clear()
    clerks.remove(em.Id(ann.id, routing=acme.id))
    assert clerks.calls == [(ChangeType.REMOVED, [("ann@acme", "ann@acme")])]
    assert clerks.get(em.Id(ann.id, routing=acme.id)) is None


def test_a_hooked_child_removed_by_a_plain_id_it_cannot_find_is_refused(
    clerks: ClerkRepository, acme: Firm
) -> None:
    """Without hooks a plain id of a child is refused (its shard is not known); loading it
    first (a near-real-time search by id) must not turn a child not found yet into a
    silent no-op."""
    ann = clerks.add(Clerk(firm_id=acme.id, email="ann@acme"))  # not refreshed
    with pytest.raises(em.DocumentValidationError, match="routing"):
        clerks.remove(ann.id)
    assert clerks.get(em.Id(ann.id, routing=acme.id)) is not None


def test_a_hooked_child_changed_after_its_last_refresh_is_removed_by_its_routed_id(
    clerks: ClerkRepository, acme: Firm, es_client: Elasticsearch, mapper: em.Mapper
) -> None:
    """A routed id is loaded in real time (a GET on its shard), not by a near-real-time
    search: a change not yet refreshed is what the hooks see and what is deleted (a plain
    id is refused before anything is read: test_join.py)."""
    ann = clerks.add(Clerk(firm_id=acme.id, email="ann@acme"), consistency="immediate")
    es_client.update(  # not refreshed: searches still show ann@acme
        index=mapper.spec(Clerk).write_target, id=ann.id, routing=acme.id, doc={"email": "x@acme"}
    )
    removed: list[str] = []

    def after(sender: Any, documents: list[ModifiedDocument], **kwargs: Any) -> None:
        removed.extend(d.value.email for d in documents)

    clerks.calls.clear()
    with signals.documents_removed.connected_to(after, sender=Clerk):
        clerks.remove(em.Id(ann.id, routing=acme.id))
    assert removed == ["x@acme"]  # the content that was deleted
    assert clerks.calls == [(ChangeType.REMOVED, [("x@acme", "x@acme")])]
    assert clerks.get(em.Id(ann.id, routing=acme.id), cache=False) is None
    with pytest.raises(em.DocumentValidationError, match="needs its parent's id"):
        clerks.remove(ann.id)


def test_a_hooked_child_patched_by_routed_id(clerks: ClerkRepository, acme: Firm) -> None:
    ann = clerks.add(Clerk(firm_id=acme.id, email="ann@acme"))
    clerks.calls.clear()
    clerks.patch(em.Id(ann.id, routing=acme.id), PartialPatch({"email": "ann2@acme"}))
    assert clerks.calls == [(ChangeType.SAVED, [("ann2@acme", "ann@acme")])]
    got = clerks.get(em.Id(ann.id, routing=acme.id))
    assert got is not None and got.email == "ann2@acme" and got.firm_id == acme.id


def test_update_with_retry_of_a_child_by_routed_id(clerks: ClerkRepository, acme: Firm) -> None:
    ann = clerks.add(Clerk(firm_id=acme.id, email="ann@acme", age=1))

    def older(clerk: Clerk) -> None:
        clerk.age += 1

    saved = clerks.update_with_retry(em.Id(ann.id, routing=acme.id), older)
    assert saved.age == 2
    got = clerks.get(em.Id(ann.id, routing=acme.id))
    assert got is not None and got.age == 2


def test_a_hooked_child_patched_by_a_plain_id_is_refused_as_unhooked(
    clerks: ClerkRepository, acme: Firm
) -> None:
    """A hooked patch by id runs as a scan, which would find a plain id once refreshed:
    refused all the same (the rule of the unhooked patch, before anything is read)."""
    ann = clerks.add(Clerk(firm_id=acme.id, email="ann@acme"), consistency="immediate")
    with pytest.raises(em.DocumentValidationError, match="needs its parent's id"):
        clerks.patch(ann.id, PartialPatch({"email": "ann2@acme"}))
    clerks.patch(em.Id(ann.id, routing=acme.id), PartialPatch({"email": "ann2@acme"}))
    got = clerks.get(em.Id(ann.id, routing=acme.id))
    assert got is not None and got.email == "ann2@acme"
    assert clerks.calls[-1] == (ChangeType.SAVED, [("ann2@acme", "ann@acme")])


def test_an_async_search_of_each_side_keeps_to_its_relation(
    make_mapper: MakeMapper, cluster: ClusterProxy, acme: Firm
) -> None:
    seeded = make_mapper(Firm, Clerk)
    seeded.repository(Clerk).add(Clerk(firm_id=acme.id, email="ann@acme"), consistency="immediate")
    mapper = make_mapper(Firm, Clerk, url=cluster.url)
    clerks = mapper.repository(Clerk).async_search.submit(wait="5s")
    assert [c.email for c in clerks] == ["ann@acme"]
    firms = mapper.repository(Firm).async_search.submit(wait="5s")
    assert [f.name for f in firms] == ["acme"]


def test_a_session_flush_calls_each_hook_once_per_change_type(
    mapper: em.Mapper, clerks: ClerkRepository, acme: Firm
) -> None:
    ann = clerks.add(Clerk(firm_id=acme.id, email="ann@acme"), consistency="immediate")
    clerks.calls.clear()
    with mapper.session() as session:
        got = session.get(Clerk, em.Id(ann.id, routing=acme.id))
        assert got is not None
        got.email = "ann2@acme"
        session.add(Clerk(firm_id=acme.id, email="bob@acme"))
        session.add(Clerk(firm_id=acme.id, email="cy@acme"))
    assert sorted(clerks.calls, key=lambda c: c[0].value) == sorted(
        [
            (ChangeType.ADDED, [("bob@acme", None), ("cy@acme", None)]),
            (ChangeType.SAVED, [("ann2@acme", "ann@acme")]),
        ],
        key=lambda c: c[0].value,
    )


class Temp(em.Document):
    class Index:
        name = "join-agency"
        join_field = "relation"

    name: str = em.field(em.Keyword(), default="")


class Shift(em.Document):
    class Index:
        name = "join-agency"
        parent = Temp
        parent_field = "temp_id"
        default_excludes = ("temp_id", "note")

    temp_id: str | None = em.field(em.Keyword(), default=None)
    note: str = em.field(em.Keyword(), default="")
    hours: int = em.field(em.Integer(), default=0)


def test_a_child_found_without_its_parent_field_is_saved_on_its_parents_shard(
    make_mapper: MakeMapper, es_client: Elasticsearch
) -> None:
    mapper = make_mapper(Temp, Shift, configure=True)
    temp = mapper.repository(Temp).add(Temp(name="t"))
    shifts = mapper.repository(Shift)
    shift = shifts.add(Shift(temp_id=temp.id, note="n", hours=1), consistency="immediate")
    found = shifts.find_one("hours:1")
    assert found is not None and found.hours == 1
    found.hours = 2
    shifts.save(found, consistency="immediate")
    stored = es_client.get(index=shifts.spec.read_target, id=shift.id, routing=temp.id)
    assert stored["_source"]["hours"] == 2 and stored["_source"]["temp_id"] == temp.id
    assert stored["_source"]["relation"] == {"name": "shift", "parent": temp.id}
    assert found.note == ""  # (the other default exclude is left out)
    partial = shifts.find_one("hours:2", includes=["hours"])
    assert partial is not None and partial.temp_id == temp.id


def test_configure_once_marks_a_parent_and_child_pair(
    make_mapper: MakeMapper, es_client: Elasticsearch
) -> None:
    """Both models of the one index are configured, then skipped by the next worker; a
    mapper with another pair has its own marker."""
    states = make_mapper(Firm, Clerk).configure_indexes()
    assert [s.action for s in states] == ["created", "unchanged"]  # (one index)
    again = make_mapper(Firm, Clerk).configure_indexes()
    assert [s.action for s in again] == ["skipped", "skipped"]
    grown = make_mapper(Temp, Shift).configure_indexes()
    assert "skipped" not in [s.action for s in grown]


def test_hooked_patch_all_and_remove_all_of_children_go_per_document_with_routing(
    clerks: ClerkRepository, acme: Firm, es_client: Elasticsearch
) -> None:
    ann, bob = clerks.add(
        [Clerk(firm_id=acme.id, email="ann@acme"), Clerk(firm_id=acme.id, email="bob@acme")],
        consistency="immediate",
    )
    clerks.calls.clear()
    clerks.patch_all("email:ann*", PartialPatch({"age": 5}), consistency="immediate")
    assert clerks.calls == [(ChangeType.SAVED, [("ann@acme", "ann@acme")])]
    got = clerks.get(em.Id(ann.id, routing=acme.id))
    assert got is not None and got.age == 5
    clerks.remove_all("email:bob*", consistency="immediate")
    assert clerks.calls[-1] == (ChangeType.REMOVED, [("bob@acme", "bob@acme")])
    assert clerks.get(em.Id(bob.id, routing=acme.id)) is None
    assert clerks.count() == 1


class Office(em.Document):
    class Index:
        name = "join-offices"
        join_field = "relation"
        dates = ("made", "changed")

    name: str = em.field(em.Keyword(), default="")
    made: dt.datetime | None = None
    changed: dt.datetime | None = None


class Desk(em.Document):
    class Index:
        name = "join-offices"
        parent = Office
        parent_field = "office_id"
        dates = ("made", "changed")

    office_id: str | None = em.field(em.Keyword(), default=None)
    label: str = em.field(em.Keyword(), default="")
    made: dt.datetime | None = None
    changed: dt.datetime | None = None


def test_a_pair_dated_in_renamed_fields_dates_a_childs_writes(make_mapper: MakeMapper) -> None:
    mapper = make_mapper(Office, Desk, configure=True)
    office = mapper.repository(Office).add(Office(name="hq"))
    desks = mapper.repository(Desk)
    desk = desks.add(Desk(office_id=office.id, label="a"))
    assert desk.made is not None and desk.changed is not None
    desks.patch(em.Id(desk.id, routing=office.id), PartialPatch({"label": "b"}))
    got = desks.get(em.Id(desk.id, routing=office.id))
    assert got is not None and got.label == "b" and got.changed is not None
    assert got.changed >= desk.changed and got.made == desk.made


def test_a_session_removes_a_hooked_child_it_loaded(
    mapper: em.Mapper, clerks: ClerkRepository, acme: Firm
) -> None:
    ann = clerks.add(Clerk(firm_id=acme.id, email="ann@acme"))
    clerks.calls.clear()
    with mapper.session() as session:
        got = session.get(Clerk, em.Id(ann.id, routing=acme.id))
        assert got is not None
        session.remove(got)
    assert clerks.calls == [(ChangeType.REMOVED, [("ann@acme", "ann@acme")])]
    assert clerks.get(em.Id(ann.id, routing=acme.id)) is None


class Port(em.Document):
    class Index:
        name = "join-ports"
        settings = {"number_of_shards": 3, "number_of_replicas": 0}  # noqa: RUF012
        join_field = "relation"

    name: str = em.field(em.Keyword(), default="")


class Berth(em.Document):
    class Index:
        name = "join-ports"
        settings = {"number_of_shards": 3, "number_of_replicas": 0}  # noqa: RUF012
        parent = Port
        parent_field = "port_id"

    port_id: str | None = em.field(em.Keyword(), default=None)
    code: str = em.field(em.Keyword(), default="")


class PortV2(em.Document):
    class Index:
        name = "join-ports"
        version = 2
        settings = {"number_of_shards": 3, "number_of_replicas": 0}  # noqa: RUF012
        join_field = "relation"
        relation = "port"  # the stored relation names stay (the class is renamed)

    name: str = em.field(em.Keyword(), default="")


class BerthV2(em.Document):
    """``code`` becomes a number: "x" cannot be copied."""

    class Index:
        name = "join-ports"
        version = 2
        settings = {"number_of_shards": 3, "number_of_replicas": 0}  # noqa: RUF012
        parent = PortV2
        parent_field = "port_id"
        relation = "berth"

    port_id: str | None = em.field(em.Keyword(), default=None)
    code: int = em.field(em.Long(), default=0)


def test_the_reindex_error_index_records_a_child_with_its_stored_source(
    make_mapper: MakeMapper, cluster: ClusterProxy, es_client: Elasticsearch
) -> None:
    """A child's plain id does not tell its shard: its entry is read by a search by id
    (hits carry ``_routing`` as a cluster answers them: the rule)."""
    cluster.add_rule(_RoutedHits(es_client))
    seeded = make_mapper(Port, Berth, url=cluster.url, configure=True)
    ports = seeded.repository(Port).add([Port(id=f"p{n}", name=f"p{n}") for n in range(4)])
    seeded.repository(Berth).add(
        [Berth(id=f"b{n}", port_id=ports[n % 4].id, code="x") for n in range(8)],
        consistency="immediate",
    )
    mapper = make_mapper(PortV2, BerthV2, url=cluster.url, configure=True)
    with pytest.raises(ReindexError) as failed:
        reindex(mapper, BerthV2)
    error = failed.value.result.error_index
    assert error is not None
    hits = es_client.search(index=error, size=100)["hits"]["hits"]
    entries = {h["_source"]["id"]: h["_source"] for h in hits}
    assert entries  # (the server stops at the first batch with failures)
    for id, entry in entries.items():
        n = int(id[1:])
        assert entry["found"] is True, entry
        assert entry["routing"] == f"p{n % 4}"
        assert entry["source"]["code"] == "x"


def test_originals_still_see_a_child_saved_under_another_parent(
    make_mapper: MakeMapper, acme: Firm
) -> None:
    """The routed read looks on the new parent's shard; a copy stored under the old parent
    is still found (a search by id), so the save moves it, as for a loaded child, and its
    receivers see that copy as the original."""
    mapper = make_mapper(Firm, Clerk)
    other = mapper.repository(Firm).add(Firm(name="other"))
    clerks = mapper.repository(Clerk)
    ann = clerks.add(Clerk(firm_id=acme.id, email="ann@acme"))  # not refreshed
    originals: list[Any] = []

    def saving(sender: type, documents: list[ModifiedDocument], **_: object) -> None:
        originals.extend(None if d.original is None else d.original.firm_id for d in documents)

    with signals.documents_saving.connected_to(saving, sender=Clerk):
        clerks.save(Clerk(id=ann.id, firm_id=other.id, email="ann@other"))
    assert originals == [acme.id]
    got = clerks.get(em.Id(ann.id, routing=other.id))
    assert got is not None and (got.firm_id, got.email) == (other.id, "ann@other")


def _grown_up(clerk: Any) -> str | None:
    return None if clerk.age >= 18 else f"{clerk.email}: too young"


class Trainee(em.Document):
    class Index:
        name = "join-schools"
        join_field = "relation"

    name: str = em.field(em.Keyword(), default="")


class Pupil(em.Document):
    class Index:
        name = "join-schools"
        parent = Trainee
        parent_field = "school_id"
        batch_notifications = True
        validator = _grown_up

    school_id: str | None = em.field(em.Keyword(), default=None)
    email: str = em.field(em.Keyword(), default="")
    age: int = em.field(em.Integer(), default=0)


def test_a_child_with_a_validator_batch_notifications_and_field_refs(
    make_mapper: MakeMapper,
) -> None:
    mapper = make_mapper(Trainee, Pupil, configure=True)
    school = mapper.repository(Trainee).add(Trainee(name="s"))
    pupils = mapper.repository(Pupil)
    with pytest.raises(em.DocumentValidationError, match="too young"):
        pupils.add(Pupil(school_id=school.id, email="kid", age=3))
    messages: list[em.EntityChanged] = []

    def receiver(sender: type, message: em.EntityChanged, **_: object) -> None:
        messages.append(message)

    with signals.entity_changed.connected_to(receiver, sender=Pupil):
        added = pupils.add(
            [Pupil(school_id=school.id, email=e, age=a) for e, a in (("a", 20), ("b", 30))],
            consistency="immediate",
        )
    assert [(m.id, sorted(m.ids), m.change_type) for m in messages] == [
        (None, sorted(p.id for p in added), ChangeType.ADDED)
    ]
    assert [p.email for p in pupils.find(sort=-Pupil.age)] == ["b", "a"]
    assert [p.age for p in pupils.find(sort=Pupil.age, includes=[Pupil.age])] == [20, 30]
    assert all(p.school_id == school.id for p in pupils.find(excludes=[Pupil.school_id]))


@pytest.mark.parametrize("hooked", [False, True], ids=["plain", "hooked"])
def test_a_write_by_a_plain_child_id_is_refused_on_every_path(
    make_mapper: MakeMapper, proxy: FaultProxy, hooked: bool
) -> None:
    """One rule, with or without repository hooks (which load what a write by id
    replaces, searching a plain id on every shard): a patch or removal by a child's plain
    id is refused before anything is read or sent."""
    make_mapper(Firm, Clerk, configure=True)
    mapper = make_mapper(Firm, Clerk, url=proxy.url, cache=InMemoryCache() if hooked else None)
    if hooked:
        mapper.register(Clerk, repository=ClerkRepository)
    acme = mapper.repository(Firm).add(Firm(name="acme"))
    clerks = mapper.repository(Clerk)
    ann = clerks.add(Clerk(firm_id=acme.id, email="ann@acme"), consistency="immediate")
    proxy.reset_counts()
    replace = em.JsonPatch([{"op": "replace", "path": "/age", "value": 6}])
    writes: list[Callable[[], None]] = [
        lambda: clerks.patch(ann.id, em.PartialPatch({"age": 3})),
        lambda: clerks.patch(ann.id, em.ScriptPatch("ctx._source.age = 4")),
        lambda: clerks.patch([ann.id, "other"], em.PartialPatch({"age": 5})),
        lambda: clerks.patch(ann.id, replace),
        lambda: clerks.remove(ann.id),
        lambda: clerks.remove([ann.id, "other"]),
    ]
    for write in writes:
        with pytest.raises(em.DocumentValidationError, match=r"em\.Id\(") as err:
            write()
        assert err.value.field == "firm_id"
    assert proxy.requests == []  # refused before anything is read or sent
    routed = em.Id(ann.id, routing=acme.id)
    clerks.patch(routed, em.PartialPatch({"age": 7}))
    got = clerks.get(routed)
    assert got is not None and got.age == 7
    clerks.remove(routed)
    assert clerks.get(routed) is None


# -- a Versioned child moved: its condition is its old copy's, on the old shard only ------


def _shards_of(es_client: Elasticsearch, index: str, id: str, parents: list[str]) -> list[bool]:
    """For each parent id, whether the routing of that parent reaches the shard holding
    ``id`` now (a real-time GET routed by it finds it)."""
    return [
        bool(es_client.options(ignore_status=404).get(index=index, id=id, routing=p).get("found"))
        for p in parents
    ]


def test_a_versioned_child_moves_to_another_shard_without_its_old_condition(
    make_mapper: MakeMapper, proxy: FaultProxy, es_client: Elasticsearch
) -> None:
    """A Versioned save is conditioned on the version it loaded, but that version is
    the old copy's, on the old parent's shard: a cluster answers a write conditioned on
    it on the new parent's shard with a version conflict (no document there). The move
    reads where each routing lands first: to another shard, the new copy goes without
    the condition (the old copy's delete carries it); on the same shard, the save
    replaces the copy in place, conditioned, and nothing is deleted."""
    from tests.integration.test_join import _Bulks

    make_mapper(Firm, Clerk, configure=True)
    mapper = make_mapper(Firm, Clerk, url=proxy.url)
    firms = mapper.repository(Firm).add([Firm(id=f"p{n}", name=f"p{n}") for n in range(12)])
    clerks = mapper.repository(Clerk)
    ann = clerks.add(Clerk(id="ann", firm_id="p0", email="ann@x"), consistency="immediate")
    index = mapper.spec(Clerk).write_target
    reached = _shards_of(es_client, index, ann.id, [f.id for f in firms])
    same = next(f.id for f, hit in zip(firms[1:], reached[1:], strict=True) if hit)
    apart = next(f.id for f, hit in zip(firms[1:], reached[1:], strict=True) if not hit)
    bulks = _Bulks()
    proxy.add_rule(bulks)

    loaded = clerks.require(em.Id(ann.id, routing="p0"))
    loaded.firm_id = apart
    clerks.save(loaded)
    (written, deleted) = bulks.actions
    assert written["index"]["routing"] == apart and "if_seq_no" not in written["index"]
    assert not written["index"]["_index"].endswith(".fence")
    assert (deleted["delete"]["routing"], deleted["delete"]["if_seq_no"]) == ("p0", ann_seq(ann))

    bulks.actions.clear()
    here = clerks.require(em.Id(ann.id, routing=apart))
    reached = _shards_of(es_client, index, ann.id, [f.id for f in firms])
    same = next(f.id for f, hit in zip(firms, reached, strict=True) if hit and f.id != apart)
    here.firm_id = same
    clerks.save(here)
    (written,) = bulks.actions  # in place: no delete
    assert written["index"]["routing"] == same and isinstance(written["index"]["if_seq_no"], int)
    got = clerks.get(em.Id(ann.id, routing=same))
    assert got is not None and got.firm_id == same


def ann_seq(ann: Clerk) -> int:
    """The ``_seq_no`` of ``ann`` as added (its ``version``: ``"<term>:<seq_no>"``)."""
    return int(str(ann.version).split(":")[1])


def test_a_stale_versioned_child_is_not_moved(make_mapper: MakeMapper, proxy: FaultProxy) -> None:
    """The old copy changed since it was loaded: a version conflict before anything is
    written (the new copy would otherwise be written unconditionally on another shard)."""
    make_mapper(Firm, Clerk, configure=True)
    mapper = make_mapper(Firm, Clerk, url=proxy.url)
    a, b = mapper.repository(Firm).add([Firm(name="a"), Firm(name="b")])
    clerks = mapper.repository(Clerk)
    ann = clerks.add(Clerk(firm_id=a.id, email="ann@x"), consistency="immediate")
    stale = clerks.require(em.Id(ann.id, routing=a.id))
    fresh = clerks.require(em.Id(ann.id, routing=a.id))
    fresh.age = 41
    clerks.save(fresh)
    stale.firm_id = b.id
    proxy.reset_counts()
    with pytest.raises(em.VersionConflictError, match="changed since it was read"):
        clerks.save(stale)
    assert not [r for r in proxy.requests if r.path.endswith("/_bulk")]
    got = clerks.get(em.Id(ann.id, routing=a.id))
    assert got is not None and got.age == 41
