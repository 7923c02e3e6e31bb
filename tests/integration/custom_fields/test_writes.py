"""idx is recomputed on every write path, values of the wrong type are stored but
not indexed, unknown names stored not indexed unless auto-created."""

from __future__ import annotations

from typing import Any

import pytest

import esmapper as em

from .models import Employee, Ticket


def stored(mapper: em.Mapper, id: str | None, model: type = Employee) -> dict[str, Any]:
    assert id is not None
    alias = mapper.spec(model).alias
    source: dict[str, Any] = mapper.client.get(index=alias, id=id).body["_source"]
    return source


@pytest.fixture
def acme(fields: em.CustomFieldRepository) -> dict[str, em.CustomFieldDefinition]:
    return {
        "level": fields.add_field("acme", "Level", "int"),
        "department": fields.add_field("acme", "Department", "string"),
        "remote": fields.add_field("acme", "Remote", "bool"),
        "started": fields.add_field("acme", "Started", "date"),
        "score": fields.add_field("acme", "Score", "percent"),
    }


def test_add_indexes_values_by_slot_and_keeps_logical_names(
    mapper: em.Mapper, repo: em.Repository[Employee], acme: dict[str, Any]
) -> None:
    e = repo.add(
        Employee(
            name="a",
            company_id="acme",
            custom_fields={
                "level": 5,
                "Department": "Engineering",
                "REMOTE": "true",
                "Started": "2024-02-03",
                "Score": 150,  # PercentType clamps
                "Nickname": "Al",  # no definition: stored, not indexed
            },
        )
    )
    assert e.idx == {
        "int-1": 5,
        "string-1": "Engineering",
        "bool-1": True,
        "date-1": "2024-02-03T00:00:00Z",
        "percent-1": 100,
    }
    source = stored(mapper, e.id)
    assert source["idx"] == e.idx
    assert source["custom_fields"] == {
        "level": 5,
        "Department": "Engineering",
        "REMOTE": "true",
        "Started": "2024-02-03",
        "Score": 100,
        "Nickname": "Al",
    }


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("Level", "not-a-number"),
        ("Level", 2**40),  # beyond an integer
        ("Level", 2.5),
        ("Level", True),
        ("Remote", "yes"),
        ("Started", "next tuesday"),
        ("Level", {"a": 1}),
        ("Level", [1, "x"]),
    ],
)
def test_a_value_of_the_wrong_type_is_stored_but_not_indexed(
    mapper: em.Mapper,
    repo: em.Repository[Employee],
    acme: dict[str, Any],
    name: str,
    value: Any,
) -> None:
    e = repo.add(
        Employee(name="a", company_id="acme", custom_fields={name: value}),
        consistency="immediate",
    )
    assert stored(mapper, e.id)["custom_fields"] == {name: value}  # never rejected
    assert e.idx == {}
    assert repo.count(f"_exists_:{name}", tenant="acme") == 0


def test_save_and_session_flush_recompute_idx(
    mapper: em.Mapper, repo: em.Repository[Employee], acme: dict[str, Any]
) -> None:
    e = repo.add(Employee(name="a", company_id="acme", custom_fields={"Level": 1}))
    assert e.custom_fields is not None
    e.custom_fields["Level"] = 2
    e.custom_fields["Department"] = "Ops"
    repo.save(e)
    assert stored(mapper, e.id)["idx"] == {"int-1": 2, "string-1": "Ops"}

    with mapper.session() as session:
        loaded = session.get(Employee, e.id)
        assert loaded is not None and loaded.custom_fields is not None
        del loaded.custom_fields["Level"]
        session.add(Employee(name="b", company_id="acme", custom_fields={"Level": 9}))
    assert stored(mapper, e.id)["idx"] == {"string-1": "Ops"}
    assert repo.count("level:9", tenant="acme", consistency="immediate") == 1


def test_bulk_add_of_several_tenants(
    mapper: em.Mapper, fields: em.CustomFieldRepository, repo: em.Repository[Employee]
) -> None:
    fields.add_field("acme", "Level", "int")
    fields.add_field("globex", "Rank", "int")
    fields.add_field("globex", "Level", "long")
    docs = repo.add(
        [
            Employee(name="a", company_id="acme", custom_fields={"Level": 1, "Rank": 1}),
            Employee(name="g", company_id="globex", custom_fields={"Level": 2, "Rank": 3}),
            Employee(name="n", custom_fields={"Level": 4}),  # no tenant: nothing indexed
        ]
    )
    assert [d.idx for d in docs] == [
        {"int-1": 1},
        {"int-1": 3, "long-1": 2},
        None,
    ]


