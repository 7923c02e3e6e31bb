"""Adversarial review of tenant custom fields (review2)."""

from __future__ import annotations

from typing import Any

import pytest
from elasticsearch.dsl import Q

import esmapper as em
from tests.integration.custom_fields.models import Employee, Ticket


def names(results: Any) -> list[str]:
    return sorted(d.name for d in results)


def test_rename_then_unrelated_save_keeps_value_indexed(
    fields: em.CustomFieldRepository, repo: em.Repository[Employee]
) -> None:
    fields.add_field("acme", "Level", "int")
    doc = repo.add(Employee(name="a", company_id="acme", custom_fields={"Level": 5}),
                   consistency="immediate")
    fields.rename_field("acme", "Level", "Rank")
    # the rename keeps the slot: the stored value answers to the new name
    assert [d.name for d in repo.find("rank:5", tenant="acme", consistency="immediate")] == ["a"]
    # an unrelated save of the document must not drop its custom-field value
    loaded = repo.get(doc.id)
    assert loaded is not None
    loaded.age = 40
    repo.save(loaded, consistency="immediate")
    assert [d.name for d in repo.find("rank:5", tenant="acme", consistency="immediate")] == ["a"]
    again = repo.get(doc.id)
    assert again is not None
    assert again.idx == {"int-1": 5}


def test_hard_delete_then_new_field_in_same_slot_does_not_inherit_old_values(
    fields: em.CustomFieldRepository, repo: em.Repository[Employee]
) -> None:
    fields.add_field("acme", "Level", "int")
    repo.add(Employee(name="old", company_id="acme", custom_fields={"Level": 5}),
             consistency="immediate")
    fields.remove_field("acme", "Level", hard=True)
    score = fields.add_field("acme", "Score", "int")
    assert score.index_slot == 1  # the hard delete freed the slot
    # "old" has no Score: it must not match score:5 (stale slot value of another field)
    assert names(repo.find("score:5", tenant="acme", consistency="immediate")) == []


@pytest.mark.parametrize(
    ("kind", "value"),
    [("float", 1e39), ("float", "1e39"), ("long", 2**63 - 1), ("date", "99999-01-01"),
     ("int", "1_000")],
)
def test_a_wrong_valued_custom_field_never_rejects_the_document(
    fields: em.CustomFieldRepository, repo: em.Repository[Employee], kind: str, value: Any
) -> None:
    fields.add_field("acme", "X", kind)
    doc = repo.add(Employee(name="a", company_id="acme", custom_fields={"X": value}),
                   consistency="immediate")
    stored = repo.get(doc.id)
    assert stored is not None
    assert stored.custom_fields == {"X": value}


@pytest.mark.parametrize("value", [1e39, "1e39", -3.5e38, 2**200])
def test_a_float_slot_does_not_index_values_beyond_float32(value: Any) -> None:
    """Elasticsearch parses a ``float`` field as a 32-bit float and rejects the whole
    document ("[float] supports only finite values, but got [Infinity]") for anything
    beyond +-3.4028235e38: the slot check must not pass such values (CF-11)."""
    from esmapper.custom_fields.types import NOT_INDEXED, index_value

    assert index_value({"type": "float"}, value) is NOT_INDEXED


def _levels(repo: em.Repository[Employee], query: str, tenant: str = "acme") -> list[str]:
    return names(repo.find(query, tenant=tenant, consistency="immediate"))


@pytest.fixture
def level_doc(fields: em.CustomFieldRepository, repo: em.Repository[Employee]) -> Employee:
    fields.add_field("acme", "Level", "int")
    fields.add_field("acme", "Dept", "keyword")
    return repo.add(
        Employee(name="a", company_id="acme", custom_fields={"Level": 5, "Dept": "x"}),
        consistency="immediate",
    )


