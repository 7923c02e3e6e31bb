"""What ``tenant=`` does to a search (FEATURES CF-10, QY-34): the filter, sort and
aggregations resolve logical custom-field names through the tenant's catalog
(:class:`~esmapper.custom_fields.catalog.TenantCatalog`), and the query keeps to the
tenant's documents (``idx.tenant``), so two tenants whose fields share a slot never see
each other's values. Without ``tenant=`` a custom-field name is an unknown field.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from esmapper.errors import QueryValidationError

if TYPE_CHECKING:
    from esmapper.mapper import Mapper
    from esmapper.model.catalog import FieldCatalog
    from esmapper.model.info import ModelInfo

__all__ = ["search_catalog", "tenant_clause"]


def search_catalog(mapper: Mapper, info: ModelInfo, tenant: str | None) -> FieldCatalog:
    """The catalog a search of ``info``'s model compiles against: the model's own, or with
    ``tenant`` its custom fields too (loading the tenant's definitions when they are not
    cached: one search). Raises QueryValidationError for ``tenant=`` on a model without
    custom fields."""
    if tenant is None:
        return info.catalog
    if not info.custom_fields:
        raise QueryValidationError(
            f"tenant= is for models with custom fields; {info.name} has none (em.HasCustomFields)",
            field="tenant",
        )
    return mapper.custom_fields(info.cls).tenant_fields(tenant).catalog()


def tenant_clause(info: ModelInfo, tenant: str | None) -> dict[str, Any] | None:
    """The filter clause keeping a search to ``tenant``'s documents (``None``: none)."""
    if tenant is None or not info.custom_fields:
        return None
    return {"term": {"idx.tenant": tenant}}
