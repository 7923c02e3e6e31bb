"""Custom fields as a feature of the core (:mod:`esmapper._features`): the one object
through which the model layer, the write pipeline, the patches and the search reach
custom fields. The core never imports this package; the feature is registered when
``esmapper`` is imported.

Each section below is one seam (model, writes, patches, search); the functions it
delegates to live in this package's modules."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from esmapper._features import Feature, Visibility, register
from esmapper.custom_fields import search as _search
from esmapper.custom_fields._access import require_custom_fields
from esmapper.custom_fields._tenancy import in_tenant

if TYPE_CHECKING:
    from esmapper._context import Context
    from esmapper.model.info import ModelInfo

__all__ = ["CustomFields"]


@register
class CustomFields(Feature):
    """Tenant custom fields: ``idx`` slots, their mappings, the tenant rule and clause."""

    name = "custom_fields"
    call_options = ("tenant",)
    __slots__ = ()

    @classmethod
    def attach(cls, info: ModelInfo) -> CustomFields | None:
        return cls(info) if info.custom_fields else None

    @classmethod
    def refuse_option(cls, info: ModelInfo, option: str) -> None:
        """``tenant=`` on a model without custom fields (QueryValidationError)."""
        require_custom_fields(info)
        super().refuse_option(info, option)

    # -- model (points: mapping) --------------------------------------------------------

    # -- writes of whole documents (points: prepare, check, finish) ---------------------

    # -- patches (prepare/check of writes whose kind is "patch") ------------------------

    # -- search (points: search_catalog, compile_search, search, visible) -----------------

    def search_catalog(self, ctx: Context, request: Any) -> None:
        _search.tenant_view(ctx, request)

    def compile_search(self, ctx: Context, request: Any) -> None:
        _search.compile_tenant_search(request)

    def search(self, ctx: Context, options: Any) -> tuple[list[Any], list[str]]:
        clause = _search.tenant_clause(self.info, options.tenant)
        return ([clause] if clause is not None else []), []

    def visible(self, options: Any) -> Visibility | None:
        """``tenant=``: another tenant's document is not there (read whole: the tenant is
        the model's to compute)."""
        tenant, info = options.tenant, self.info
        if tenant is None:
            return None
        return Visibility(lambda doc: in_tenant(info, doc, tenant), None)
