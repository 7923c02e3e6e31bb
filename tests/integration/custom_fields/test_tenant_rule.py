"""One tenant rule for every call that takes or inherits a tenant (issue 25, item 3).

A call with ``tenant=`` (or in a session opened with one) sees and writes only that
tenant's documents, judged by what is *stored*, not by the object handed in: another
tenant's id reads as absent, a write that would replace, remove or move another tenant's
stored document is refused before anything is sent, and a document changes tenant only
through a call without a tenant scope. Cached searches are scoped by tenant too."""

from __future__ import annotations

import pytest

import esmapper as em
from esmapper.patches import Patch
from tests.integration.conftest import MakeMapper

from .models import Employee, Ticket


class Note(em.Document):
    """A model without custom fields: it has no tenant."""

    class Index:
        name = "cf_rule_notes"
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    text: str = ""


@pytest.fixture
def people(fields: em.CustomFieldRepository, repo: em.Repository[Employee]) -> list[Employee]:
    fields.add_field("acme", "Secret", "string")  # string-1 for acme
    fields.add_field("globex", "Team", "string")  # string-1 for globex too
    return repo.add(
        [
            Employee(name="a1", company_id="acme", custom_fields={"Secret": "red"}),
            Employee(name="g1", company_id="globex", custom_fields={"Team": "blue"}),
        ],
        consistency="immediate",
    )


def _stored(mapper: em.Mapper, id: str | None) -> dict[str, object]:
    assert id is not None
    source: dict[str, object] = mapper.client.get(index=mapper.spec(Employee).alias, id=id).body[
        "_source"
    ]
    return source


# -- patches by id and ids ----------------------------------------------------------------


@pytest.mark.parametrize(
    "patch",
    [
        em.JsonPatch([{"op": "replace", "path": "/name", "value": "hacked"}]),
        em.ActionPatch(lambda d: setattr(d, "name", "hacked")),
        em.ScriptPatch("ctx._source.name = 'hacked'"),
        em.PartialPatch({"name": "hacked"}),
    ],
    ids=["json", "action", "script", "partial"],
)
def test_a_patch_by_id_with_another_tenant_finds_nothing(
    mapper: em.Mapper, repo: em.Repository[Employee], people: list[Employee], patch: Patch
) -> None:
    a1, g1 = people
    assert a1.id is not None and g1.id is not None
    # before: Json/Action/Script patches by id ignored tenant= and changed acme's document
    with pytest.raises(em.DocumentNotFoundError):
        repo.patch(a1.id, patch, tenant="globex")
    with pytest.raises(em.DocumentNotFoundError):
        repo.patch([a1.id], patch, tenant="globex")  # a one-id list
    assert _stored(mapper, a1.id)["name"] == "a1"
    repo.patch(g1.id, patch, tenant="globex")  # its own: patched
    assert _stored(mapper, g1.id)["name"] == "hacked"


def test_a_script_patch_of_several_ids_with_tenant_patches_only_the_tenants(
    mapper: em.Mapper, repo: em.Repository[Employee], people: list[Employee]
) -> None:
    a1, g1 = people
    with pytest.raises(em.BulkWriteError) as failed:
        repo.patch(
            [a1.id or "", g1.id or ""], em.ScriptPatch("ctx._source.age = 7"), tenant="globex"
        )
    assert [(f.id, f.status) for f in failed.value.failures] == [(a1.id, 404)]
    assert _stored(mapper, a1.id)["age"] == 0
    assert _stored(mapper, g1.id)["age"] == 7


def test_a_patch_with_tenant_cannot_move_the_document_to_another_tenant(
    mapper: em.Mapper, repo: em.Repository[Employee], people: list[Employee]
) -> None:
    _a1, g1 = people
    assert g1.id is not None
    moves: list[Patch] = [
        em.PartialPatch({"company_id": "acme"}),
        em.JsonPatch([{"op": "replace", "path": "/company_id", "value": "acme"}]),
        em.ActionPatch(lambda d: setattr(d, "company_id", "acme")),
    ]
    for patch in moves:
        with pytest.raises(em.DocumentValidationError, match="tenant"):
            repo.patch(g1.id, patch, tenant="globex")
    assert _stored(mapper, g1.id)["company_id"] == "globex"
    repo.patch(g1.id, moves[0])  # a call without a tenant scope may move it
    assert _stored(mapper, g1.id)["company_id"] == "acme"


