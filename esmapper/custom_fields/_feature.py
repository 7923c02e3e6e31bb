"""Custom fields as a feature of the core (:mod:`esmapper._features`): the one object
through which the model layer, the write pipeline, the patches and the search reach
custom fields. The core never imports this package; the feature is registered when
``esmapper`` is imported.

Each section below is one seam (model, writes, patches, search); the functions it
delegates to live in this package's modules."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from esmapper._features import Feature, WriteCall, register
from esmapper._pending import PendingWrite
from esmapper.custom_fields._tenancy import check_partial_patch, check_patched
from esmapper.custom_fields.indexing import partial_doc, patched_source, reconcile, refresh_idx
from esmapper.options import refresh_param
from esmapper.patches import PartialPatch, ScriptPatch

if TYPE_CHECKING:
    from esmapper.mapper import Mapper
    from esmapper.model.info import ModelInfo

__all__ = ["CustomFields"]


@register
class CustomFields(Feature):
    """Tenant custom fields: ``idx`` slots, their mappings, the tenant rule and clause."""

    name = "custom_fields"
    __slots__ = ()

    @classmethod
    def attach(cls, info: ModelInfo) -> CustomFields | None:
        return cls(info) if info.custom_fields else None

    # -- model (points: mapping) --------------------------------------------------------

    # -- writes of whole documents (points: prepare, check, finish) ---------------------

    # -- patches (prepare/check of writes whose kind is "patch") ------------------------
    # (the points dispatch a batch of patches here; the writes section's points handle
    # the other kinds)

    def prepare(self, call: WriteCall, pendings: Sequence[PendingWrite]) -> Any:
        if pendings and pendings[0].kind == "patch":
            return self.prepare_patches(call, pendings)
        return None

    def check(self, call: WriteCall, pendings: Sequence[PendingWrite]) -> None:
        if pendings and pendings[0].kind == "patch":
            self.check_patches(call, pendings)

    def finish(self, call: WriteCall, state: Any, confirmed: Sequence[PendingWrite]) -> None:
        if confirmed and confirmed[0].kind == "patch":
            self.finish_patches(call, state, confirmed)

    def prepare_patches(
        self, call: WriteCall, pendings: Sequence[PendingWrite]
    ) -> list[PendingWrite] | None:
        """``idx`` of what the patches write: a PartialPatch's update carries ``idx``
        computed from the merged preview of the stored source (and the processed
        ``custom_fields``: :func:`~esmapper.custom_fields.indexing.partial_doc`); a
        client-side patch's document gets ``idx`` recomputed (a JsonPatch's source too:
        :func:`~esmapper.custom_fields.indexing.patched_source`). Returns the script
        updates, whose ``idx`` :meth:`finish_patches` brings up to date (Painless cannot
        run the types' processing). Sends nothing unless a tenant's definitions are not
        cached."""
        mapper = cast("Mapper", call.ctx)  # (refresh_idx reaches the definitions through it)
        info, scripts, documents = self.info, [], []
        for pending in pendings:
            form = pending.form
            assert form is not None and pending.id is not None
            if form.update:
                if isinstance(form.patch, ScriptPatch):
                    scripts.append(pending)
                    continue
                assert form.body is not None
                source = pending.original_source or {}
                doc = partial_doc(mapper, info, source, form.body["doc"], pending.id)
                form.body = {**form.body, "doc": doc}
            elif form.body is not None:  # a JsonPatch's source
                patched_source(mapper, info, pending.doc, form.body)
            else:  # an ActionPatch's document (its source is made from it)
                documents.append(pending.doc)
        if documents:
            refresh_idx(mapper, documents)
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
                check_patched(self.info, pending.doc, tenant)
            elif isinstance(form.patch, PartialPatch) and id(form.patch) not in judged:
                judged.add(id(form.patch))
                check_partial_patch(self.info, form.patch.doc, tenant)

    def finish_patches(
        self, call: WriteCall, state: Any, confirmed: Sequence[PendingWrite]
    ) -> None:
        """After script updates (``state``: :meth:`prepare_patches`'): bring ``idx`` of
        the documents they changed up to date
        (:func:`~esmapper.custom_fields.indexing.reconcile`)."""
        if not state:
            return
        ids: list[str | None] = [
            p.id
            for p in confirmed
            if p.form is not None and not p.form.noop and isinstance(p.form.patch, ScriptPatch)
        ]
        refresh = refresh_param(call.options.consistency)
        reconcile(cast("Mapper", call.ctx), self.info, ids, refresh=refresh)

    # -- search (point: search) ----------------------------------------------------------
