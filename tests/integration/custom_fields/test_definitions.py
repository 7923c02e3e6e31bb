"""Custom-field definitions: slots, names, immutables, the repository API."""

from __future__ import annotations

from typing import Any

import pytest

import esmapper as em

from .models import Employee, Ticket


def stored_definitions(mapper: em.Mapper) -> list[dict[str, Any]]:
    alias = mapper.spec(em.CustomFieldDefinition).alias
    mapper.client.indices.refresh(index=alias)
    hits = mapper.client.search(index=alias, size=1000, query={"match_all": {}}).body
    return [h["_source"] for h in hits["hits"]["hits"]]


def test_add_field_takes_slot_1_and_stores_the_definition(
    mapper: em.Mapper, fields: em.CustomFieldRepository
) -> None:
    level = fields.add_field("acme", "Level", "int", description="Seniority", display_order=3)
    assert level.index_slot == 1
    assert level.slot_name == "int-1"
    assert level.id == "Employee:acme:int:1"  # the definition's id is its slot
    assert (level.entity_type, level.tenant_key, level.name) == ("Employee", "acme", "Level")
    assert level.version is not None and level.created_utc is not None
    [source] = stored_definitions(mapper)
    assert source["description"] == "Seniority" and source["display_order"] == 3
    assert source["process_mode"] == "on_value" and source["is_deleted"] is False


def test_slots_are_the_lowest_free_per_entity_tenant_and_type(
    mapper: em.Mapper, fields: em.CustomFieldRepository
) -> None:
    assert fields.add_field("acme", "Level", "int").index_slot == 1
    assert fields.add_field("acme", "Rank", "int").index_slot == 2
    assert fields.add_field("acme", "Department", "string").index_slot == 1
    assert fields.add_field("globex", "Level", "int").index_slot == 1
    assert mapper.custom_fields(Ticket).add_field("acme", "Level", "int").index_slot == 1


def test_same_name_and_type_returns_the_existing_definition(
    mapper: em.Mapper, fields: em.CustomFieldRepository
) -> None:
    first = fields.add_field("acme", "Level", "int")
    again = fields.add_field("acme", "LEVEL", "int")  # names are case-insensitive
    assert again.id == first.id and again.name == "Level"
    assert len(stored_definitions(mapper)) == 1


def test_same_name_and_another_type_raises(
    mapper: em.Mapper, fields: em.CustomFieldRepository
) -> None:
    fields.add_field("acme", "Level", "int")
    with pytest.raises(em.DocumentValidationError, match="already exists with type 'int'") as err:
        fields.add_field("acme", "level", "string")
    assert err.value.field == "index_type"
    assert len(stored_definitions(mapper)) == 1


def test_the_lifecycle_soft_delete_keeps_the_slot_hard_delete_frees_it(
    fields: em.CustomFieldRepository,
) -> None:
    department = fields.add_field("acme", "Department", "string")
    region = fields.add_field("acme", "Region", "string")
    cost = fields.add_field("acme", "CostCenter", "string")
    assert [department.index_slot, region.index_slot, cost.index_slot] == [1, 2, 3]

    region.is_deleted = True  # soft delete: the name is free, the slot is not
    fields.save(region)
    assert set(fields.get_field_mapping("acme")) == {"department", "costcenter"}

    region_again = fields.add_field("acme", "Region", "string")
    assert region_again.index_slot == 4 and region_again.id != region.id

    fields.remove(region)  # hard delete: slot 2 is free again
    assert fields.add_field("acme", "Division", "string").index_slot == 2


def test_entity_tenant_type_and_slot_are_immutable(
    mapper: em.Mapper, fields: em.CustomFieldRepository
) -> None:
    level = fields.add_field("acme", "Level", "int")
    for name, value in [
        ("entity_type", "Ticket"),
        ("tenant_key", "globex"),
        ("index_slot", 7),
        ("index_type", "long"),
    ]:
        loaded = fields.get(level.id)
        assert loaded is not None
        setattr(loaded, name, value)
        with pytest.raises(em.DocumentValidationError, match=f"{name} cannot change") as err:
            fields.save(loaded)
        assert err.value.field == name
    # also for a definition built by hand with the stored id (read back to compare)
    forged = em.CustomFieldDefinition(
        id=level.id, entity_type="Employee", tenant_key="acme", name="Level",
        index_type="int", index_slot=2,
    )  # fmt: skip
    with pytest.raises(em.DocumentValidationError, match="index_slot cannot change"):
        fields.save(forged)
    [source] = stored_definitions(mapper)
    assert (source["tenant_key"], source["index_slot"], source["index_type"]) == ("acme", 1, "int")


