"""The custom-field feature's model section: what a model with custom fields gets from
``CustomFields`` (attached when the class is defined) rather than from the model layer."""

from __future__ import annotations

from typing import Any

import pytest

import esmapper as em
from esmapper import _features
from esmapper.custom_fields._access import DICT_VALUES, VIRTUAL_VALUES, access_of, custom_access
from esmapper.custom_fields._feature import CustomFields
from esmapper.custom_fields.types import model_types, standard_field_types


class Contact(em.Document, em.HasCustomFields):
    class Index:
        tenant_field = "org"

    org: str | None = None


class Plain(em.Document):
    name: str | None = None


class Virtual(em.Document, em.HasVirtualCustomFields):
    def get_custom_fields(self) -> dict[str, Any]:
        return {}

    def get_custom_field(self, name: str) -> Any:
        return None

    def set_custom_field(self, name: str, value: Any) -> None:
        pass

    def remove_custom_field(self, name: str) -> None:
        pass

    def get_tenant_key(self) -> str | None:
        return None


def test_the_feature_is_attached_to_models_with_custom_fields_only() -> None:
    feature = Contact.__esmapper__.points.feature("custom_fields")
    assert isinstance(feature, CustomFields)
    assert feature.mapping in Contact.__esmapper__.points.mapping
    assert Plain.__esmapper__.points.feature("custom_fields") is None
    assert access_of(Plain.__esmapper__) is None


def test_the_feature_holds_the_value_access_and_the_types() -> None:
    assert custom_access(Contact()) is DICT_VALUES
    assert custom_access(Virtual()) is VIRTUAL_VALUES
    assert access_of(Contact.__esmapper__) is DICT_VALUES
    assert [t.type for t in model_types(Contact.__esmapper__)] == [
        t.type for t in standard_field_types()
    ]
    with pytest.raises(TypeError, match="Plain has no custom fields"):
        custom_access(Plain())
    with pytest.raises(TypeError, match="Plain has no custom fields"):
        model_types(Plain.__esmapper__)


def test_the_mapping_point_adds_the_slots_templates_and_idx() -> None:
    mapping = Contact.__esmapper__.mapping
    templates = {name for t in mapping["dynamic_templates"] for name in t}
    assert templates == {f"idx_{t.type}" for t in standard_field_types()}
    assert mapping["properties"]["idx"] == {
        "type": "object",
        "dynamic": True,
        "properties": {"tenant": {"type": "keyword"}},
    }
    assert "dynamic_templates" not in Plain.__esmapper__.mapping


def test_without_the_feature_the_model_layer_maps_no_custom_field() -> None:
    # the model layer alone knows the trait's fields, not what custom fields mean
    _features.unregister(CustomFields)
    try:
        mapping = Contact.__esmapper__.mapping
        assert "dynamic_templates" not in mapping
        assert mapping["properties"]["idx"] == {"type": "object", "enabled": False}
        assert access_of(Contact.__esmapper__) is None
    finally:
        _features.register(CustomFields)
    assert access_of(Contact.__esmapper__) is DICT_VALUES


def test_a_virtual_model_cannot_name_a_tenant_field() -> None:
    index = type("Index", (), {"tenant_field": "org"})
    namespace = {
        "Index": index,
        "__annotations__": {"org": "str | None"},
        "org": None,
        **{n: vars(Virtual)[n] for n in vars(Virtual) if "custom_field" in n or "tenant" in n},
    }
    with pytest.raises(em.IndexConfigurationError, match=r"tenant_field is for em\.HasCustom"):
        type("VirtualTenant", (em.Document, em.HasVirtualCustomFields), namespace)


def test_a_virtual_model_without_its_accessors_is_refused_when_defined() -> None:
    with pytest.raises(em.IndexConfigurationError, match=r"does not implement get_custom_fields"):
        type("Half", (em.Document, em.HasVirtualCustomFields), {"__annotations__": {}})
