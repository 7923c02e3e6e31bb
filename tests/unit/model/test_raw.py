"""A model's raw subclass (``esmapper.model._raw.raw_class``): plain slot stores, then the
model's own class; never a model of its own."""

from __future__ import annotations

from typing import Any

import pytest

import esmapper as em
from esmapper.model._raw import raw_class
from tests.unit.model.models import Address, Employee


def test_an_instance_filled_raw_becomes_the_model() -> None:
    raw = raw_class(Address)
    assert raw is not None and raw_class(Address) is raw  # one per model
    assert raw.__slots__ == ()  # type: ignore[attr-defined]  # the model's layout
    filled = raw()
    filled.street, filled.city, filled.zip_code = "1 Main St", "Lyon", 69002
    filled._esm_state = None
    filled.__class__ = Address
    assert type(filled) is Address
    assert filled == Address(street="1 Main St", city="Lyon", zip_code=69002)


def test_the_raw_class_is_no_model_of_its_own() -> None:
    raw = raw_class(Employee)
    assert raw is not None and raw.__esmapper__ is None  # type: ignore[attr-defined]
    mapper = em.Mapper("http://127.0.0.1:1")
    with pytest.raises(TypeError, match="is not an esmapper Document"):
        mapper.repository(raw)


def test_a_model_whose_classes_see_their_subclasses_has_none() -> None:
    class Watched(em.InnerDoc):
        seen: Any = None

        def __init_subclass__(cls, **kwargs: Any) -> None:
            super().__init_subclass__(**kwargs)

    class Plain(Watched):
        name: str = ""

    assert raw_class(Plain) is None