@pytest.mark.parametrize(
    ("kwargs", "field", "message"),
    [
        ({"tenant": "", "name": "Level", "index_type": "int"}, "tenant_key", "tenant key"),
        ({"tenant": "acme", "name": "", "index_type": "int"}, "name", "needs a name"),
        ({"tenant": "acme", "name": " Level", "index_type": "int"}, "name", "spaces"),
        ({"tenant": "acme", "name": "L\x00", "index_type": "int"}, "name", "control"),
        ({"tenant": "acme", "name": "x" * 200, "index_type": "int"}, "name", "at most 128"),
        ({"tenant": "acme", "name": "Level", "index_type": "integer"}, "index_type", "unknown"),
        (
            {"tenant": "acme", "name": "Level", "index_type": "int", "process_mode": "x"},
            "process_mode",
            "process_mode",
        ),
    ],
)
def test_bad_definitions_are_refused_before_anything_is_sent(
    mapper: em.Mapper,
    fields: em.CustomFieldRepository,
    kwargs: dict[str, Any],
    field: str,
    message: str,
) -> None:
    with pytest.raises(em.DocumentValidationError, match=message) as err:
        fields.add_field(**kwargs)
    assert err.value.field == field
    assert stored_definitions(mapper) == []


def test_a_slot_or_id_cannot_be_chosen_on_add(
    mapper: em.Mapper, fields: em.CustomFieldRepository
) -> None:
    for definition in [
        em.CustomFieldDefinition(tenant_key="acme", name="L", index_type="int", index_slot=3),
        em.CustomFieldDefinition(id="x", tenant_key="acme", name="L", index_type="int"),
    ]:
        with pytest.raises(em.DocumentValidationError, match="slots are allocated by add"):
            fields.add(definition)
    with pytest.raises(em.DocumentValidationError, match=r"mapper\.custom_fields"):
        fields.add(em.CustomFieldDefinition(entity_type="Ticket", tenant_key="a", name="L",
                                            index_type="int"))  # fmt: skip
    assert stored_definitions(mapper) == []


def test_add_takes_definitions_and_batches(
    mapper: em.Mapper, fields: em.CustomFieldRepository
) -> None:
    existing = fields.add_field("acme", "Level", "int")
    added = fields.add(
        [
            em.CustomFieldDefinition(tenant_key="acme", name="A", index_type="int"),
            em.CustomFieldDefinition(tenant_key="acme", name="level", index_type="int"),
            em.CustomFieldDefinition(tenant_key="globex", name="A", index_type="int"),
            em.CustomFieldDefinition(tenant_key="acme", name="B", index_type="int"),
        ]
    )
    assert [(d.tenant_key, d.name, d.index_slot) for d in added] == [
        ("acme", "A", 2),
        ("acme", "Level", 1),  # the existing one, in place of its duplicate
        ("globex", "A", 1),
        ("acme", "B", 3),
    ]
    assert added[1].id == existing.id
    assert all(d.entity_type == "Employee" for d in added)
    assert len(stored_definitions(mapper)) == 4


def test_get_field_mapping_is_keyed_by_lower_name_and_cached_until_a_change(
    fields: em.CustomFieldRepository, monkeypatch: pytest.MonkeyPatch
) -> None:
    loads: list[str] = []
    load = fields._mappings.load

    def counting(tenant: str, **kwargs: Any) -> list[Any]:
        loads.append(tenant)
        return load(tenant, **kwargs)

    monkeypatch.setattr(fields._mappings, "load", counting)
    fields.add_field("acme", "Level", "int")
    loads.clear()
    mapping = fields.get_field_mapping("acme")
    assert list(mapping) == ["level"] and mapping["level"].name == "Level"
    assert fields.get_field_mapping("acme").keys() == mapping.keys()
    assert loads == ["acme"]  # the second call was served by the cache

    mapping["level"].name = "Changed"  # a copy: the cache is not affected
    assert fields.get_field_mapping("acme")["level"].name == "Level"

    fields.add_field("acme", "Rank", "int")  # a change invalidates
    loads.clear()
    assert set(fields.get_field_mapping("acme")) == {"level", "rank"}
    assert loads == ["acme"]


