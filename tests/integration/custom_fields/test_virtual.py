"""Virtual custom fields: a model that keeps its values in its own attributes gets slots,
idx on every write path, auto-created definitions and queries by logical name exactly as a
``custom_fields`` dict model does."""

from __future__ import annotations

from typing import Any

import pytest

import esmapper as em
from tests.integration.conftest import MakeMapper

from .virtual_models import AutoContact, Contact, ExtraAccessors

ACME = "acme/sales"
GLOBEX = "globex/sales"


@pytest.fixture
def vmapper(make_mapper: MakeMapper) -> em.Mapper:
    return make_mapper(Contact, AutoContact, configure=True)


@pytest.fixture
def crepo(vmapper: em.Mapper) -> em.Repository[Contact]:
    return vmapper.repository(Contact)


@pytest.fixture
def cfields(vmapper: em.Mapper) -> em.CustomFieldRepository:
    fields = vmapper.custom_fields(Contact)
    fields.add_field(ACME, "Level", "int")
    fields.add_field(ACME, "Team", "string")
    fields.add_field(ACME, "Score", "percent")
    fields.add_field(GLOBEX, "Level", "int")  # the same slot as acme's: int-1
    return fields


def contact(name: str, tenant: str = ACME, **values: Any) -> Contact:
    org, unit = tenant.split("/")
    doc = Contact(name=name, org=org, unit=unit)
    for key, value in values.items():
        doc.set_custom_field(key, value)
    return doc


def stored(mapper: em.Mapper, id: str | None, model: type = Contact) -> dict[str, Any]:
    assert id is not None
    source: dict[str, Any] = mapper.client.get(index=mapper.spec(model).alias, id=id).body[
        "_source"
    ]
    return source


def names(results: Any) -> list[str]:
    return [d.name for d in results]


def test_add_save_and_session_flush_index_the_values_the_model_keeps(
    vmapper: em.Mapper, crepo: em.Repository[Contact], cfields: em.CustomFieldRepository
) -> None:
    a = crepo.add(contact("a", Level=5, Team="Eng", Score=150, Nickname="Al"))
    assert a.idx == {"tenant": ACME, "int-1": 5, "string-1": "Eng", "percent-1": 100}
    source = stored(vmapper, a.id)
    assert source["idx"] == a.idx
    assert "custom_fields" not in source
    # the clamped value went back through set_custom_field; unknown names are kept
    assert source["attributes"] == {
        "level": ["Level", 5],
        "team": ["Team", "Eng"],
        "score": ["Score", 100],
        "nickname": ["Nickname", "Al"],
    }
    a.set_custom_field("Level", 6)
    a.remove_custom_field("Team")
    crepo.save(a)
    assert stored(vmapper, a.id)["idx"] == {"tenant": ACME, "int-1": 6, "percent-1": 100}

    with vmapper.session() as session:
        loaded = session.get(Contact, a.id)
        assert loaded is not None and loaded.get_custom_field("level") == 6
        loaded.set_custom_field("Team", "Ops")
        session.add(contact("b", Level=9))
    assert stored(vmapper, a.id)["idx"]["string-1"] == "Ops"
    assert names(crepo.find("level:9", tenant=ACME, consistency="immediate")) == ["b"]


def test_patches_and_patch_all_recompute_idx(
    vmapper: em.Mapper, crepo: em.Repository[Contact], cfields: em.CustomFieldRepository
) -> None:
    a = crepo.add(contact("a", Level=1))
    b = crepo.add(contact("b", Level=1), consistency="immediate")
    assert a.id is not None and b.id is not None

    def idx(doc: Contact) -> Any:
        return stored(vmapper, doc.id)["idx"]

    crepo.patch(a.id, em.PartialPatch({"attributes": {"score": ["Score", 300]}}))
    assert idx(a) == {"tenant": ACME, "int-1": 1, "percent-1": 100}
    assert stored(vmapper, a.id)["attributes"]["score"] == ["Score", 100]
    crepo.patch(a.id, em.ActionPatch(lambda d: d.set_custom_field("Level", 4)))
    assert idx(a)["int-1"] == 4
    crepo.patch(
        b.id, em.JsonPatch([{"op": "replace", "path": "/attributes/level", "value": ["Level", 2]}])
    )
    assert idx(b)["int-1"] == 2
    crepo.patch(b.id, em.ScriptPatch("ctx._source.attributes.level = ['Level', 3]"))
    assert idx(b)["int-1"] == 3
    changed = crepo.patch_all(
        "level:>=3",
        em.ActionPatch(lambda d: d.set_custom_field("Team", "X")),
        tenant=ACME,
        consistency="immediate",
    )
    assert changed == 2 and idx(a)["string-1"] == idx(b)["string-1"] == "X"
    # a patch moving the document to another tenant moves its idx
    crepo.patch(b.id, em.PartialPatch({"org": "globex"}))
    assert idx(b) == {"tenant": GLOBEX, "int-1": 3, "string-1": None}


