"""Typed field references: ``Employee.age`` on the class is a FieldRef; instances untouched."""

from __future__ import annotations

import pickle
from typing import Any, ClassVar, TypeVar

import attrs
import pytest
from typing_extensions import Self

import esmapper as em
from esmapper.model._refs import FieldRef, field_name
from esmapper.model.document import ModelMeta


class Spot(em.InnerDoc):
    city: str = ""


class Staff(em.Document, em.HasDates):
    name: str = em.field(em.Text(fields={"keyword": em.Keyword()}), default="")
    age: int = 0
    tags: list[str] = em.field(factory=list)
    spot: Spot | None = None
    mro: int = 0  # named like an attribute of ``type``


class Lead(Staff):
    reports: int = 0


# mypy types ``Staff.age`` on the class as the value type: the tests read through ``Any``
S: Any = Staff
L: Any = Lead


def test_a_field_read_on_the_class_is_a_field_ref() -> None:
    assert S.age == FieldRef(Staff, "age")
    assert str(S.name) == "name"
    assert (-S.age).expression == "-age"
    assert S.age.desc() == -S.age
    assert S.age.desc().asc().expression == "age"
    assert +S.age is not None and (+S.age).expression == "age"
    assert S.tags.path == "tags"  # a watched (mutable) field too
    assert S.id.path == "id" and S.created_utc.path == "created_utc"  # trait fields
    assert repr(-S.age) == "-Staff.age"


def test_embedded_fields_chain_into_a_dotted_path() -> None:
    assert S.spot.city.path == "spot.city"
    assert (-S.spot.city).expression == "-spot.city"
    with pytest.raises(AttributeError, match=r"Staff.spot has no field 'town'.*city"):
        _ = S.spot.town
    with pytest.raises(AttributeError, match=r"Staff\.age has no field 'x'"):
        _ = S.age.x


def test_subclasses_name_their_own_and_inherited_fields() -> None:
    assert L.reports == FieldRef(Lead, "reports")
    assert L.age == FieldRef(Lead, "age")
    assert Lead(age=3, reports=2).age == 3


def test_instances_read_and_write_their_slots_as_before() -> None:
    doc = Staff(name="Ann", age=3, spot=Spot(city="Oslo"))
    assert doc.age == 3 and doc.name == "Ann" and doc.spot == Spot(city="Oslo")
    doc.age = 4
    assert doc.age == 4
    # the class dict still holds the plain slot descriptor (no per-read cost)
    assert type(vars(Staff)["age"]).__name__ == "member_descriptor"


def test_a_field_named_like_an_attribute_of_type_keeps_its_slot_descriptor() -> None:
    assert not isinstance(S.mro, FieldRef)
    assert field_name(S.mro) == "mro"
    assert Staff(mro=2).mro == 2


def test_field_name_accepts_refs_descriptors_and_attrs_attributes() -> None:
    assert field_name(S.age) == "age"
    assert field_name(-S.age) == "age"
    assert field_name(vars(Staff)["age"]) == "age"
    assert field_name(attrs.fields(S).age) == "age"
    assert field_name("age") is None
    assert field_name(3) is None


def test_class_attributes_named_like_fields_can_still_be_set() -> None:
    class Other(em.Document):
        age: int = 0

    slot = vars(Other)["age"]
    Other.age = slot  # reaches the class dict (a mock would)
    assert vars(Other)["age"] is slot
    assert isinstance(Other.age, FieldRef)
    assert Other(age=1).age == 1


class Paged(em.Document):
    page_size: int = 0  # a field here: FieldRefMeta gains a descriptor for the name


class Limited(em.Document):
    age: int = 0
    page_size = 20  # unannotated: a class attribute, no field (attrs makes none)
    label: ClassVar[str] = "limited"


def test_class_attributes_that_are_no_fields_keep_their_values_and_types() -> None:
    # typed as their values by the mypy plugin (enabled for this project): before, the
    # unannotated one was typed FieldRef, while at run time it is its value
    page_size: int = Limited.page_size
    label: str = Limited.label
    assert (page_size, label) == (20, "limited")
    assert isinstance(Paged.page_size, FieldRef)
    assert "page_size" not in attrs.fields_dict(Limited)  # type: ignore[arg-type]


class Counting(ModelMeta):
    """A user's metaclass derived from the model metaclass (its own ``__call__``)."""

    made: ClassVar[list[str]] = []

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        Counting.made.append(cls.__name__)
        return super().__call__(*args, **kwargs)

    def describe(cls) -> str:
        return f"model {cls.__name__}"


class Counted(em.Document, metaclass=Counting):
    age: int = 0


class CountedLead(Counted):
    level: int = 0


def test_a_metaclass_derived_from_the_model_metaclass_keeps_its_behaviour() -> None:
    assert isinstance(Counted, Counting) and isinstance(CountedLead, Counting)
    assert Counted.describe() == "model Counted"
    Counting.made.clear()
    # (mypy does not apply dataclass_transform through a user's metaclass)
    assert Counted(age=1).age == 1  # type: ignore[call-arg]
    assert CountedLead(level=2).level == 2  # type: ignore[call-arg]
    assert Counting.made == ["Counted", "CountedLead"]
    refs: Any = CountedLead
    assert (refs.age, refs.level) == (FieldRef(CountedLead, "age"), FieldRef(CountedLead, "level"))
    slot = vars(Counted)["age"]
    Counted.age = slot  # reaches the class dict, and the class keeps its metaclass
    assert vars(Counted)["age"] is slot and isinstance(Counted, Counting)


class Ranked(em.Document):
    rank: int = 0

    @classmethod
    def by_rank(cls: type[Self]) -> FieldRef:
        return -cls.rank  # type[Self]: a FieldRef for the mypy plugin too


RankedT = TypeVar("RankedT", bound=Ranked)


def rank_of(model: type[RankedT]) -> FieldRef:
    return model.rank  # type[M] of a model type variable: a FieldRef for the plugin too


def test_class_reads_through_self_and_type_variables_are_field_refs() -> None:
    assert Ranked.by_rank() == FieldRef(Ranked, "rank", True)
    assert rank_of(Ranked) == FieldRef(Ranked, "rank")


def test_refs_pickle_and_hash() -> None:
    ref = -S.spot.city
    assert pickle.loads(pickle.dumps(ref)) == ref
    assert len({S.age, S.age, -S.age}) == 2
    with pytest.raises(AttributeError, match="immutable"):
        ref.path = "x"  # type: ignore[misc]