def test_session_flush_of_custom_fields_mutated_in_place(
    mapper: em.Mapper, repo: em.Repository[Employee], level_doc: Employee
) -> None:
    with mapper.session(consistency="immediate") as s:
        doc = s.get(Employee, level_doc.id)
        assert doc is not None
        doc.custom_fields["Level"] = 9
    assert _levels(repo, "level:9") == ["a"]
    assert _levels(repo, "level:5") == []


def test_partial_patch_by_query_and_json_patch_recompute_idx(
    repo: em.Repository[Employee], level_doc: Employee
) -> None:
    repo.patch_all("level:5", em.PartialPatch({"custom_fields": {"Level": 6}}), tenant="acme",
                   consistency="immediate")
    assert _levels(repo, "level:6") == ["a"]
    repo.patch(level_doc.id, em.JsonPatch([{"op": "replace", "path": "/custom_fields/Level",
                                             "value": 7}]), consistency="immediate")
    assert _levels(repo, "level:7") == ["a"]
    repo.patch(level_doc.id, em.JsonPatch([{"op": "remove", "path": "/custom_fields/Dept"}]),
               consistency="immediate")
    assert _levels(repo, "_exists_:dept") == []
    repo.patch(level_doc.id, em.ScriptPatch("ctx._source.custom_fields.Level = 8"),
               consistency="immediate")
    assert _levels(repo, "level:8") == ["a"]
    repo.patch_all("level:8", em.ScriptPatch("ctx._source.custom_fields.Level = 1"),
                   tenant="acme", consistency="immediate")
    assert _levels(repo, "level:1") == ["a"]


def test_moving_a_document_to_another_tenant_moves_its_custom_values(
    fields: em.CustomFieldRepository, repo: em.Repository[Employee], level_doc: Employee
) -> None:
    fields.add_field("globex", "Other", "int")  # globex's int-1
    repo.patch(level_doc.id, em.PartialPatch({"company_id": "globex"}), consistency="immediate")
    # globex has no Level: acme's value must not show up under globex's int-1 field
    assert _levels(repo, "other:5", tenant="globex") == []
    assert _levels(repo, "level:5") == []


@pytest.fixture
def two_tenants(fields: em.CustomFieldRepository, repo: em.Repository[Employee]) -> None:
    fields.add_field("acme", "Level", "int")
    fields.add_field("globex", "Salary", "int")  # the same slot: int-1
    repo.add(
        [
            Employee(name="a1", company_id="acme", custom_fields={"Level": 3}),
            Employee(name="g1", company_id="globex", custom_fields={"Salary": 250000}),
        ],
        consistency="immediate",
    )


def _buckets(found: Any, name: str) -> list[Any]:
    def walk(node: Any) -> list[Any]:
        if isinstance(node, dict):
            if "buckets" in node:
                return [b["key"] for b in node["buckets"]]
            out: list[Any] = []
            for v in node.values():
                out.extend(walk(v))
            return out
        return []

    return walk(found.raw_aggregations if hasattr(found, "raw_aggregations") else found)


def test_a_global_aggregation_does_not_leak_other_tenants_slot_values(
    repo: em.Repository[Employee], two_tenants: None
) -> None:
    """A ``global`` aggregation ignores the query, so the tenant= clause (and the
    soft-delete clause) do not apply to it: its sub-aggregation on ``level`` (acme's
    int-1) would bucket globex's Salary (globex's int-1) as acme's levels. Real ES
    answers that; the local server does not implement ``global``, so this checks the body:
    tenant= must refuse it or keep the tenant clause inside it."""
    aggs = {"all": {"global": {}, "aggs": {"levels": {"terms": {"field": "level"}}}}}
    try:
        request = repo.search(tenant="acme", aggregations=aggs, limit=0)
    except em.QueryValidationError:
        return  # refused: fine
    body = request.body()["aggs"]["all"]
    inner = repr(body.get("aggs"))
    assert "company_id" in inner, f"unscoped global aggregation sent under tenant=: {body}"


