"""The tenant rule: the one owner of what a call scoped to a tenant may see and write.

A call is scoped to a tenant when it is given ``tenant=`` (repository and session calls),
or inherits it from a session opened with ``tenant=`` (for the models with custom fields:
a session spans models, and one without custom fields has no tenant: the feature's
``call_options``). ``tenant=`` on a call of a model without custom fields is a
mistake (QueryValidationError, :func:`~esmapper.custom_fields._access.require_custom_fields`).

The rule, checked against what is **stored**, never against the object a caller hands in:

- **Reads.** Another tenant's document is not there: by id (:func:`in_tenant`, the
  feature's ``visible`` point: ``get``, ``get_many``, ``exists``, session reads), by
  search (the tenant filter, :func:`esmapper.custom_fields.search.tenant_clause`, the
  ``search`` point), and a cached search page is the tenant's own (the search's
  ``scope``, :func:`esmapper._search_answers.page_entry`: the page is stored under the caller's
  key tagged with its tenant; another tenant, or a call without one, misses it, and
  ``invalidate_cache(key)`` drops it whoever stored it).
- **Writes of documents** (add, save, remove; repository, session flush, scan-driven
  removals): :func:`check_writes`, the ``check`` point of the custom-field feature,
  called by the write pipeline before anything is sent (``tenant=`` on a model without
  custom fields is refused by the pipeline: the feature declares it in ``call_options``).
  The object must name the tenant (what it writes); for a save or remove of an id that
  exists, so must the *stored* document: the stored copy the write is conditioned on
  (a document loaded whole and written at the version it was loaded at), else one
  real-time read of the ids (an unconditional remove is then conditioned on the version
  read, so it deletes exactly what was checked). A new id is judged by the object alone.
- **Patches by id and ids** (every patch type): run as a by-query write restricted to
  the ids (:func:`esmapper._patching.patch_ids`), so the scan's tenant filter applies:
  another tenant's id reads as absent (``DocumentNotFoundError`` for one id, a 404 in
  ``BulkWriteError`` for several), exactly like ``PartialPatch`` by id.
- **Moving a document to another tenant** takes a call without a tenant scope: a scoped
  save of a document stored under another tenant, a scoped Json/Action patch whose result
  names another tenant and a scoped ``PartialPatch`` setting ``Index.tenant_field`` to
  another tenant are refused (:func:`check_tenant_writes`, :func:`check_partial_patch`). A
  ``ScriptPatch`` cannot be checked before it runs (known limit).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from esmapper.custom_fields._access import require_custom_fields
from esmapper.errors import DocumentValidationError
from esmapper.model.state import state_of
from esmapper.options import Options

if TYPE_CHECKING:
    from esmapper._context import Context
    from esmapper._pending import PendingWrite

__all__ = [
    "check_partial_patch",
    "check_named",
    "check_tenant_writes",
    "check_writes",
    "in_tenant",
]


def in_tenant(info: Any, doc: Any, tenant: str | None) -> bool:
    """Whether a read with ``tenant=`` may return ``doc`` (always without ``tenant``): a
    document of another tenant is not there for it, as a search filtered by the tenant
    would not find it."""
    if tenant is None:
        return True
    return require_custom_fields(info).tenant(doc) == tenant


def check_tenant_writes(info: Any, docs: Any, tenant: str | None, kind: str) -> None:
    """Refuse, before anything is sent, a write with ``tenant=`` of a document that names
    another tenant (DocumentValidationError naming the document, its tenant and the one
    given; QueryValidationError for a model without custom fields)."""
    if tenant is None:
        return
    access = require_custom_fields(info)
    for doc in docs:
        own = access.tenant(doc)
        if own != tenant:
            raise DocumentValidationError(
                f"{kind}(tenant={tenant!r}): {info.name} {getattr(doc, 'id', None)!r} belongs "
                f"to tenant {own!r}" + (" (none)" if not own else ""),
                field="tenant",
                ids=[str(doc.id)] if getattr(doc, "id", None) is not None else [],
            )


def _stored_elsewhere(
    info: Any, kind: str, id: str, tenant: str, stored: str
) -> DocumentValidationError:
    return DocumentValidationError(
        f"{kind}(tenant={tenant!r}): {info.name} {id!r} is stored under another tenant "
        f"({stored!r}); a "
        "call with tenant= writes only that tenant's documents (moving a document to "
        "another tenant takes a call without tenant=)",
        field="tenant",
        ids=[id],
    )


def _conditioned_original(pending: PendingWrite, options: Options) -> dict[str, Any] | None:
    """The stored ``_source`` a save or remove is conditioned on, when the write carries
    the version its document was loaded (whole) at: what the write replaces or deletes
    is then exactly that source (else it answers 409). ``None``: not known."""
    doc, info = pending.doc, pending.info
    state = state_of(doc)
    if state is None or state.original is None or state.partial or state.version is None:
        return None
    if pending.guard is not None:
        return state.original if pending.guard == state.version else None
    conditioned = pending.conditional and info.versioned and options.version_check
    if conditioned and doc.version == state.version:
        original: dict[str, Any] = state.original
        return original
    return None


def _unconditional(pending: PendingWrite, options: Options) -> bool:
    info = pending.info
    return pending.guard is None and not (
        pending.conditional
        and info.versioned
        and options.version_check
        and getattr(pending.doc, "version", None)
    )


def check_writes(ctx: Context, pendings: Sequence[PendingWrite], options: Options) -> None:
    """The tenant rule for the writes of a custom-field model in a write pipeline run (see
    the module docstring; the ``check`` point of its feature): nothing with
    ``options.tenant`` unset. Raises DocumentValidationError (``field="tenant"``) before
    anything is sent; sends at most one real-time ``_mget`` per model (the ids of saves
    and removes whose stored copy is not known from their condition)."""
    tenant = options.tenant
    if tenant is None:
        return
    groups: dict[tuple[Any, str], list[PendingWrite]] = {}
    for pending in pendings:
        if pending.kind in ("add", "save", "remove") and pending.doc is not None:
            groups.setdefault((pending.info, pending.kind), []).append(pending)
    unknown: dict[Any, list[PendingWrite]] = {}
    for (info, kind), group in groups.items():
        check_tenant_writes(info, [p.doc for p in group if _names_tenant(p)], tenant, kind)
        if kind == "add":  # a new id (create-only): the object decides
            continue
        access = require_custom_fields(info)
        for pending in group:
            doc = pending.doc
            if doc.id is None:
                continue
            source = _conditioned_original(pending, options)
            if source is None:
                unknown.setdefault(info, []).append(pending)
            elif (stored := access.own_tenant(info.from_source(source, doc.id, None))) != tenant:
                raise _stored_elsewhere(info, kind, str(doc.id), tenant, stored)
    for info, group in unknown.items():
        _check_stored(ctx, info, group, options, tenant)


def check_named(pendings: Sequence[PendingWrite], tenant: str | None) -> None:
    """The part of :func:`check_writes` judged on the objects alone (sends nothing): an
    add or save with ``tenant`` of a document naming another tenant is refused. Run
    before ``idx`` is computed too, so that a refused write gets no definitions
    auto-created for the tenant it names."""
    if tenant is None:
        return
    for pending in pendings:
        if pending.kind in ("add", "save") and pending.doc is not None and _names_tenant(pending):
            check_tenant_writes(pending.info, [pending.doc], tenant, pending.kind)


def _names_tenant(pending: PendingWrite) -> bool:
    """Whether the object of a write tells its tenant: not a document loaded in part
    (``includes``/``excludes``) whose changes leave the tenant key it computes as the
    loaded part computes it (its tenant field, or what a computed key reads, was not
    loaded: the key is the defaults'). Its save updates only what changed, leaving the
    stored tenant as it is, and a remove deletes what is stored: the stored copy alone is
    judged (a partial document is never known from its condition, so it is read). Changes
    that do change the key (a tenant field assigned) are judged on the object too."""
    state = state_of(pending.doc)
    if state is None or not state.partial or pending.kind == "add":
        return True
    info, doc = pending.info, pending.doc
    access = require_custom_fields(info)
    loaded = info.from_source(state.original or {}, doc.id, None)
    return bool(access.own_tenant(doc) != access.own_tenant(loaded))


def _check_stored(
    ctx: Context, info: Any, group: list[PendingWrite], options: Options, tenant: str
) -> None:
    """Read the stored copies of ``group``'s ids (real-time, whatever their soft-delete
    state, never from the cache) and refuse any of another tenant; an unconditional
    remove is conditioned on the version read."""

    repo = ctx.repository(info.cls)
    read = Options(soft_deletes="all", cache=False)
    stored = {d.id: d for d in repo._get_many([str(p.doc.id) for p in group], read)}
    access = require_custom_fields(info)
    for pending in group:
        found = stored.get(pending.doc.id)
        if found is None:  # not stored: a save creates it (the object decided)
            continue
        owner = access.tenant(found)
        if owner != tenant:
            raise _stored_elsewhere(info, pending.kind, str(pending.doc.id), tenant, owner)
        if pending.kind == "remove" and _unconditional(pending, options):
            state = state_of(found)
            if state is not None and state.version is not None:
                pending.guard = state.version  # delete exactly what was checked


def check_partial_patch(info: Any, doc: Mapping[str, Any], tenant: str | None) -> None:
    """Refuse, before anything is sent, a ``PartialPatch`` with ``tenant=`` that sets the
    model's ``Index.tenant_field`` to another tenant (a computed tenant key cannot be
    judged from a partial document: known limit)."""
    if tenant is None:
        return
    access = require_custom_fields(info)
    if not access.uses_tenant_field(info):
        return
    field = info.index.tenant_field
    if field in doc and str(doc[field] or "") != tenant:
        raise DocumentValidationError(
            f"patch(tenant={tenant!r}): {info.name}.{field} = {doc[field]!r} would move the "
            "documents to another tenant; moving takes a call without tenant=",
            field="tenant",
        )