def test_queries_sorts_and_aggregations_by_logical_name_keep_tenants_apart(
    crepo: em.Repository[Contact], cfields: em.CustomFieldRepository
) -> None:
    crepo.add(
        [
            contact("a1", Level=3, Team="Sales"),
            contact("a2", level=5, Team="Eng"),
            contact("a3", LEVEL=7),
            contact("g1", GLOBEX, Level=5),
            contact("g2", GLOBEX, Level=9),
            contact("n1", "none/x", Level=5),  # a tenant without definitions: nothing indexed
        ],
        consistency="immediate",
    )
    found = crepo.find("Level:>=5", tenant=ACME, sort="-level", aggregations="terms:level")
    assert names(found) == ["a3", "a2"]
    assert found.aggregations is not None
    terms = found.aggregations.terms("terms_level")
    assert terms is not None and [(b.key, b.total) for b in terms.buckets] == [(5, 1), (7, 1)]
    assert names(crepo.find("level:>=5", tenant=GLOBEX, sort="level")) == ["g1", "g2"]
    assert crepo.count("_exists_:level", tenant=ACME) == 3
    assert crepo.count("_exists_:level", tenant=GLOBEX) == 2
    assert names(crepo.find("team:eng", tenant=ACME)) == ["a2"]
    with pytest.raises(em.QueryValidationError, match="team"):
        crepo.count("team:eng", tenant=GLOBEX)  # globex has no Team field
    with pytest.raises(em.QueryValidationError):
        crepo.find("level:5")  # without tenant= the name is unknown


def test_a_value_of_the_wrong_type_is_stored_but_not_indexed(
    vmapper: em.Mapper, crepo: em.Repository[Contact], cfields: em.CustomFieldRepository
) -> None:
    c = crepo.add(contact("a", Level="high", Team="Eng"), consistency="immediate")
    assert stored(vmapper, c.id)["attributes"]["level"] == ["Level", "high"]
    assert c.idx == {"tenant": ACME, "string-1": "Eng"}
    assert crepo.count("_exists_:level", tenant=ACME) == 0


def test_a_rename_moves_the_value_through_the_accessors(
    vmapper: em.Mapper, crepo: em.Repository[Contact], cfields: em.CustomFieldRepository
) -> None:
    c = crepo.add(contact("a", Level=4), consistency="immediate")
    cfields.rename_field(ACME, "Level", "Grade")
    assert names(crepo.find("grade:4", tenant=ACME)) == ["a"]  # no reindex
    c.name = "b"
    crepo.save(c)
    assert stored(vmapper, c.id)["attributes"] == {"grade": ["Grade", 4]}


def test_unknown_names_are_auto_created_for_a_virtual_model(vmapper: em.Mapper) -> None:
    repo = vmapper.repository(AutoContact)
    doc = repo.add(AutoContact(org="acme", extra={"Color": "red"}), consistency="immediate")
    assert doc.idx == {"tenant": "acme", "string-1": "red"}
    assert list(vmapper.custom_fields(AutoContact).get_field_mapping("acme")) == ["color"]
    assert repo.count("color:red", tenant="acme") == 1
    with pytest.raises(em.QueryValidationError, match="color"):
        repo.count("color:red", tenant="other")  # another tenant has no such field


def test_a_bulk_add_and_a_rebuild_cover_several_tenants(
    vmapper: em.Mapper, crepo: em.Repository[Contact], cfields: em.CustomFieldRepository
) -> None:
    docs = crepo.add(
        [contact(f"a{i}", Level=i) for i in range(5)] + [contact("g", GLOBEX, Level=1)],
        consistency="immediate",
    )
    assert [d.idx for d in docs][-2:] == [
        {"tenant": ACME, "int-1": 4},
        {"tenant": GLOBEX, "int-1": 1},
    ]
    vmapper.client.update_by_query(
        index=vmapper.spec(Contact).alias,
        script={"source": "ctx._source.attributes.level = ['Level', 42]"},
        refresh=True,
    )  # behind the mapper's back: idx is stale until rebuilt
    assert cfields.rebuild_idx() == 6
    assert crepo.count("level:42", tenant=ACME, consistency="immediate") == 5


