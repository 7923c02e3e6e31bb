"""Custom fields as a feature of the core (:mod:`esmapper._features`): the one object
through which the model layer, the write pipeline, the patches and the search reach
custom fields (one section per seam, delegating to this package's modules). Registered
when ``esmapper`` is imported; the core never imports this package."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from elasticsearch.dsl.query import Query

from esmapper._features import Feature, Visibility, WriteCall, register
from esmapper.custom_fields import _tenancy
from esmapper.custom_fields import search as _search
from esmapper.custom_fields._access import (
    CustomValues,
    access_for,
    raw_attribute,
    require_custom_fields,
)
from esmapper.custom_fields._definition_saves import DefinitionSaves
from esmapper.custom_fields._tenancy import check_partial_patch, check_tenant_writes, in_tenant
from esmapper.custom_fields.definition import CustomFieldDefinition
from esmapper.custom_fields.indexing import (
    DEFINITION_WRITER,
    partial_doc,
    recheck_written,
    reconcile,
    refresh_idx,
)
from esmapper.custom_fields.repository import CustomFieldRepository
from esmapper.custom_fields.types import CustomFieldType, check_options, dynamic_templates
from esmapper.errors import DocumentError, IndexConfigurationError
from esmapper.options import refresh_param
from esmapper.patches import PartialPatch, ScriptPatch

if TYPE_CHECKING:
    from esmapper._context import Context
    from esmapper._pending import PendingWrite
    from esmapper.model.info import ModelInfo

__all__ = ["CustomFieldDefinitions", "CustomFields"]


class _Definitions:
    """The repositories of definitions a context keeps, one per model (the feature's
    state under ``ctx.extension("custom_fields", ...)``), made on first use."""

    __slots__ = ("_lock", "_made")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._made: dict[type, CustomFieldRepository] = {}

    def of(self, ctx: Context, model: type) -> CustomFieldRepository:
        with self._lock:
            found = self._made.get(model)
            if found is None:
                # a repository is made with the Mapper (the user's facade) that made ctx's
                # repositories: the definitions repository is one of them
                mapper = ctx.repository(CustomFieldDefinition).mapper
                found = self._made[model] = CustomFieldRepository(mapper, model)
        return found


@register
class CustomFields(Feature):
    """Tenant custom fields: ``idx`` slots, their mappings, the tenant rule and clause."""

    name = "custom_fields"
    index_options = ("tenant_field", "custom_field_types", "auto_create_custom_fields")
    call_options = ("tenant",)
    __slots__ = ("access", "types")

    def __init__(
        self, info: ModelInfo, access: CustomValues, types: tuple[CustomFieldType, ...]
    ) -> None:
        super().__init__(info)
        #: how the model's documents hold their values and name their tenant
        self.access = access
        #: the model's custom-field types (``Index.custom_field_types``, checked)
        self.types = types

    @classmethod
    def attach(cls, info: ModelInfo) -> CustomFields | None:
        """The feature of a model declaring ``em.HasCustomFields`` or
        ``em.HasVirtualCustomFields``, its ``class Index:`` options checked (when the class
        is defined). IndexConfigurationError for custom-field options on another model, a
        virtual model without its accessors or with ``tenant_field``, and what
        :func:`~esmapper.custom_fields.types.check_options` refuses."""
        index = info.index
        if not info.custom_fields:
            if index is not None and (index.tenant_field or index.custom_field_types is not None):
                raise IndexConfigurationError(
                    f"{info.name}.Index: tenant_field/custom_field_types need "
                    "em.HasCustomFields or em.HasVirtualCustomFields"
                )
            return None
        assert index is not None  # a document model
        access = access_for(info.cls)
        if access.dict_attribute is None and index.tenant_field:
            raise IndexConfigurationError(
                f"{info.name}.Index.tenant_field is for em.HasCustomFields; a "
                "HasVirtualCustomFields model names its tenant with get_tenant_key()"
            )
        return cls(info, access, check_options(info.name, index, set(info.field_by_name)))

    @classmethod
    def refuse_option(cls, info: ModelInfo, option: str) -> None:
        """``tenant=`` on a model without custom fields (QueryValidationError)."""
        require_custom_fields(info)
        super().refuse_option(info, option)

    # -- model (points: mapping) --------------------------------------------------------

    def mapping(self, body: dict[str, Any]) -> None:
        """One dynamic template per type maps the ``idx`` slots; ``idx`` itself is a
        dynamic object whose ``tenant`` (the key of models that override ``tenant_key()``)
        is a keyword."""
        if "idx" in body["properties"]:
            body["properties"] = {
                **body["properties"],
                "idx": {
                    "type": "object",
                    "dynamic": True,
                    "properties": {"tenant": {"type": "keyword"}},
                },
            }
        body["dynamic_templates"] = dynamic_templates(self.types)

    # -- writes of whole documents (points: prepare, check, finish) ---------------------

    def prepare(self, call: WriteCall, pendings: Sequence[PendingWrite]) -> Any:
        """``idx`` of every document added or saved recomputed from its custom values
        (:func:`indexing.refresh_idx`). Sends nothing unless a tenant's definitions are not
        cached (one search), or ``auto_create_custom_fields`` creates definitions. Returns
        the definitions the types modified and the mappings used (a
        :class:`DefinitionSaves`, ``None``: nothing to do), for :meth:`finish`. A document
        naming another tenant than the call's is refused first
        (:func:`_tenancy.check_named`). Patches: :meth:`prepare_patches`."""
        if pendings and pendings[0].kind == "patch":
            return self.prepare_patches(call, pendings)
        # a document the tenant rule refuses gets no definitions auto-created
        _tenancy.check_named(pendings, call.options.tenant)
        docs = [p.doc for p in pendings if p.kind != "remove"]
        if not docs:
            return None
        saves = DefinitionSaves(call.ctx, recheck_written)
        refresh_idx(call.ctx, docs, saves=saves)
        return saves if saves.groups or saves.computed else None

    def check(self, call: WriteCall, pendings: Sequence[PendingWrite]) -> None:
        """The tenant rule of a call scoped to a tenant (:func:`_tenancy.check_writes`;
        patches: :meth:`check_patches`)."""
        if pendings and pendings[0].kind == "patch":
            self.check_patches(call, pendings)
            return
        _tenancy.check_writes(call.ctx, pendings, call.options)

    def finish(self, call: WriteCall, state: Any, confirmed: Sequence[PendingWrite]) -> None:
        """Save the definitions the types modified for the documents written, and bring
        their ``idx`` up to date if a definition changed meanwhile (logged, never raised;
        patches: :meth:`finish_patches`, told by the state :meth:`prepare` returned, as
        ``confirmed`` may be empty)."""
        if not isinstance(state, DefinitionSaves):  # prepare_patches' scripts
            self.finish_patches(call, state, confirmed)
            return
        written = {id(p.doc) for p in confirmed}
        state.save(written, refresh=refresh_param(call.options.consistency))

    # -- patches (prepare/check/finish of a batch of kind "patch", sent here by the above)

    def reads_stored(self, patch: Any) -> bool:
        """``idx`` is computed from the stored document: every patch is written per
        document, at the version read (a script's ``idx`` reconciled after it)."""
        return True

    def prepare_patches(
        self, call: WriteCall, pendings: Sequence[PendingWrite]
    ) -> list[PendingWrite] | None:
        """``idx`` of what the patches write: a PartialPatch's update carries ``idx`` of
        the merged preview of the stored source (:func:`indexing.partial_doc`), a
        client-side patch's document gets it recomputed (:func:`indexing.refresh_idx`),
        written back with the processed values into a JsonPatch's source. Returns the
        script updates, whose ``idx`` :meth:`finish_patches` brings up to date (Painless
        cannot run the types' processing). Sends nothing unless a tenant's definitions
        are not cached. The tenant rule (:meth:`check_patches`) is judged first: a patch
        it refuses must not get definitions auto-created for the tenant it names."""
        self.check_patches(call, pendings)
        ctx, info, scripts, documents = call.ctx, self.info, [], []
        sources: list[tuple[Any, dict[str, Any]]] = []
        for pending in pendings:
            form = pending.form
            assert form is not None and pending.id is not None
            if form.update:
                if isinstance(form.patch, ScriptPatch):
                    scripts.append(pending)
                    continue
                assert form.body is not None
                source = pending.original_source or {}
                doc = partial_doc(ctx, info, source, form.body["doc"], pending.id)
                form.body = {**form.body, "doc": doc}
            else:  # a client-side patch's result (an ActionPatch's source is made from it)
                documents.append(pending.doc)
                if form.body is not None:  # a JsonPatch's source: written back into it
                    sources.append((pending.doc, form.body))
        if documents:
            refresh_idx(ctx, documents)
        for doc, source in sources:
            source["idx"] = raw_attribute(doc, "idx")
            self.access.write_back(doc, source)
        return scripts or None

    def check_patches(self, call: WriteCall, pendings: Sequence[PendingWrite]) -> None:
        """The tenant rule of a patch with ``tenant=``: a client-side patch's result must
        stay the tenant's; a PartialPatch must not set the tenant field to another one
        (judged once per patch, also before anything is read:
        :func:`esmapper._patching.check_patch`)."""
        tenant = call.options.tenant
        if tenant is None:
            return
        judged: set[int] = set()
        for pending in pendings:
            form = pending.form
            assert form is not None
            if pending.doc is not None:
                check_tenant_writes(self.info, [pending.doc], tenant, "patch")
            elif isinstance(form.patch, PartialPatch) and id(form.patch) not in judged:
                judged.add(id(form.patch))
                check_partial_patch(self.info, form.patch.doc, tenant)

    def finish_patches(
        self, call: WriteCall, state: Any, confirmed: Sequence[PendingWrite]
    ) -> None:
        """Bring ``idx`` of the documents the script updates (``state``) changed up to
        date (:func:`indexing.reconcile`)."""
        if not state:
            return
        ids: list[str | None] = [
            p.id
            for p in confirmed
            if p.form is not None and not p.form.noop and isinstance(p.form.patch, ScriptPatch)
        ]
        refresh = refresh_param(call.options.consistency)
        reconcile(call.ctx, self.info, ids, refresh=refresh)

    # -- search (points: search_catalog, compile_search, search, visible) -----------------

    def search_catalog(self, ctx: Context, request: Any) -> None:
        """A ``tenant=`` search compiles against the model's catalog plus the tenant's
        custom fields (their definitions loaded when not cached: one search), its ``Q``
        filter's logical names replaced by their slots (:func:`_search.translate_query`)
        and its ``includes``/``excludes`` by theirs (:func:`_search.tenant_source_fields`).
        Without ``tenant=``: unchanged."""
        tenant, info = request.options.tenant, self.info
        if tenant is None:
            return
        catalog = self.definitions(ctx).tenant_fields(tenant).catalog()
        if isinstance(request.filter, Query):
            defaults = info.index.default_search_fields if info.index is not None else None
            request.filter = _search.translate_query(
                request.filter, info.catalog, catalog, default_fields=defaults
            )
        request.catalog = catalog
        select = partial(_search.tenant_source_fields, info, catalog)
        request.includes = select(request.includes, include=True)
        request.excludes = select(request.excludes, include=False)

    def compile_search(self, ctx: Context, request: Any) -> None:
        """A ``tenant=`` search's aggregations as it sends them
        (:func:`_search.tenant_aggregations`), its cached pages scoped to the tenant, and
        its hits' highlighted slots named by their custom field
        (:func:`_search.logical_highlight`)."""
        tenant = request.options.tenant
        if tenant is None:
            return
        request.aggs = _search.tenant_aggregations(self.info, request.catalog, tenant, request.aggs)
        request.scope = tenant
        request.name_highlight = partial(_search.logical_highlight, request.catalog)

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

    # -- state (the repositories of definitions, kept by the context) -------------------

    def definitions(self, ctx: Context) -> CustomFieldRepository:
        """The repository of this model's definitions that ``ctx`` keeps (its
        ``extension`` under this feature's name; made the first time). The rest of the
        package asks :func:`esmapper.custom_fields._access.definitions`."""
        return ctx.extension(self.name, _Definitions).of(ctx, self.info.cls)

    def rebuild(self, ctx: Context) -> int:
        """The ``rebuild`` point (a reindex owes it): ``idx`` of the stored documents
        brought up to date (:meth:`CustomFieldRepository.rebuild_idx`)."""
        return self.definitions(ctx).rebuild_idx()


# -- writes: the definitions model ------------------------------------------------------


@register
class CustomFieldDefinitions(Feature):
    """``CustomFieldDefinition`` documents are written by their repository only."""

    name = "custom_field_definitions"
    __slots__ = ()

    @classmethod
    def attach(cls, info: ModelInfo) -> CustomFieldDefinitions | None:
        return cls(info) if info.cls is CustomFieldDefinition else None

    def prepare(self, call: WriteCall, pendings: Sequence[PendingWrite]) -> None:
        """Refuse writes of CustomFieldDefinition documents that bypass their repository
        (DocumentError): only :func:`indexing.definition_writes` lets them through."""
        if pendings and not DEFINITION_WRITER.get():
            raise DocumentError(
                "CustomFieldDefinition documents are written through "
                "mapper.custom_fields(Model) (it allocates slots, keeps names unique and "
                "invalidates the field mappings), not through a session or "
                "mapper.repository(CustomFieldDefinition)",
                ids=[pendings[0].doc_id],
            )