# -- sessions opened with a tenant ----------------------------------------------------------


def test_a_session_with_tenant_scopes_find_and_knows_the_tenants_field_names(
    mapper: em.Mapper, people: list[Employee]
) -> None:
    _a1, g1 = people
    with mapper.session(tenant="globex") as session:
        # before: find/find_one ignored the session's tenant and returned acme's documents
        assert [d.name for d in session.find(Employee, sort="name")] == ["g1"]
        found = session.find_one(Employee, "name:a1")
        assert found is None
        # before: QueryValidationError, globex's names were unknown in the session
        assert [d.id for d in session.find(Employee, "team:blue")] == [g1.id]
        assert session.find_one(Employee, "team:blue") is not None
        with pytest.raises(em.QueryValidationError, match="secret"):
            session.find(Employee, "secret:red")  # acme's name: unknown for globex


def test_a_session_tenant_scopes_only_the_models_with_custom_fields(
    make_mapper: MakeMapper,
) -> None:
    mapper = make_mapper(Employee, Note, configure=True)
    mapper.repository(Note).add(Note(id="n1", text="x"), consistency="immediate")
    # before: QueryValidationError ("tenant= is for models with custom fields")
    with mapper.session(tenant="acme") as session:
        held = session.get(Note, "n1")
        assert held is not None
        held.text = "y"
        session.add(Note(id="n2"))
        assert [n.id for n in session.find(Note, consistency="immediate")] == ["n1"]
    assert [n.text for n in mapper.repository(Note).get_many(["n1", "n2"])] == ["y", ""]
    with pytest.raises(em.QueryValidationError, match="has none"):
        mapper.repository(Note).get("n1", tenant="acme")  # said on the call: a mistake


# -- saves and removes: judged by the stored document ----------------------------------------


def test_a_save_with_tenant_of_an_object_carrying_another_tenants_id_is_refused(
    mapper: em.Mapper, repo: em.Repository[Employee], people: list[Employee]
) -> None:
    a1, _g1 = people
    intruder = Employee(id=a1.id, name="mine", company_id="globex", custom_fields={"Team": "x"})
    # before: the check read the object (globex), and acme's document was replaced
    with pytest.raises(em.DocumentValidationError, match="tenant") as refused:
        repo.save(intruder, tenant="globex")
    assert refused.value.field == "tenant"
    stored = _stored(mapper, a1.id)
    assert (stored["name"], stored["company_id"]) == ("a1", "acme")


def test_a_document_loaded_without_tenant_cannot_be_moved_by_a_save_with_tenant(
    mapper: em.Mapper, repo: em.Repository[Employee], people: list[Employee]
) -> None:
    a1, _g1 = people
    assert a1.id is not None
    loaded = repo.get(a1.id)
    assert loaded is not None
    loaded.company_id = "globex"
    # before: saved, and globex then read acme's custom values
    with pytest.raises(em.DocumentValidationError, match="tenant"):
        repo.save(loaded, tenant="globex")
    with (
        pytest.raises(em.DocumentValidationError, match="tenant"),
        mapper.session(tenant="globex") as session,
    ):
        held = session.get(Employee, a1.id, tenant="acme")
        assert held is not None
        held.company_id = "globex"  # committed on leaving the block
    assert _stored(mapper, a1.id)["company_id"] == "acme"
    assert repo.get(a1.id, tenant="globex") is None
    # a call without a tenant scope says it moves the document: allowed
    repo.save(loaded)
    moved = repo.get(a1.id, tenant="globex")
    assert moved is not None and moved.company_id == "globex"


def test_a_remove_with_tenant_of_an_object_carrying_another_tenants_id_is_refused(
    mapper: em.Mapper, repo: em.Repository[Employee], people: list[Employee]
) -> None:
    a1, _g1 = people
    impostor = Employee(id=a1.id, name="a1", company_id="globex")
    # before: acme's document was deleted
    with pytest.raises(em.DocumentValidationError, match="tenant"):
        repo.remove(impostor, tenant="globex")
    with (
        pytest.raises(em.DocumentValidationError, match="tenant"),
        mapper.session(tenant="globex") as session,
    ):
        session.remove(Employee(id=a1.id, name="a1", company_id="globex"))
    assert _stored(mapper, a1.id)["name"] == "a1"
    repo.remove(a1.id or "", tenant="globex")  # by id: not there for globex, a no-op
    assert _stored(mapper, a1.id)["name"] == "a1"