def test_a_user_set_idx_is_replaced(repo: em.Repository[Employee], acme: dict[str, Any]) -> None:
    e = repo.add(Employee(company_id="acme", custom_fields={"Level": 1}, idx={"int-2": 5}))
    assert e.idx == {"int-1": 1}


def test_patches_of_every_kind_keep_idx_consistent(
    mapper: em.Mapper, repo: em.Repository[Employee], acme: dict[str, Any]
) -> None:
    a = repo.add(Employee(name="a", company_id="acme", custom_fields={"Level": 1}))
    b = repo.add(Employee(name="b", company_id="acme", custom_fields={"Level": 1}))
    assert a.id is not None and b.id is not None

    def idx(doc: Employee) -> Any:
        return stored(mapper, doc.id)["idx"]

    repo.patch(a.id, em.PartialPatch({"custom_fields": {"Level": 2, "Score": 300}}))
    assert idx(a) == {"int-1": 2, "percent-1": 100}
    assert stored(mapper, a.id)["custom_fields"] == {"Level": 2, "Score": 100}

    repo.patch([a.id, b.id], em.PartialPatch({"custom_fields": {"Level": None}}))
    assert idx(a) == {"int-1": None, "percent-1": 100}  # emptied: null
    assert repo.count("_exists_:level", tenant="acme", consistency="immediate") == 0

    repo.patch(a.id, em.ScriptPatch("ctx._source.custom_fields.Level = params.v", {"v": 3}))
    assert idx(a)["int-1"] == 3
    repo.patch([a.id, b.id], em.ScriptPatch("ctx._source.custom_fields.Level = 4"))
    assert idx(a)["int-1"] == idx(b)["int-1"] == 4

    repo.patch(a.id, em.JsonPatch([{"op": "replace", "path": "/custom_fields/Level", "value": 5}]))
    assert idx(a)["int-1"] == 5
    repo.patch(b.id, em.ActionPatch(lambda d: d.custom_fields.update(Department="Ops")))
    assert idx(b) == {"int-1": 4, "string-1": "Ops"}

    changed = repo.patch_all(
        "level:4", em.ScriptPatch("ctx._source.custom_fields.Level = 6"), tenant="acme",
        consistency="immediate",
    )  # fmt: skip
    assert changed == 1 and idx(b)["int-1"] == 6
    changed = repo.patch_all(
        "department:ops", em.PartialPatch({"custom_fields": {"Remote": True}}), tenant="acme",
        consistency="immediate",
    )  # fmt: skip
    assert changed == 1 and idx(b)["bool-1"] is True
    changed = repo.patch_all(
        None,
        em.ActionPatch(lambda d: d.custom_fields.update(Score=7)),
        consistency="immediate",
    )
    assert changed == 2 and idx(a)["percent-1"] == idx(b)["percent-1"] == 7
    changed = repo.patch_all(
        None,
        em.JsonPatch([{"op": "add", "path": "/custom_fields/Department", "value": "X"}]),
        consistency="immediate",
    )
    assert changed == 2 and idx(a)["string-1"] == "X"


def test_a_patch_that_moves_a_document_to_another_tenant_moves_its_idx(
    mapper: em.Mapper, fields: em.CustomFieldRepository, repo: em.Repository[Employee]
) -> None:
    fields.add_field("acme", "Level", "int")
    fields.add_field("globex", "Other", "int")
    fields.add_field("globex", "Level", "int")
    e = repo.add(Employee(company_id="acme", custom_fields={"Level": 3}))
    assert e.id is not None
    repo.patch(e.id, em.PartialPatch({"company_id": "globex"}))
    assert stored(mapper, e.id)["idx"] == {"int-2": 3, "int-1": None}
    assert repo.count("level:3", tenant="globex", consistency="immediate") == 1
    assert repo.count("level:3", tenant="acme") == 0


def test_a_partially_loaded_document_saves_its_idx(
    mapper: em.Mapper, repo: em.Repository[Employee], acme: dict[str, Any]
) -> None:
    e = repo.add(
        Employee(name="a", company_id="acme", custom_fields={"Level": 1, "Department": "D"}),
        consistency="immediate",
    )
    [partial] = repo.find(includes=["company_id", "custom_fields", "idx"]).documents
    assert partial.custom_fields is not None
    del partial.custom_fields["Department"]  # a key removed: refused, as for any object
    with pytest.raises(em.DocumentError, match="remove keys"):
        repo.save(partial)
    [partial] = repo.find(includes=["company_id", "custom_fields", "idx"]).documents
    assert partial.custom_fields is not None
    partial.custom_fields["Department"] = None
    partial.custom_fields["Level"] = 8
    repo.save(partial, consistency="immediate")
    assert stored(mapper, e.id)["idx"] == {"int-1": 8, "string-1": None}
    [names_only] = repo.find(includes=["name"]).documents  # custom_fields not loaded
    names_only.name = "renamed"
    repo.save(names_only)
    assert stored(mapper, e.id)["idx"] == {"int-1": 8, "string-1": None}