def test_query_string_q_object_resolves_custom_names(
    repo: em.Repository[Employee], two_tenants: None
) -> None:
    # A Q query_string under tenant= names logical fields in its text: it must resolve them
    # (or be refused), not silently match nothing.
    try:
        found = repo.find(Q("query_string", query="level:3"), tenant="acme",
                          consistency="immediate")
    except em.QueryValidationError:
        return
    assert names(found) == ["a1"]


def test_a_custom_field_named_like_a_model_field_resolves_consistently(
    fields: em.CustomFieldRepository, repo: em.Repository[Employee]
) -> None:
    """Names are case-insensitive and "a model field wins": then ``AGE`` and ``age`` must
    name the same field (the model's), not the model's for one spelling and the custom
    slot for the other."""
    fields.add_field("acme", "Age", "int")
    repo.add(Employee(name="a", company_id="acme", age=30, custom_fields={"Age": 99}),
             consistency="immediate")
    assert _levels(repo, "age:30") == ["a"]
    assert _levels(repo, "AGE:30") == _levels(repo, "age:30")
    assert _levels(repo, "Age:99") == _levels(repo, "age:99")


def test_a_partial_patch_naming_idx_cannot_forge_slot_values(
    repo: em.Repository[Employee], level_doc: Employee
) -> None:
    """idx is the framework's (CF-2: users must not set it): a PartialPatch that names it
    is refused or recomputed, never written as given."""
    try:
        repo.patch(level_doc.id, em.PartialPatch({"idx": {"int-1": 999}}),
                   consistency="immediate")
    except (em.DocumentValidationError, ValueError, TypeError):
        return
    assert _levels(repo, "level:999") == []
    assert _levels(repo, "level:5") == ["a"]


def test_a_partial_patch_cannot_move_a_ticket_into_another_tenant_via_idx(
    mapper: em.Mapper,
) -> None:
    tickets = mapper.repository(Ticket)
    t = tickets.add(Ticket(company_id="acme", kind="bug", title="secret",
                           custom_fields={"Sev": "high"}), consistency="immediate")
    try:
        tickets.patch(t.id, em.PartialPatch({"idx": {"tenant": "globex-bug"}}),
                      consistency="immediate")
    except (em.DocumentValidationError, ValueError, TypeError):
        return
    assert [x.title for x in tickets.find(tenant="globex-bug", consistency="immediate")] == []
    assert [x.title for x in tickets.find(tenant="acme-bug", consistency="immediate")] == [
        "secret"
    ]


def test_patch_all_with_tenant_does_not_patch_a_document_moved_to_another_tenant(
    fields: em.CustomFieldRepository, repo: em.Repository[Employee]
) -> None:
    """patch_all(..., tenant="acme"): a document that conflicts because it was moved to
    globex meanwhile is searched again; that search must keep the tenant clause (not only
    the translated filter), or acme's patch lands on globex's document."""
    fields.add_field("acme", "Level", "int")
    fields.add_field("globex", "Level", "int")  # the same slot: int-1
    doc = repo.add(Employee(name="a", company_id="acme", custom_fields={"Level": 5}),
                   consistency="immediate")
    calls = []

    def action(d: Employee) -> bool:
        if not calls:  # another writer moves the document to globex (same Level)
            repo.patch(d.id, em.PartialPatch({"company_id": "globex"}), consistency="immediate")
        calls.append(d.company_id)
        d.name = "patched-by-acme"
        return True

    repo.patch_all("level:5", em.ActionPatch(action), tenant="acme", consistency="immediate")
    stored = repo.get(doc.id)
    assert stored is not None and stored.company_id == "globex"
    assert stored.name == "a", f"acme's patch_all patched globex's document ({calls})"