def test_find_by_tenant_and_remove_by_tenant(
    mapper: em.Mapper, fields: em.CustomFieldRepository
) -> None:
    b = fields.add_field("acme", "B", "int", display_order=2)
    fields.add_field("acme", "A", "string", display_order=1)
    fields.add_field("globex", "A", "int")
    b.is_deleted = True
    fields.save(b)
    found = fields.find_by_tenant("acme")
    assert [d.name for d in found] == ["A"]  # active ones, by display order
    assert found.limit == 1000
    assert [d.name for d in fields.find_by_tenant("acme", soft_deletes="all")] == ["A", "B"]

    assert fields.remove_by_tenant("acme") == 2  # soft-deleted ones too: every slot freed
    assert fields.get_field_mapping("acme") == {}
    assert fields.add_field("acme", "C", "int").index_slot == 1
    assert set(fields.get_field_mapping("globex")) == {"a"}


def test_the_repository_api_is_scoped_to_the_entity_type(
    mapper: em.Mapper, fields: em.CustomFieldRepository
) -> None:
    level = fields.add_field("acme", "Level", "int")
    mapper.custom_fields(Ticket).add_field("acme", "Level", "int")
    assert fields.count() == 1
    assert [d.id for d in fields.find("tenant_key:acme")] == [level.id]
    assert fields.get(level.id) is not None

    fields.patch(level.id, em.PartialPatch({"description": "patched"}))
    assert fields.get_field_mapping("acme")["level"].description == "patched"
    with pytest.raises(em.DocumentValidationError, match="index_slot cannot change"):
        fields.patch(level.id, em.PartialPatch({"index_slot": 9}))
    with pytest.raises(TypeError, match="ScriptPatch"):
        fields.patch(level.id, em.ScriptPatch("ctx._source.index_slot = 9"))
    assert fields.patch_all(None, em.PartialPatch({"display_order": 5})) == 1

    assert fields.remove_all() == 1  # only Employee's definitions
    assert mapper.custom_fields(Ticket).count() == 1
    assert fields.get_field_mapping("acme") == {}


def test_definitions_are_written_only_through_their_repository(
    mapper: em.Mapper, fields: em.CustomFieldRepository
) -> None:
    level = fields.add_field("acme", "Level", "int")
    plain = mapper.repository(em.CustomFieldDefinition)
    loaded = plain.get(level.id)
    assert loaded is not None
    loaded.index_slot = 5
    with pytest.raises(em.DocumentError, match=r"mapper\.custom_fields"):
        plain.save(loaded)
    with pytest.raises(em.DocumentError, match=r"mapper\.custom_fields"), mapper.session() as s:
        s.add(em.CustomFieldDefinition(tenant_key="acme", name="X", index_type="int"))
    assert [s["index_slot"] for s in stored_definitions(mapper)] == [1]


def test_renames_keep_names_unique(fields: em.CustomFieldRepository) -> None:
    fields.add_field("acme", "Level", "int")
    rank = fields.add_field("acme", "Rank", "int")
    rank.name = "LEVEL"
    with pytest.raises(em.DocumentValidationError, match="already used") as err:
        fields.save(rank)
    assert err.value.field == "name"
    renamed = fields.rename_field("acme", "Rank", "Grade")
    assert renamed.index_slot == 2  # the slot stays
    assert set(fields.get_field_mapping("acme")) == {"level", "grade"}

    # a soft-deleted definition cannot come back under a name taken meanwhile
    fields.remove_field("acme", "Level")
    fields.add_field("acme", "Level", "string")
    [old] = [d for d in fields.find_by_tenant("acme", soft_deletes="deleted")]
    old.is_deleted = False
    with pytest.raises(em.DocumentValidationError, match="already used"):
        fields.save(old)
    with pytest.raises(em.DocumentNotFoundError):
        fields.rename_field("acme", "Nope", "X")


def test_a_tenant_key_is_checked(fields: em.CustomFieldRepository) -> None:
    with pytest.raises(em.DocumentValidationError, match="tenant key"):
        fields.get_field_mapping("")
    with pytest.raises(TypeError, match="no custom fields"):
        em.CustomFieldRepository(fields.mapper, em.CustomFieldDefinition)


def test_the_definitions_index_is_configured_with_the_models(
    mapper: em.Mapper, index_prefix: str
) -> None:
    assert em.CustomFieldDefinition in mapper.models
    alias = f"{index_prefix}esmapper-custom-fields"
    assert mapper.client.indices.exists_alias(name=alias)
    assert Employee in mapper.models