def test_calculated_fields_run_after_on_value_ones_and_may_update_their_definition(
    mapper: em.Mapper, fields: em.CustomFieldRepository, repo: em.Repository[Employee]
) -> None:
    fields.add_field("acme", "Field1", "int")
    fields.add_field("acme", "Field2", "int")
    fields.add_field(
        "acme", "Calculated", "sum", process_mode="always",
        data={"of": ["Field1", "Field2"], "count_runs": True},
    )  # fmt: skip
    e = repo.add(Employee(company_id="acme", custom_fields={"Field1": 1, "Field2": 2}))
    assert e.custom_fields == {"Field1": 1, "Field2": 2, "Calculated": 3}
    assert e.idx == {"int-1": 1, "int-2": 2, "sum-1": 3}
    assert repo.count("calculated:3", tenant="acme", consistency="immediate") == 1
    empty = repo.add(Employee(company_id="acme"))  # even without any value
    assert empty.idx == {"sum-1": 0}
    assert fields.get_field_mapping("acme")["calculated"].data == {
        "of": ["Field1", "Field2"], "count_runs": True, "runs": 2,
    }  # fmt: skip


def test_process_order_orders_processing_within_a_mode(
    fields: em.CustomFieldRepository, repo: em.Repository[Employee]
) -> None:
    seen: list[str] = []

    class Recorder:
        type = "int"

        def mapping(self) -> Any:
            return em.Integer()

        def process_value(self, doc: Any, value: Any, definition: Any) -> em.ProcessResult:
            seen.append(definition.name)
            return em.ProcessResult(value)

    fields.add_field("acme", "B", "int", process_order=2)
    fields.add_field("acme", "A", "int", process_order=1)
    fields.add_field("acme", "C", "int", process_order=0)
    tenant = fields.tenant_fields("acme")
    for slot in tenant.on_value:  # swap in a recording type for this test only
        object.__setattr__(slot, "field_type", Recorder())
    repo.add(Employee(company_id="acme", custom_fields={"A": 1, "B": 2, "C": 3}))
    assert seen == ["C", "A", "B"]


def test_unknown_names_are_auto_created_as_strings_when_the_model_says_so(
    mapper: em.Mapper,
) -> None:
    tickets = mapper.repository(Ticket)
    t = tickets.add(
        Ticket(company_id="acme", kind="bug", custom_fields={"Severity": 3, "Area": "ui"}),
        consistency="immediate",
    )
    mapping = mapper.custom_fields(Ticket).get_field_mapping("acme-bug")
    assert {k: (d.index_type, d.index_slot) for k, d in mapping.items()} == {
        "severity": ("string", 1),
        "area": ("string", 2),
    } or {k: (d.index_type, d.index_slot) for k, d in mapping.items()} == {
        "severity": ("string", 2),
        "area": ("string", 1),
    }
    assert t.idx is not None and t.idx["tenant"] == "acme-bug"
    assert sorted(v for k, v in t.idx.items() if k != "tenant") == ["3", "ui"]
    assert tickets.count("severity:3", tenant="acme-bug") == 1
    with pytest.raises(em.QueryValidationError, match="Unknown field 'severity'"):
        tickets.count("severity:3", tenant="acme-feature")  # a composite key: its own fields
    tickets.add(
        Ticket(company_id="acme", kind="feature", custom_fields={"severity": 3}),
        consistency="immediate",
    )
    assert tickets.count("severity:3", tenant="acme-feature") == 1
    assert tickets.count("severity:3", tenant="acme-bug") == 1


def test_a_script_patch_that_writes_nothing_raises_its_own_error(
    mapper: em.Mapper, repo: em.Repository[Employee], acme: dict[str, Any]
) -> None:
    """No script update confirmed: there is no ``idx`` to bring up to date, and the
    patch's error is the one raised (not one of the bookkeeping after it)."""
    a = repo.add(Employee(name="a", company_id="acme", custom_fields={"Level": 1}))
    with pytest.raises(em.DocumentNotFoundError):
        repo.patch("missing", em.ScriptPatch("ctx._source.custom_fields.Level = 3"))
    with pytest.raises(em.DocumentError) as caught:  # the script fails on the server
        repo.patch(a.id, em.ScriptPatch("ctx._source.custom_fields.Level = params.x.y"))
    assert not isinstance(caught.value, AttributeError)
    assert stored(mapper, a.id)["idx"]["int-1"] == 1
