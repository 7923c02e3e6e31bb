"""Declaring models: slots, traits, inheritance and string annotations."""

from __future__ import annotations

import datetime as dt
import weakref
from datetime import date

import attrs
import pytest

import esmapper as em

from .models import Address, Employee, Everything, Note

UTC = dt.timezone.utc


def test_this_module_and_the_shared_models_use_string_annotations() -> None:
    assert Everything.__annotations__["age"] == "int"
    assert Everything.__annotations__["address"] == "Address | None"
    assert test_this_module_and_the_shared_models_use_string_annotations.__annotations__ == {
        "return": "None"
    }


# -- slots ------------------------------------------------------------------------------------


@pytest.mark.parametrize("instance", [Everything(), Employee(), Note(title="t"), Address()])
def test_instances_are_slotted(instance: object) -> None:
    assert not hasattr(instance, "__dict__")
    with pytest.raises(AttributeError):
        instance.undeclared = 1  # type: ignore[attr-defined]


def test_instances_can_be_weakly_referenced() -> None:
    doc = Everything()
    assert weakref.ref(doc)() is doc


def test_a_model_combining_all_traits_has_all_their_fields() -> None:
    names = [a.name for a in attrs.fields(Everything)]  # type: ignore[arg-type]
    for trait_field in ("id", "created_utc", "updated_utc", "is_deleted", "version"):
        assert trait_field in names
    assert "custom_fields" in names
    info = Everything.__esmapper__
    assert (info.has_dates, info.soft_deletes, info.versioned, info.custom_fields) == (
        True,
        True,
        True,
        True,
    )


def test_traits_can_be_combined_in_any_order() -> None:
    class Reordered(em.Versioned, em.SoftDeletes, em.Document, em.HasDates):
        title: str = ""

    doc = Reordered(title="t", is_deleted=True, version="1:1")
    assert doc.to_source() == {
        "is_deleted": True,
        "id": None,
        "created_utc": None,
        "updated_utc": None,
        "title": "t",
    }
    assert not hasattr(doc, "__dict__")
    assert Reordered.__esmapper__.versioned


def test_a_document_without_traits_only_gains_id() -> None:
    info = Note.__esmapper__
    assert [f.name for f in info.fields] == ["id", "title", "price", "due"]
    assert (info.has_dates, info.soft_deletes, info.versioned, info.custom_fields) == (
        False,
        False,
        False,
        False,
    )


def test_an_inner_doc_has_no_id_and_may_name_a_field_id_or_version() -> None:
    class Line(em.InnerDoc):
        id: int = 0
        version: str = ""

    assert [f.name for f in Line.__esmapper__.fields] == ["id", "version"]
    assert Line.from_source({"id": 3, "version": "v"}).to_source() == {"id": 3, "version": "v"}
    assert not hasattr(Address(), "id")


def test_a_model_may_redeclare_a_trait_field() -> None:
    class Custom(em.Document, em.SoftDeletes):
        is_deleted: bool = em.field(em.Boolean(), default=True)

    assert Custom().is_deleted is True
    assert [f.name for f in Custom.__esmapper__.fields].count("is_deleted") == 1


# -- inheritance --------------------------------------------------------------------------------


class Manager(Employee):
    reports: list[str] = em.field(factory=list)
    level: int = 1


def test_a_subclass_of_a_model_adds_fields() -> None:
    manager = Manager(name="Grace", reports=["e1"], level=2)
    assert manager.to_source()["reports"] == ["e1"]
    assert Manager.__esmapper__.mapping["properties"]["level"] == {"type": "long"}
    assert "reports" not in Employee.__esmapper__.mapping["properties"]
    assert not hasattr(Employee(), "reports")


def test_a_subclass_keeps_the_inherited_field_types() -> None:
    properties = Manager.__esmapper__.mapping["properties"]
    parent = Employee.__esmapper__.mapping["properties"]
    assert {k: properties[k] for k in parent} == parent
    assert properties["created_utc"] == {"type": "date"}
    assert properties["is_deleted"] == {"type": "boolean"}
    manager = Manager(created_utc="2026-03-04T12:00:00Z")  # type: ignore[arg-type]
    assert manager.created_utc == dt.datetime(2026, 3, 4, 12, tzinfo=UTC)
    assert manager.to_source()["created_utc"] == "2026-03-04T12:00:00Z"


