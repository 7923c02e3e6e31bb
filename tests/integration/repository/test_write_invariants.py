"""The promises every write path keeps (the ``esmapper._writes`` docstring), one test each:
partial documents, undeclared fields, one merge rule, cache invalidation across mappers,
unknown outcomes, conflicts and missing ids reported, no-op patches, subscriber failures,
failures naming the caller's document, conditional removes."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Any

import pytest
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper import signals
from esmapper.patches import Patch
from esmapper.testing.faults import FaultProxy

from .models import Address, Employee


class Note(em.Document):
    """A plain model: not Versioned, no dates."""

    class Index:
        name = "notes"

    text: str = ""
    n: int = 0


@pytest.fixture
def raw(es_url: str) -> Iterator[Elasticsearch]:
    with Elasticsearch(es_url) as client:
        yield client


def stored(raw: Elasticsearch, repo: em.Repository[Any], id: str) -> dict[str, Any]:
    return dict(raw.get(index=repo.spec.alias, id=id)["_source"])


# -- 1. never replace what was not loaded -----------------------------------------------


def test_a_partially_loaded_document_saves_only_what_changed(
    employees: em.Repository[Employee], raw: Elasticsearch
) -> None:
    created = employees.add(
        Employee(
            id="p", name="Ann", email="ann@x", age=40, address=Address(city="Rome", country="IT")
        ),
        consistency="wait",
    ).created_utc
    partial = employees.find_one("id:p", includes=["name", "address.city"])
    assert partial is not None and partial.email == ""  # not loaded: the default
    partial.name = "Anna"
    partial.address.city = "Milan"
    employees.save(partial)
    source = stored(raw, employees, "p")
    assert source["name"] == "Anna" and source["email"] == "ann@x" and source["age"] == 40
    assert source["address"] == {"city": "Milan", "country": "IT"}
    assert employees.get("p").created_utc == created  # kept, not reset to "now"


def test_a_partial_document_saved_at_a_stale_version_is_refused(
    employees: em.Repository[Employee], raw: Elasticsearch
) -> None:
    employees.add(Employee(id="ps", name="Ann", age=1), consistency="wait")
    partial = employees.find_one("id:ps", includes=["name"])
    raw.update(index=employees.spec.alias, id="ps", doc={"age": 2})
    partial.name = "late"
    with pytest.raises(em.VersionConflictError):
        employees.save(partial)
    assert stored(raw, employees, "ps")["name"] == "Ann"


def test_a_session_commits_a_partial_document_as_a_partial_update(
    mapper: em.Mapper, employees: em.Repository[Employee], raw: Elasticsearch
) -> None:
    employees.add(Employee(id="sp", name="Bo", email="bo@x", tags=["a"]), consistency="wait")
    with mapper.session() as s:
        doc = s.find(Employee, "id:sp", excludes=["email"]).hits[0].document
        doc.tags.append("b")
    source = stored(raw, employees, "sp")
    assert source["email"] == "bo@x" and source["tags"] == ["a", "b"]


def test_fields_the_model_does_not_declare_survive_save_and_action_patch(
    employees: em.Repository[Employee], raw: Elasticsearch
) -> None:
    """A newer deploy (rolling upgrade) wrote ``nickname``: this model must keep it."""
    employees.add(Employee(id="u", name="Cy"), consistency="wait")
    raw.update(index=employees.spec.alias, id="u", doc={"nickname": "cy"}, refresh=True)
    doc = employees.get("u")
    doc.age = 30
    employees.save(doc)
    assert stored(raw, employees, "u")["nickname"] == "cy"
    employees.patch("u", em.ActionPatch(lambda e: setattr(e, "age", 31)))
    employees.patch_all(
        "id:u", em.ActionPatch(lambda e: setattr(e, "age", 32)), consistency="immediate"
    )
    source = stored(raw, employees, "u")
    assert source["nickname"] == "cy" and source["age"] == 32


# -- 2. one merge rule --------------------------------------------------------------------


def test_patch_all_deep_merges_like_patch_by_id(
    employees: em.Repository[Employee], raw: Elasticsearch
) -> None:
    employees.add(
        [
            Employee(id="m1", company_id="c", address=Address(city="Rome", country="IT")),
            Employee(id="m2", company_id="c", address=Address(city="Oslo", country="NO")),
        ],
        consistency="wait",
    )
    employees.patch("m1", em.PartialPatch({"address": {"city": "Milan"}}))
    employees.patch_all(
        "id:m2", em.PartialPatch({"address": {"city": "Bergen"}}), consistency="immediate"
    )
    assert stored(raw, employees, "m1")["address"] == {"city": "Milan", "country": "IT"}
    assert stored(raw, employees, "m2")["address"] == {"city": "Bergen", "country": "NO"}


# -- 3. the cache is never staler than the store -------------------------------------------


@pytest.fixture
def two_mappers(es_url: str, index_prefix: str) -> Iterator[tuple[em.Mapper, em.Mapper]]:
    shared = em.InMemoryCache()
    with (
        em.Mapper(es_url, models=[Employee, Note], index_prefix=index_prefix, cache=shared) as a,
        em.Mapper(es_url, models=[Employee, Note], index_prefix=index_prefix, cache=shared) as b,
    ):
        a.configure_indexes()
        yield a, b


@pytest.mark.parametrize("write", ["save", "patch", "patch_all", "remove", "remove_all"])
def test_a_write_through_one_mapper_drops_the_other_mappers_cached_entry(
    two_mappers: tuple[em.Mapper, em.Mapper], write: str
) -> None:
    a, b = two_mappers
    ra, rb = a.repository(Note), b.repository(Note)  # Note has no Index.cache: cached per call
    rb.add(Note(id="c", text="old"), consistency="wait")
    assert ra.get("c", cache=True).text == "old"  # cached through mapper A
    if write == "save":
        doc = rb.get("c")
        doc.text = "new"
        rb.save(doc)
    elif write == "patch":
        rb.patch("c", em.PartialPatch({"text": "new"}))
    elif write == "patch_all":
        rb.patch_all("id:c", em.ScriptPatch("ctx._source.text = 'new'"), consistency="immediate")
    elif write == "remove":
        rb.remove("c")
    else:
        rb.remove_all("id:c", consistency="immediate")
    after = ra.get("c", cache=True)
    if write.startswith("remove"):
        assert after is None
    else:
        assert after is not None and after.text == "new"


def test_a_write_of_unknown_outcome_drops_the_cached_entry(
    es_url: str, index_prefix: str, raw: Elasticsearch
) -> None:
    with (
        FaultProxy(es_url) as proxy,
        em.Mapper(
            proxy.url, models=[Note], index_prefix=index_prefix, cache=em.InMemoryCache()
        ) as m,
    ):
        m.configure_indexes()
        repo = m.repository(Note)
        repo.add(Note(id="k", n=1), consistency="wait")
        assert repo.get("k", cache=True).n == 1
        proxy.drop_connection(path=r"/_bulk$", after_forwarding=True)
        proxy.drop_connection(path=r"/_mget$")  # the read-back fails too: truly unknown
        with pytest.raises(em.OutcomeUnknownError):
            repo.patch("k", em.ScriptPatch("ctx._source.n += 1"))
        assert repo.get("k", cache=True).n == 2 == stored(raw, repo, "k")["n"]


def test_soft_deleted_ids_are_hidden_from_the_other_mappers_searches(
    two_mappers: tuple[em.Mapper, em.Mapper],
) -> None:
    a, b = two_mappers
    ea, eb = a.repository(Employee), b.repository(Employee)
    doc = ea.add(Employee(id="sd", name="Gone"), consistency="immediate")
    doc.is_deleted = True
    ea.save(doc)  # eventual: not refreshed yet
    assert eb.count("id:sd") == 0


# -- 4. an unknown outcome is unknown ------------------------------------------------------


@pytest.fixture
def faulty(es_url: str, index_prefix: str) -> Iterator[tuple[FaultProxy, em.Mapper]]:
    with (
        FaultProxy(es_url) as proxy,
        em.Mapper(
            proxy.url, models=[Employee, Note], index_prefix=index_prefix, sleep=lambda _s: None
        ) as m,
    ):
        m.configure_indexes()
        yield proxy, m


def test_a_save_whose_answer_was_lost_is_confirmed_by_reading_it_back(
    faulty: tuple[FaultProxy, em.Mapper], raw: Elasticsearch
) -> None:
    proxy, m = faulty
    repo = m.repository(Employee)
    doc = repo.add(Employee(id="rb", name="v1"))
    doc.name = "v2"
    proxy.drop_connection(path=r"/_bulk$", after_forwarding=True)
    repo.save(doc)  # applied, answer lost: read back, confirmed, not resent
    assert proxy.count(r"/_bulk$") == 2  # the add and the save, no resend
    stored_doc = raw.get(index=repo.spec.alias, id="rb")
    assert stored_doc["_source"]["name"] == "v2"
    assert doc.version == f"{stored_doc['_primary_term']}:{stored_doc['_seq_no']}"
    doc.name = "v3"
    repo.save(doc)  # the version written back is the stored one: no false conflict


def test_a_write_lost_before_the_server_saw_it_is_sent_again(
    faulty: tuple[FaultProxy, em.Mapper], raw: Elasticsearch
) -> None:
    proxy, m = faulty
    repo = m.repository(Employee)
    proxy.drop_connection(path=r"/_bulk$")
    repo.add(Employee(id="nb", name="x"))
    assert stored(raw, repo, "nb")["name"] == "x"


@pytest.mark.parametrize("fault", ["drop", "truncate"])
def test_a_script_patch_whose_answer_was_lost_is_reported_not_resent(
    faulty: tuple[FaultProxy, em.Mapper], raw: Elasticsearch, fault: str
) -> None:
    proxy, m = faulty
    repo = m.repository(Note)
    repo.add(Note(id="s", n=0), consistency="wait")
    if fault == "drop":
        proxy.drop_connection(path=r"/_bulk$", after_forwarding=True)
    else:
        proxy.truncate_response(path=r"/_bulk$")
    with pytest.raises(em.OutcomeUnknownError) as caught:
        repo.patch("s", em.ScriptPatch("ctx._source.n += 1"))
    assert caught.value.ids == ("s",)
    assert stored(raw, repo, "s")["n"] == 1  # applied exactly once


def test_a_patch_all_script_whose_answer_was_lost_runs_once(
    faulty: tuple[FaultProxy, em.Mapper], raw: Elasticsearch
) -> None:
    proxy, m = faulty
    repo = m.repository(Note)
    repo.add([Note(id=f"q{i}", n=0) for i in range(3)], consistency="wait")
    proxy.drop_connection(path=r"_update_by_query", after_forwarding=True)
    with pytest.raises(em.OutcomeUnknownError):
        repo.patch_all(None, em.ScriptPatch("ctx._source.n += 1"), consistency="immediate")
    assert proxy.count(r"_update_by_query") == 1
    raw.indices.refresh(index=repo.spec.alias)
    assert [stored(raw, repo, f"q{i}")["n"] for i in range(3)] == [1, 1, 1]


def test_a_conditional_script_patch_not_applied_is_resent(
    faulty: tuple[FaultProxy, em.Mapper], raw: Elasticsearch
) -> None:
    """In the batch path every write carries the scanned version: a lost request that the
    read-back shows unapplied (same version) is safe to send again."""
    proxy, m = faulty
    repo = m.repository(Employee)
    repo.add([Employee(id=f"c{i}", age=0) for i in range(3)], consistency="wait")
    proxy.drop_connection(path=r"/_bulk$")
    changed = repo.patch_all(None, em.ScriptPatch("ctx._source.age += 1"), cache=True)
    assert changed == 3 and proxy.pending_faults == 0
    assert [stored(raw, repo, f"c{i}")["age"] for i in range(3)] == [1, 1, 1]


def conflicts_reported(
    mapper: em.Mapper, monkeypatch: pytest.MonkeyPatch, method: str, conflicts: int
) -> None:
    """Make every by-query ``method`` answer report ``conflicts`` version conflicts (what
    other writers cause), while the request itself still runs on the server."""
    real = mapper.client.options

    class Conflicting:
        def __init__(self, client: Any) -> None:
            self.client = client

        def __getattr__(self, name: str) -> Any:
            call = getattr(self.client, name)
            if name != method:
                return call

            def reporting(**kwargs: Any) -> Any:
                response = call(**kwargs)
                response.body["version_conflicts"] = conflicts
                return response

            return reporting

    monkeypatch.setattr(mapper.client, "options", lambda **kw: Conflicting(real(**kw)))


# -- 5. nothing is skipped silently ---------------------------------------------------------


def _change_during_the_scan(
    repo: em.Repository[Any], raw: Elasticsearch, change: dict[str, Any]
) -> AbstractContextManager[Any]:
    """Within it, after the first search of a scan, another writer changes a document."""
    done: list[bool] = []

    def meddle(sender: Any, **kwargs: Any) -> None:
        if not done:
            done.append(True)
            raw.update(index=repo.spec.alias, id=change["id"], doc=change["doc"], refresh=True)

    return signals.after_query.connected_to(meddle, sender=repo.model)


def test_patch_all_retries_a_document_changed_during_the_scan(
    employees: em.Repository[Employee], raw: Elasticsearch
) -> None:
    employees.add(
        [Employee(id=f"r{i}", age=10, company_id="c") for i in range(5)], consistency="wait"
    )
    with _change_during_the_scan(employees, raw, {"id": "r0", "doc": {"name": "theirs"}}):
        changed = employees.patch_all(
            "company_id:c", em.ScriptPatch("ctx._source.age += 1"), cache=True
        )
    assert changed == 5
    source = stored(raw, employees, "r0")
    assert source["age"] == 11 and source["name"] == "theirs"


def test_patch_all_leaves_a_document_that_no_longer_matches(
    employees: em.Repository[Employee], raw: Elasticsearch
) -> None:
    employees.add(
        [Employee(id=f"x{i}", age=10, company_id="c") for i in range(3)], consistency="wait"
    )
    with _change_during_the_scan(employees, raw, {"id": "x0", "doc": {"company_id": "moved"}}):
        changed = employees.patch_all(
            "company_id:c", em.PartialPatch({"age": 99}), consistency="immediate"
        )
    assert changed == 2 and stored(raw, employees, "x0")["age"] == 10


def test_patch_all_leaves_a_document_deleted_after_the_scan(
    faulty: tuple[FaultProxy, em.Mapper], raw: Elasticsearch
) -> None:
    """Elasticsearch answers an update at the version of a document deleted since with
    404 (the local server: 409): it no longer matches, it is not a failure."""
    proxy, m = faulty
    repo = m.repository(Employee)
    repo.add([Employee(id=f"y{i}", company_id="c") for i in range(3)], consistency="wait")

    deleted: list[bool] = []

    def delete(sender: Any, **kwargs: Any) -> None:
        if not deleted:
            deleted.append(True)
            raw.delete(index=repo.spec.alias, id="y0", refresh=True)

    proxy.fail_bulk_items(lambda _pos, meta: meta.get("update", {}).get("_id") == "y0", status=404)
    with signals.after_query.connected_to(delete, sender=Employee):
        changed = repo.patch_all("company_id:c", em.PartialPatch({"age": 7}))
    assert changed == 2 and proxy.pending_faults == 0
    assert not raw.exists(index=repo.spec.alias, id="y0")


def test_remove_all_does_not_delete_a_document_changed_so_it_no_longer_matches(
    employees: em.Repository[Employee], raw: Elasticsearch
) -> None:
    employees.add([Employee(id=f"d{i}", company_id="c") for i in range(3)], consistency="wait")
    with _change_during_the_scan(employees, raw, {"id": "d0", "doc": {"company_id": "kept"}}):
        removed = employees.remove_all("company_id:c", consistency="immediate", cache=True)
    assert removed == 2
    assert raw.exists(index=employees.spec.alias, id="d0")


def test_a_script_patch_all_reports_the_conflicts_update_by_query_skipped(
    mapper: em.Mapper, raw: Elasticsearch, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = mapper.repository(Note)
    mapper.configure_indexes([Note])
    repo.add(Note(id="v", n=0), consistency="wait")
    conflicts_reported(mapper, monkeypatch, "update_by_query", 1)  # a concurrent writer
    with pytest.raises(em.VersionConflictError, match="NOT patched"):
        repo.patch_all(None, em.ScriptPatch("ctx._source.n += 1"))


def _saved_a_moment_ago(mapper: em.Mapper) -> em.Repository[Note]:
    """Three notes, the first saved again after the last refresh."""
    mapper.configure_indexes([Note])
    repo = mapper.repository(Note)
    repo.add([Note(id=f"b{i}", n=1) for i in range(3)], consistency="wait")
    doc = repo.get("b0")
    doc.n = 2
    repo.save(doc)  # eventual: not refreshed
    return repo


def test_a_script_patch_all_reaches_a_document_saved_a_moment_before(
    mapper: em.Mapper, raw: Elasticsearch
) -> None:
    """The update-by-query wrote each match at the version the last refresh made
    searchable: the document saved since was reported "changed concurrently" and not
    patched, with nobody else writing."""
    repo = _saved_a_moment_ago(mapper)
    assert repo.patch_all(None, em.ScriptPatch("ctx._source.n += 10")) == 3
    assert [stored(raw, repo, f"b{i}")["n"] for i in range(3)] == [12, 11, 11]


def test_remove_all_reaches_a_document_saved_a_moment_before(
    mapper: em.Mapper, raw: Elasticsearch
) -> None:
    """The delete-by-query re-runs met the same unrefreshed versions 10 times (and the
    documents already deleted counted as conflicts), then gave up."""
    repo = _saved_a_moment_ago(mapper)
    assert repo.remove_all() == 3
    raw.indices.refresh(index=repo.spec.alias)
    assert raw.count(index=repo.spec.alias)["count"] == 0


def test_patch_all_honours_immediate_consistency_on_its_read_side(
    employees: em.Repository[Employee],
) -> None:
    employees.add([Employee(id="i1", company_id="c"), Employee(id="i2", company_id="c")])
    assert (
        employees.patch_all("company_id:c", em.PartialPatch({"age": 5}), consistency="immediate")
        == 2
    )


def test_patch_by_ids_with_client_side_patches_reports_missing_ids(
    employees: em.Repository[Employee], raw: Elasticsearch
) -> None:
    employees.add(Employee(id="e1", age=1), consistency="wait")
    with pytest.raises(em.BulkWriteError) as caught:
        employees.patch(
            ["e1", "nope"], em.JsonPatch([{"op": "replace", "path": "age", "value": 2}])
        )
    assert [(f.id, f.status) for f in caught.value.failures] == [("nope", 404)]
    assert stored(raw, employees, "e1")["age"] == 2


def test_client_side_patches_work_on_models_without_versioned(
    mapper: em.Mapper, raw: Elasticsearch
) -> None:
    mapper.configure_indexes([Note])
    notes = mapper.repository(Note)
    notes.add([Note(id="n1", n=1), Note(id="n2", n=2)], consistency="wait")
    notes.patch(["n1", "n2"], em.ActionPatch(lambda d: setattr(d, "n", d.n * 10)))
    assert (
        notes.patch_all(
            "n:>0",
            em.JsonPatch([{"op": "replace", "path": "text", "value": "t"}]),
            consistency="immediate",
        )
        == 2
    )
    assert [(stored(raw, notes, i)["text"], stored(raw, notes, i)["n"]) for i in ("n1", "n2")] == [
        ("t", 10),
        ("t", 20),
    ]


@pytest.mark.parametrize(
    "patch",
    [
        em.ScriptPatch("ctx.op = 'none'"),
        em.ActionPatch(lambda e: False),
        em.JsonPatch([]),
    ],
    ids=["script-none", "action-false", "empty-json"],
)
def test_no_op_patches_write_and_publish_nothing(
    employees: em.Repository[Employee], raw: Elasticsearch, patch: Patch
) -> None:
    doc = employees.add(Employee(id="no", age=1), consistency="wait")
    heard: list[Any] = []

    def hear(sender: Any, **kwargs: Any) -> None:
        heard.append(kwargs)

    with (
        signals.documents_changed.connected_to(hear, sender=Employee),
        signals.entity_changed.connected_to(hear, sender=Employee),
    ):
        employees.patch("no", patch)
        employees.patch_all("id:no", patch, consistency="immediate", cache=True)
    assert heard == []
    assert employees.get("no").version == doc.version


# -- 7. a change notification never fails a confirmed write ---------------------------------


def test_a_raising_subscriber_is_logged_and_the_others_still_run(
    employees: em.Repository[Employee], caplog: pytest.LogCaptureFixture
) -> None:
    heard: list[str | None] = []

    def broken(sender: Any, message: signals.EntityChanged, **kwargs: Any) -> None:
        raise RuntimeError("subscriber bug")

    def fine(sender: Any, message: signals.EntityChanged, **kwargs: Any) -> None:
        heard.append(message.id)

    def broken_saved(sender: Any, **kwargs: Any) -> None:
        raise RuntimeError("receiver bug")

    with (
        signals.entity_changed.connected_to(broken, sender=Employee),
        signals.entity_changed.connected_to(fine, sender=Employee),
        signals.documents_added.connected_to(broken_saved, sender=Employee),
        caplog.at_level(logging.ERROR),
    ):
        doc = employees.add(Employee(id="sub", name="x"))  # does not raise
    assert doc.version is not None and heard == ["sub"]
    assert "subscriber bug" in caplog.text and "'sub'" in caplog.text and "Employee" in caplog.text


# -- 9. failures name the caller's document --------------------------------------------------


def test_a_bulk_failure_names_the_callers_document(employees: em.Repository[Employee]) -> None:
    employees.add(Employee(id="dup"), consistency="wait")
    fresh, dup = Employee(id="ok1"), Employee(id="dup")
    with pytest.raises(em.DuplicateDocumentError) as caught:
        employees.add([fresh, dup])
    assert caught.value.failures[0].document is dup
    assert caught.value.succeeded == [fresh]


# -- 11. remove(doc) of a Versioned document is conditional ----------------------------------


def test_removing_a_stale_versioned_document_is_a_conflict(
    employees: em.Repository[Employee], raw: Elasticsearch
) -> None:
    doc = employees.add(Employee(id="rm", name="a"), consistency="wait")
    raw.update(index=employees.spec.alias, id="rm", doc={"name": "b"})
    with pytest.raises(em.VersionConflictError):
        employees.remove(doc)
    assert raw.exists(index=employees.spec.alias, id="rm")
    employees.remove("rm")  # by id: unconditional
    assert not raw.exists(index=employees.spec.alias, id="rm")


def test_remove_all_reports_matches_left_after_ten_conflicting_rounds(
    mapper: em.Mapper, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = mapper.repository(Note)
    mapper.configure_indexes([Note])
    repo.add(Note(id="v", n=0), consistency="wait")
    conflicts_reported(mapper, monkeypatch, "delete_by_query", 2)  # heavy contention
    with pytest.raises(em.VersionConflictError, match="2 matching document") as caught:
        repo.remove_all()
    assert "1 were" in str(caught.value)