# -- cached searches ---------------------------------------------------------------------------


def test_a_cached_search_is_scoped_by_tenant(
    repo: em.Repository[Employee], people: list[Employee]
) -> None:
    def names(tenant: str) -> list[str]:
        found = repo.find(cache=True, cache_key="everyone", tenant=tenant, sort="name")
        return [d.name for d in found]

    assert names("acme") == ["a1"]
    # before: globex got acme's cached page under the same key
    assert names("globex") == ["g1"]
    assert names("acme") == ["a1"]
    assert [d.name for d in repo.find(cache=True, cache_key="everyone", sort="name")] == [
        "a1",
        "g1",
    ]
    assert names("globex") == ["g1"]
    repo.add(Employee(name="g2", company_id="globex"), consistency="immediate")
    assert names("globex") == ["g1"]  # served from the cache
    repo.invalidate_cache("everyone")  # reaches the tenants' pages under the key
    assert names("globex") == ["g1", "g2"]


def test_the_rule_judges_what_saving_receivers_left(
    mapper: em.Mapper, repo: em.Repository[Employee], people: list[Employee]
) -> None:
    _a1, g1 = people

    def move(sender: type, documents: list[em.ModifiedDocument], **_: object) -> None:
        for modified in documents:
            modified.value.company_id = "acme"

    g1.name = "renamed"
    # before: checked before the receivers ran, so the document moved to acme
    with (
        em.signals.documents_saving.connected_to(move, sender=Employee),
        pytest.raises(em.DocumentValidationError, match="tenant"),
    ):
        repo.save(g1, tenant="globex")
    assert _stored(mapper, g1.id)["company_id"] == "globex"


def test_a_patch_of_ids_with_tenant_announces_only_the_tenants_documents(
    repo: em.Repository[Employee], people: list[Employee]
) -> None:
    a1, g1 = people
    announced: list[str | None] = []

    def receiver(sender: type, message: em.EntityChanged, **_: object) -> None:
        announced.append(message.id)

    patch = em.JsonPatch([{"op": "replace", "path": "/age", "value": 3}])
    with (
        em.signals.entity_changed.connected_to(receiver, sender=Employee),
        pytest.raises(em.BulkWriteError),
    ):
        repo.patch([a1.id or "", g1.id or ""], patch, tenant="globex")
    assert announced == [g1.id]  # before: acme's id was announced as changed too


def test_a_refused_move_creates_no_definition_for_the_other_tenant(
    make_mapper: MakeMapper,
) -> None:
    """A client-side patch with ``tenant=`` whose result names another tenant is refused
    before its ``idx`` is computed: no definition is auto-created for that tenant."""
    mapper = make_mapper(Ticket)
    repo = mapper.repository(Ticket)
    ticket = repo.add(Ticket(company_id="acme", kind="bug", title="t"))
    assert ticket.id is not None

    def move(doc: Ticket) -> None:
        doc.company_id = "globex"
        doc.custom_fields = {"Secret": "x"}

    moves: list[Patch] = [
        em.ActionPatch(move),
        em.JsonPatch(
            [
                {"op": "replace", "path": "/company_id", "value": "globex"},
                {"op": "add", "path": "/custom_fields", "value": {"Secret": "x"}},
            ]
        ),
    ]
    for patch in moves:
        with pytest.raises(em.DocumentValidationError, match="tenant"):
            repo.patch(ticket.id, patch, tenant="acme-bug")
    fields = mapper.custom_fields(Ticket)
    assert fields.get_field_mapping("globex-bug") == {}


def test_a_refused_write_creates_no_definition_for_the_other_tenant(
    make_mapper: MakeMapper,
) -> None:
    """The same for add/save: a document naming another tenant than the call's is
    refused before its ``idx`` is computed."""
    mapper = make_mapper(Ticket)
    repo = mapper.repository(Ticket)
    with pytest.raises(em.DocumentValidationError, match="tenant"):
        repo.add(
            Ticket(company_id="globex", kind="bug", custom_fields={"Secret": "x"}),
            tenant="acme-bug",
        )
    ticket = repo.add(Ticket(company_id="acme", kind="bug", title="t"))
    ticket.company_id = "globex"
    ticket.custom_fields = {"Secret": "x"}
    with pytest.raises(em.DocumentValidationError, match="tenant"):
        repo.save(ticket, tenant="acme-bug")
    assert mapper.custom_fields(Ticket).get_field_mapping("globex-bug") == {}
