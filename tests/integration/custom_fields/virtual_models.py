"""A model with virtual custom fields: the values live in its own ``attributes`` dict (keys
lower-cased, the name as given kept beside the value) and the tenant is composed of two
attributes, so nothing is named ``custom_fields`` or ``tenant_key``."""

from __future__ import annotations

from typing import Any

import esmapper as em

from .models import PercentType


class Contact(em.Document, em.Versioned, em.HasVirtualCustomFields):
    class Index:
        name = "cf_contacts"
        custom_field_types = [*em.standard_field_types(), PercentType()]  # noqa: RUF012
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    name: str = em.field(em.Keyword(), default="")
    org: str = em.field(em.Keyword(), default="")
    unit: str = em.field(em.Keyword(), default="")
    #: lower-cased name -> [name as given, value]
    attributes: dict[str, Any] = em.field(em.Object(enabled=False), factory=dict)

    def get_custom_fields(self) -> dict[str, Any]:
        return {name: value for name, value in self.attributes.values()}

    def get_custom_field(self, name: str) -> Any:
        pair = self.attributes.get(name.lower())
        return None if pair is None else pair[1]

    def set_custom_field(self, name: str, value: Any) -> None:
        self.attributes[name.lower()] = [name, value]

    def remove_custom_field(self, name: str) -> None:
        self.attributes.pop(name.lower(), None)

    def get_tenant_key(self) -> str | None:
        return f"{self.org}/{self.unit}" if self.org and self.unit else None


class ExtraAccessors:
    """The five accessors over an ``extra`` dict (names as given) and an ``org`` tenant,
    for virtual models that need no more than that."""

    __slots__ = ()
    extra: dict[str, Any]
    org: str

    def get_custom_fields(self) -> dict[str, Any]:
        return dict(self.extra)

    def get_custom_field(self, name: str) -> Any:
        return self.extra.get(name)

    def set_custom_field(self, name: str, value: Any) -> None:
        self.extra[name] = value

    def remove_custom_field(self, name: str) -> None:
        self.extra.pop(name, None)

    def get_tenant_key(self) -> str | None:
        return self.org or None


class AutoContact(ExtraAccessors, em.Document, em.HasVirtualCustomFields):
    """Unknown names get a string definition."""

    class Index:
        name = "cf_auto_contacts"
        auto_create_custom_fields = True
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    org: str = em.field(em.Keyword(), default="")
    extra: dict[str, Any] = em.field(em.Object(enabled=False), factory=dict)