def test_a_subclass_validates_inherited_fields_under_its_own_name() -> None:
    with pytest.raises(em.DocumentValidationError, match=r"^Manager\.age:"):
        Manager(age="abc")  # type: ignore[arg-type]
    with pytest.raises(em.DocumentValidationError, match=r"^Manager\.is_deleted:"):
        Manager(is_deleted="no")  # type: ignore[arg-type]


def test_a_subclass_inherits_the_traits_and_the_index_options() -> None:
    info = Manager.__esmapper__
    assert (info.has_dates, info.soft_deletes, info.versioned) == (True, True, True)
    assert info.index == Employee.__esmapper__.index
    hit = {"_id": "m1", "_seq_no": 2, "_primary_term": 1, "_source": {"level": 3}}
    assert Manager.from_hit(hit) == Manager(id="m1", version="1:2", level=3)
    assert "version" not in Manager().to_source()


def test_a_subclass_may_declare_its_own_index() -> None:
    class Contractor(Employee):
        class Index:
            name = "contractors"

        agency: str = ""

    assert Contractor.__esmapper__.index is not None
    assert Contractor.__esmapper__.index.name == "contractors"
    assert Employee.__esmapper__.index is not None
    assert Employee.__esmapper__.index.name == "employees"


def test_a_subclass_may_redeclare_an_inherited_field() -> None:
    class Precise(Employee):
        age: float = 0.0  # type: ignore[assignment]

    assert Precise.__esmapper__.mapping["properties"]["age"] == {"type": "double"}
    assert Precise(age=1).age == 1.0
    assert Employee.__esmapper__.mapping["properties"]["age"] == {"type": "integer"}


def test_two_models_in_one_module_are_independent() -> None:
    assert Employee.__esmapper__.mapping != Note.__esmapper__.mapping
    assert Employee.__esmapper__.index is not None and Note.__esmapper__.index is not None
    assert Employee.__esmapper__.index.name == "employees"
    assert Note.__esmapper__.index.name == "note"
    assert "title" not in Employee.__esmapper__.field_by_name
    assert Employee() != Note(title="")  # type: ignore[comparison-overlap]


# -- annotations ---------------------------------------------------------------------------------


def test_models_declared_in_a_function_can_refer_to_each_other() -> None:
    class Part(em.InnerDoc):
        sku: str = ""

    class Order(em.Document):
        parts: list[Part] = em.field(factory=list)
        main: Part | None = None

    assert Order.__esmapper__.mapping["properties"]["parts"] == {
        "type": "object",
        "properties": {"sku": {"type": "keyword"}},
    }
    assert Order(parts=[{"sku": "a"}]).parts == [Part(sku="a")]  # type: ignore[list-item]
    with pytest.raises(em.DocumentValidationError, match=r"^Order\.main:"):
        Order(main="a")  # type: ignore[arg-type]


def test_a_nested_class_can_be_used_as_an_annotation() -> None:
    class Invoice(em.Document):
        class Line(em.InnerDoc):
            amount: float = 0.0

        lines: list[Line] = em.field(factory=list)

    assert Invoice.__esmapper__.field_by_name["lines"].inner is Invoice.Line


def test_a_field_may_be_named_like_its_type() -> None:
    class Holiday(em.Document):
        date: date | None = None

    assert Holiday.__esmapper__.mapping["properties"]["date"] == {"type": "date"}
    assert Holiday(date=dt.date(2026, 12, 25)).date == dt.datetime(2026, 12, 25, tzinfo=UTC)


def test_an_annotation_that_cannot_be_resolved_is_refused_naming_the_attribute() -> None:
    with pytest.raises(TypeError, match=r"'Later \| None' of Early\.later"):

        class Early(em.Document):
            later: Later | None = None  # type: ignore[name-defined]  # noqa: F821 - defined after the model


def test_annotations_may_also_be_real_types() -> None:
    namespace = {"__annotations__": {"count": int, "when": dt.datetime | None}, "count": 0}
    Counter = type("Counter", (em.Document,), {**namespace, "when": None})
    assert Counter.__esmapper__.mapping["properties"] == {  # type: ignore[attr-defined]
        "id": {"type": "keyword"},
        "count": {"type": "long"},
        "when": {"type": "date"},
    }