def _accessors(skip: str) -> dict[str, Any]:
    def method(self: Any, *args: Any) -> Any:
        return None

    return {
        name: method
        for name in (
            "get_custom_fields",
            "get_custom_field",
            "set_custom_field",
            "remove_custom_field",
            "get_tenant_key",
        )
        if name != skip
    }


@pytest.mark.parametrize(
    "missing",
    [
        "get_custom_fields",
        "get_custom_field",
        "set_custom_field",
        "remove_custom_field",
        "get_tenant_key",
    ],
)
def test_a_model_that_does_not_implement_the_accessors_is_refused_when_defined(
    missing: str,
) -> None:
    with pytest.raises(em.IndexConfigurationError, match=rf"does not implement {missing}\(\)"):
        type("Broken", (em.Document, em.HasVirtualCustomFields), _accessors(missing))


def test_virtual_and_dict_custom_fields_are_exclusive_and_tenant_field_is_refused() -> None:
    with pytest.raises(em.IndexConfigurationError, match="exclusive"):
        type(
            "Both",
            (em.Document, em.HasCustomFields, em.HasVirtualCustomFields),
            _accessors(""),
        )
    index = type("Index", (), {"tenant_field": "org"})
    with pytest.raises(em.IndexConfigurationError, match="get_tenant_key"):
        type(
            "WithField",
            (em.Document, em.HasVirtualCustomFields),
            {**_accessors(""), "Index": index, "__annotations__": {"org": "str"}, "org": ""},
        )


def test_a_get_custom_fields_that_returns_no_dict_fails_the_write_clearly(
    vmapper: em.Mapper, cfields: em.CustomFieldRepository, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Contact, "get_custom_fields", lambda self: [("Level", 1)])
    with pytest.raises(TypeError, match=r"get_custom_fields\(\) must return a dict"):
        vmapper.repository(Contact).add(contact("x"), consistency="immediate")
    assert vmapper.repository(Contact).count() == 0  # refused before anything was sent


def test_includes_and_highlight_by_logical_name(
    vmapper: em.Mapper, crepo: em.Repository[Contact], cfields: em.CustomFieldRepository
) -> None:
    c = crepo.add(contact("a", Level=3, Team="Eng Ops"), consistency="immediate")
    [doc] = crepo.find(tenant=ACME, includes=["level"]).documents
    assert doc.idx == {"int-1": 3} and doc.name == ""
    doc.name = "renamed"  # a partially loaded virtual document keeps its idx as loaded
    crepo.save(doc, consistency="immediate")
    assert stored(vmapper, c.id)["idx"] == {
        "tenant": ACME,
        "int-1": 3,
        "string-1": "Eng Ops",
    }
    found = crepo.find("team:ops", tenant=ACME, highlight="Team")
    assert found.hits[0].highlight == {"Team": ["Eng <em>Ops</em>"]}


def _virtual_model(version: int, scripts: dict[int, str] | None = None) -> type[Any]:
    """``Contact`` (the entity type is the class name) at index version ``version``."""
    number, by_version = version, scripts or {}

    class Contact(ExtraAccessors, em.Document, em.HasVirtualCustomFields):
        class Index:
            name = "cf_virtual_reindexed"
            version = number
            reindex_scripts = by_version
            settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

        org: str = em.field(em.Keyword(), default="")
        extra: dict[str, Any] = em.field(em.Object(enabled=False), factory=dict)

    return Contact


@pytest.mark.parametrize("scripted", [False, True])
def test_a_reindex_keeps_idx_consistent(es_url: str, index_prefix: str, scripted: bool) -> None:
    v1 = _virtual_model(1)
    with em.Mapper(es_url, models=[v1], index_prefix=index_prefix) as old:
        old.configure_indexes()
        old.custom_fields(v1).add_field("acme", "Level", "int")
        old.repository(v1).add([v1(org="acme", extra={"Level": n}) for n in range(5)])
    script = "ctx._source.extra.Level = ctx._source.extra.Level * 100"
    v2 = _virtual_model(2, {2: script} if scripted else None)
    with em.Mapper(es_url, models=[v2], index_prefix=index_prefix) as new:
        new.configure_indexes()
        assert em.reindex(new, v2).status == "reindexed"
        repo = new.repository(v2)
        level = 300 if scripted else 3
        assert repo.count(f"level:{level}", tenant="acme", consistency="immediate") == 1
        [top] = repo.find(tenant="acme", sort="-level", limit=1).documents
        assert top.idx == {"tenant": "acme", "int-1": 4 * (100 if scripted else 1)}