def test_remove_all_with_tenant_does_not_delete_a_document_moved_to_another_tenant(
    fields: em.CustomFieldRepository, repo: em.Repository[Employee]
) -> None:
    """Same hole as above, on remove_all's per-document path (taken when removals are
    listened to): data loss in another tenant."""
    fields.add_field("acme", "Level", "int")
    fields.add_field("globex", "Level", "int")
    doc = repo.add(Employee(name="a", company_id="acme", custom_fields={"Level": 5}),
                   consistency="immediate")
    calls: list[int] = []

    def removing(sender: Any, **kwargs: Any) -> None:
        if not calls:
            repo.patch(doc.id, em.PartialPatch({"company_id": "globex"}),
                       consistency="immediate")
        calls.append(1)

    em.signals.documents_removing.connect(removing, sender=Employee)
    try:
        repo.remove_all("level:5", tenant="acme", consistency="immediate")
    finally:
        em.signals.documents_removing.disconnect(removing, sender=Employee)
    stored = repo.get(doc.id)
    assert stored is not None, "acme's remove_all deleted globex's document"
    assert stored.company_id == "globex"


@pytest.mark.parametrize(
    ("name", "query"),
    [("Cost Center", r"cost\ center:5"), ("a:b", r"a\:b:5"), ("x*", r"x\*:5"),
     ("Größe", "größe:5"), ("ΣIGMA", "σigma:5")],
)
def test_an_accepted_name_can_be_queried(
    fields: em.CustomFieldRepository, repo: em.Repository[Employee], name: str, query: str
) -> None:
    """add_field accepts the name, so a filter can name it (escaped), or add_field must
    refuse it up front."""
    fields.add_field("acme", name, "int")
    repo.add(Employee(name="a", company_id="acme", custom_fields={name: 5}),
             consistency="immediate")
    assert _levels(repo, query) == ["a"]


def test_a_write_after_another_process_retyped_a_field_is_not_indexed_in_the_old_slot(
    es_url: str, index_prefix: str, mapper: em.Mapper, repo: em.Repository[Employee]
) -> None:
    """Process A (the app, default in-memory cache) has acme's mapping cached; process B
    (e.g. ``esmapper fields remove/add`` from a shell) soft-deletes Level (int-1) and adds
    Level as keyword (keyword-1). A's next write of Level indexes it in int-1: the value is
    then invisible to ``level:`` queries for good (until the document is written again),
    not only for the cache's lifetime. A known name must be rechecked too, or writes
    must not trust a mapping older than a few seconds."""
    fields = mapper.custom_fields(Employee)
    fields.add_field("acme", "Level", "int")
    repo.add(Employee(name="warm", company_id="acme", custom_fields={"Level": 1}))  # cached
    with em.Mapper(es_url, models=[Employee], index_prefix=index_prefix) as other:
        theirs = other.custom_fields(Employee)
        theirs.remove_field("acme", "Level")
        theirs.add_field("acme", "Level", "keyword")
    import time

    time.sleep(6)  # past RECHECK_AFTER: a fresh-enough mapping is not the excuse
    doc = repo.add(Employee(name="new", company_id="acme", custom_fields={"Level": "7"}),
                   consistency="immediate")
    assert doc.idx == {"keyword-1": "7"}


def test_concurrent_writes_with_a_definition_modifying_type_lose_nothing(
    fields: em.CustomFieldRepository, repo: em.Repository[Employee]
) -> None:
    """A type whose process_value asks for its definition to be saved (CF-6
    ``IsCustomFieldDefinitionModified``): writes from several threads must all be stored,
    and every run counted (the definition saves must not fail the documents' writes nor
    overwrite each other's counts)."""
    import threading

    fields.add_field("acme", "F1", "int")
    fields.add_field("acme", "Total", "sum", process_mode="always",
                     data={"of": ["F1"], "count_runs": True})
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def run(n: int) -> None:
        barrier.wait()
        for i in range(3):
            try:
                repo.add(Employee(name=f"t{n}-{i}", company_id="acme",
                                  custom_fields={"F1": i}))
            except BaseException as exc:
                errors.append(exc)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [], errors[:2]
    assert repo.count(consistency="immediate") == 12
    total = fields.field("acme", "Total")
    assert (total.data or {}).get("runs") == 12

