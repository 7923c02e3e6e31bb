"""Recomputing ``idx`` from ``custom_fields``: the one owner of the rule.

:func:`refresh_idx` is the only code that writes ``idx``. For each document it clears
``idx``; processes the tenant's ``on_value`` definitions that have a value in
``custom_fields`` (in ``process_order``), then the ``always`` definitions, with or without
a value (calculated fields); stores each result's ``value`` back into ``custom_fields`` and
indexes ``idx["<type>-<slot>"]`` (the result's ``idx``, else its ``value``) when the slot's mapping
takes it (:func:`~esmapper.custom_fields.types.value_checker`: otherwise the value is kept but
not indexed, never a rejected document). A model whose ``tenant_key()`` is overridden
(no tenant field to filter on) also gets ``idx["tenant"]``: searches with ``tenant=`` filter
on it (:func:`~esmapper.custom_fields.catalog.tenant_path`). Names without an active
definition are stored, not indexed, unless ``Index.auto_create_custom_fields`` (then a
``string`` definition is added first). Writes bound the staleness of the mapping they use:
a cached mapping older than ``recheck_after`` seconds (:data:`RECHECK_AFTER` by default;
set ``mapper.custom_fields(Model).recheck_after``) is loaded again first, so a definition
changed by a process that does not share the cache client is honoured by every write after
at most that long (queries keep the cached mapping for its 15 minutes).

A type's ``process_value`` gets a working copy of the definition (the cached ones are
shared, read-only); when it asks for the definition to be saved (``definition_modified``)
the save happens after the documents' write (:class:`DefinitionSaves`, in
:mod:`esmapper.custom_fields._definition_saves`), retrying version
conflicts by re-reading, and a failure there is a logged warning, never a failed write.

Every write path goes through it:

- add, save, session flush (and so ``remove_all``'s and ``rekey``'s writes): the
  ``prepare`` point of the :class:`~esmapper.custom_fields._feature.CustomFields`
  feature (the write pipeline calls it after the "-ing" signals and normalization,
  before validation); its ``finish`` point saves the modified definitions;
- ``JsonPatch``/``ActionPatch`` (by id, ids or query): the patched document is processed
  before it is written back (the ``prepare`` point of a batch of patches,
  ``CustomFields.prepare_patches`` -> :func:`refresh_idx`);
- ``PartialPatch`` on a custom-field model always runs per document (a scan or a GET gives
  the stored source): the server still does the merge (the Update API's, the one merge
  rule), and the update always carries the ``idx`` computed from the merged preview, with
  ``null`` for slots that no longer hold a value (:func:`partial_doc`). A patch naming
  ``idx`` is refused (``check_partial``) or, with ``validate=False``, its ``idx`` dropped;
  a ``JsonPatch``/``ActionPatch``/save that sets ``idx`` is overwritten by the recompute;
- ``ScriptPatch``: Painless cannot run the types' Python processing, so each document a
  script changed is read back and, when its ``idx`` is stale, updated conditionally on
  the version read (:func:`reconcile`; a 409 there means a newer write, which recomputed
  ``idx`` itself). ``patch_all`` with a script on a custom-field model therefore scans
  instead of sending ``_update_by_query``;
- reindex copies ``idx`` as stored: slots belong to (entity, tenant), not to an index
  version, so a copied ``idx`` is what recomputing would give. A reindex script that
  changes ``custom_fields`` or the tenant field must be followed by
  ``mapper.custom_fields(Model).rebuild_idx()`` (:func:`reconcile` over every document).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from elasticsearch import NotFoundError

from esmapper._bodies import merged
from esmapper._dates import partial_dates
from esmapper._outcomes import send
from esmapper._pending import PendingWrite
from esmapper.bulk import BulkAction
from esmapper.custom_fields._access import CustomValues, definitions, raw_attribute
from esmapper.custom_fields._access import custom_access as _access
from esmapper.custom_fields._definition_saves import DefinitionSaves, Modified
from esmapper.custom_fields.catalog import FieldSlot, TenantFields
from esmapper.custom_fields.definition import CustomFieldDefinition, check_name
from esmapper.custom_fields.types import NOT_INDEXED, ProcessResult, StandardFieldType
from esmapper.errors import DocumentError, DocumentValidationError
from esmapper.indexes.reads import get_documents
from esmapper.model.dates import parse_datetime
from esmapper.model.state import state_of, stored_hit

if TYPE_CHECKING:
    from esmapper._context import Context
    from esmapper.model.info import ModelInfo

__all__ = [
    "DEFINITION_WRITER",
    "DefinitionSaves",
    "definition_writes",
    "partial_doc",
    "recheck_written",
    "reconcile",
    "reconciled",
    "refresh_idx",
    "same_idx",
    "stored_hit",
]

log = logging.getLogger("esmapper.custom_fields")

#: A write reloads a cached mapping older than this (seconds; the default of
#: ``CustomFieldRepository.recheck_after``): a field defined, retyped, renamed or removed
#: by a process that does not share the cache client is written by its current definition
#: after at most this long, at the cost of at most one search per tenant this often.
RECHECK_AFTER = 5.0

_set = object.__setattr__
#: set while the definitions repository writes definitions (other writers are refused:
#: the ``prepare`` point of :class:`~esmapper.custom_fields._feature.CustomFieldDefinitions`)
DEFINITION_WRITER: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "esmapper_definition_writer", default=False
)


@contextlib.contextmanager
def definition_writes() -> Iterator[None]:
    """Let the write pipeline write CustomFieldDefinition documents (the definitions
    repository's own writes: slots, names and caches are its rules)."""
    token = DEFINITION_WRITER.set(True)
    try:
        yield
    finally:
        DEFINITION_WRITER.reset(token)


def refresh_idx(ctx: Context, docs: Sequence[Any], *, saves: DefinitionSaves | None = None) -> None:
    """Recompute ``idx`` of ``docs`` (documents of ``HasCustomFields`` models) as the module
    docstring says. A partially loaded document (``includes``/``excludes``) without
    ``custom_fields`` is left alone. Definitions a type modified are collected in ``saves``
    (saved by the caller after its write), or saved at once without it."""
    groups: dict[tuple[type, str], list[Any]] = {}
    for doc in docs:
        state = state_of(doc)
        access = _access(doc)
        if state is not None and state.partial and not access.loaded(doc, state):
            _keep_loaded_idx(doc, state)
            continue
        groups.setdefault((type(doc), access.tenant(doc)), []).append(doc)
    for (cls, tenant), group in groups.items():
        info: ModelInfo = cls.__esmapper__  # type: ignore[attr-defined]
        if not tenant:
            for doc in group:
                _store(doc, None, None)
            continue
        repo = definitions(ctx, cls)
        changes = repo.changes(tenant)
        # a write never trusts a mapping older than recheck_after: another process (not
        # sharing the cache client) may have renamed, retyped or removed a field
        fields = repo.tenant_fields(tenant, max_age=repo.recheck_after)
        assert info.index is not None
        if info.index.auto_create_custom_fields:
            fields = _auto_create(repo, fields, group)
        if saves is not None:
            saves.computed.append((info, fields, changes, group))
        modified = Modified(cls)
        for doc in group:
            _store(doc, _compute(doc, fields, modified), fields)
        if modified.changed:
            pending = saves if saves is not None else DefinitionSaves(ctx, recheck_written)
            pending.groups.append(modified)
            if saves is None:
                pending.save()


def _keep_loaded_idx(doc: Any, state: Any) -> None:
    """A partially loaded document without ``custom_fields`` cannot have its ``idx``
    recomputed: an ``idx`` the caller assigned is put back as loaded, never written."""
    if state.assigned and "idx" in state.assigned:
        state.assigned.discard("idx")
        _set(doc, "idx", (state.original or {}).get("idx"))


def _auto_create(repo: Any, fields: TenantFields, docs: list[Any]) -> TenantFields:
    """Add a ``string`` definition for each name with a value in ``docs`` that has none
    (``auto_create``); the fields after."""
    unknown: dict[str, str] = {}  # {lower: name}
    for doc in docs:
        for key, value in (_access(doc).values(doc) or {}).items():
            if value is None or not isinstance(key, str) or key.lower() in unknown:
                continue
            if fields.known(key):  # (a model field's name is known: never unknown)
                continue
            try:
                check_name(key)
            except DocumentValidationError:
                continue  # not a usable name: stored, not indexed
            unknown[key.lower()] = key
    if not unknown:
        return fields
    repo.add_definitions(  # inside a write: other stored documents follow on their next one
        [
            CustomFieldDefinition(tenant_key=fields.tenant, name=name, index_type="string")
            for name in unknown.values()
        ],
        repo.options(),
        update_stored=False,
    )
    return repo.tenant_fields(fields.tenant)  # type: ignore[no-any-return]


def _compute(doc: Any, fields: TenantFields, modified: Modified) -> dict[str, Any]:
    access = _access(doc)
    stored = access.values(doc)
    # a working view: the values are written back through the access (a dict model's
    # custom_fields, a virtual model's set_custom_field)
    values: dict[str, Any] | None = None if stored is None else dict(stored)
    present: dict[str, str] = {}
    for name in values or ():
        if isinstance(name, str):
            present.setdefault(name.lower(), name)
    if fields.former and values is not None:
        values = _move_former_names(doc, access, fields, values, present)
    idx: dict[str, Any] = {"tenant": fields.tenant} if fields.stores_tenant else {}
    for slot in fields.on_value:
        key = present.get(slot.lower)
        if key is None or values is None or values[key] is None:
            continue
        if type(slot.field_type) is StandardFieldType:  # fast path: indexed as given
            indexed = slot.check(values[key])
            if indexed is not NOT_INDEXED:
                idx[slot.key] = indexed
            continue
        values = _process(doc, access, slot, key, values, idx, modified)
    for slot in fields.always:
        values = _process(doc, access, slot, present.get(slot.lower), values, idx, modified)
    return idx


def _move_former_names(
    doc: Any,
    access: CustomValues,
    fields: TenantFields,
    values: dict[str, Any],
    present: dict[str, str],
) -> dict[str, Any]:
    """A value stored under a renamed field's former name (and not under its current one:
    absent or ``null``) moves to the current name: indexed now, and stored under it by this
    write."""
    moves = {}
    for lower, key in present.items():
        slot = fields.former.get(lower)
        held = present.get(slot.lower) if slot is not None else None
        if slot is not None and values[key] is not None and (held is None or values[held] is None):
            moves[key] = slot
    if not moves:
        return values
    state = state_of(doc)
    partial = state is not None and state.partial  # its save cannot remove keys: null them
    for key, slot in moves.items():
        value = values.pop(key)
        held = present.get(slot.lower)
        if held is not None and held != slot.definition.name:  # a null under another case
            values.pop(held, None)
            access.remove(doc, held, partial=partial)
        values[slot.definition.name] = value
        access.set(doc, slot.definition.name, value)
        access.remove(doc, key, partial=partial)
        present.pop(key.lower(), None)
        present[slot.lower] = slot.definition.name
    return values


def _process(  # noqa: PLR0917 - one step of _compute
    doc: Any,
    access: CustomValues,
    slot: FieldSlot,
    key: str | None,
    values: dict[str, Any] | None,
    idx: dict[str, Any],
    modified: Modified,
) -> dict[str, Any] | None:
    """Process one definition; returns ``custom_fields`` (created when a calculated field
    writes into a document that had none)."""
    value = values.get(key) if values is not None and key is not None else None
    try:
        # a working copy: the cached definition is shared by every write of the tenant
        result = slot.field_type.process_value(doc, value, modified.working(slot))
    except Exception:
        log.warning(
            "custom field %r (type %r) of %s %r: process_value raised; the value is stored, "
            "not indexed",
            slot.definition.name,
            slot.definition.index_type,
            type(doc).__name__,
            getattr(doc, "id", None),
            exc_info=True,
        )
        return values
    if not isinstance(result, ProcessResult):
        log.warning(
            "custom field %r: process_value of type %r returned %r, not an em.ProcessResult; "
            "the value is stored, not indexed",
            slot.definition.name,
            slot.definition.index_type,
            result,
        )
        return values
    if result.value is not value and not (result.value is None and key is None):
        name = key if key is not None else slot.definition.name
        if values is None:
            values = {}
        values[name] = result.value
        access.set(doc, name, result.value)
    indexed = slot.check(result.idx if result.idx is not None else result.value)
    if indexed is not NOT_INDEXED:
        idx[slot.key] = indexed
    if result.definition_modified:
        modified.record(slot, doc, key)
    return values


def _store(doc: Any, idx: dict[str, Any] | None, fields: TenantFields | None) -> None:
    """Set ``doc.idx`` (no change tracking: the pipeline made it). A partially loaded
    document's save merges ``idx``: slots it no longer fills are sent as ``null``."""
    state = state_of(doc)
    if state is not None and state.partial:
        before = (state.original or {}).get("idx")
        stale = set(before) if isinstance(before, dict) else set()
        if not isinstance(before, dict) and fields is not None:
            stale = {slot.key for slot in fields.by_name.values()}
        if idx is not None or stale:
            idx = {**dict.fromkeys(stale - set(idx or {})), **(idx or {})}
        state.assigned = (state.assigned or set()) | {"idx"}
    _set(doc, "idx", idx)


def same_idx(a: Any, b: Any) -> bool:
    """Whether two ``idx`` values index the same (``null`` slots count as absent)."""

    def live(value: Any) -> dict[str, Any]:
        return {k: v for k, v in value.items() if v is not None} if isinstance(value, dict) else {}

    return live(a) == live(b)


def _update_of(document: Any, stored: Mapping[str, Any], *, always_idx: bool) -> dict[str, Any]:
    """What an update of ``stored`` sends for it to hold the recomputed ``document``: its
    ``idx`` when it changed (or ``always_idx``), with ``null`` for every stored slot it
    lacks (an update merges objects: a slot is emptied by sending ``null``), and what
    processing did to the values (:meth:`CustomValues.source_changes`)."""
    out: dict[str, Any] = {}
    new, old = raw_attribute(document, "idx"), stored.get("idx")
    if always_idx or not same_idx(new, old):
        out["idx"] = dict(new or {})
        for key in old if isinstance(old, dict) else ():
            out["idx"].setdefault(key, None)
    out.update(_access(document).source_changes(stored, document))
    return out


def partial_doc(
    ctx: Context,
    info: ModelInfo,
    source: Mapping[str, Any],
    doc_changes: Mapping[str, Any],
    id: str,
) -> dict[str, Any]:
    """The ``doc`` a ``PartialPatch`` of the stored ``source`` sends: ``doc_changes`` plus
    ``idx`` computed from the merged preview (``null`` for emptied slots) and the
    ``custom_fields`` values processing changed (e.g. clamped), merged in. Sends nothing
    unless the tenant's definitions are not cached."""

    # idx is never taken from the caller (check_partial refuses it; with validate=False it
    # is dropped here): the recomputed one is always sent, with null for every slot stored
    changes = {k: v for k, v in doc_changes.items() if k != "idx"}
    preview = merged(source, changes)
    document = info.from_source(preview, id, None)
    refresh_idx(ctx, [document])
    return merged(changes, _update_of(document, preview, always_idx=True))


def reconcile(
    ctx: Context, info: ModelInfo, ids: Sequence[str | None], *, refresh: Any = None
) -> int:
    """Bring ``idx`` of documents ``ids`` up to date (after a ScriptPatch, see the module
    docstring): one real-time multi-GET (a search by ids for time-series models), then a
    partial update of ``idx`` (and the dates of :mod:`esmapper._dates`: a reindex running
    meanwhile catches up by them) per stale document, conditioned on the version read. Returns
    the number updated; a failed update is logged (a 409: a newer write recomputed it)."""
    wanted = [i for i in dict.fromkeys(ids) if i is not None]
    if not wanted:
        return 0
    return sum(1 for o in reconciled(ctx, info, _read(ctx, info, wanted), refresh=refresh) if o.ok)


def recheck_written(
    ctx: Context, info: ModelInfo, tenant: str, docs: Sequence[Any], refresh: Any
) -> None:
    """:func:`reconcile` the documents just written, then bring each one the update
    reached (its version in memory the one read back) up to what is stored: its ``idx``,
    version and loaded source, so that its next save is not refused as a conflict. A
    failure is logged (the documents were written): never raised."""
    try:
        by_id = {d.id: d for d in docs if getattr(d, "id", None) is not None}
        hits = _read(ctx, info, list(by_id))
        read_at = {h["_id"]: f"{h.get('_primary_term')}:{h.get('_seq_no')}" for h in hits}
        for outcome in reconciled(ctx, info, hits, refresh=refresh):
            doc = by_id.get(outcome.action.id)
            state = state_of(doc) if doc is not None else None
            if not outcome.ok or state is None or state.version != read_at.get(outcome.action.id):
                continue
            body = outcome.action.body
            extras = body["doc"] if isinstance(body, dict) else {}
            idx = merged(raw_attribute(doc, "idx") or {}, extras.get("idx") or {})
            _set(doc, "idx", {k: v for k, v in idx.items() if v is not None} or None)
            for name in (info.created_field, info.updated_field):
                if name is not None and name in extras:  # the dates the update set
                    _set(doc, name, parse_datetime(extras[name]))
            if state.original is not None:
                state.original = merged(state.original, extras)
            version = f"{outcome.primary_term}:{outcome.seq_no}"
            state.version = version
            if info.versioned:
                _set(doc, "version", version)
    except Exception:
        log.warning(
            "%s: a custom-field definition of tenant %r changed during a write and idx of "
            "its documents could not be brought up to date; run "
            "mapper.custom_fields(%s).rebuild_idx()",
            info.name,
            tenant,
            info.name,
            exc_info=True,
        )


def reconciled(
    ctx: Context, info: ModelInfo, hits: Sequence[Mapping[str, Any]], *, refresh: Any = None
) -> list[Any]:
    """The outcomes of the conditional updates that bring ``idx`` of raw ``hits`` already
    read (``_id``, ``_index``, ``_source``, ``_seq_no``, ``_primary_term``) up to date
    (see :func:`reconcile`)."""

    stored = [hit.get("_source") or {} for hit in hits]
    documents = [info.from_source(s, hit["_id"], None) for hit, s in zip(hits, stored, strict=True)]
    refresh_idx(ctx, documents)
    actions = []
    now = parse_datetime(ctx.clock())
    for hit, document, source in zip(hits, documents, stored, strict=True):
        extras = _update_of(document, source, always_idx=False)
        if not extras:
            continue
        if info.has_dates:  # a write like any other (a reindex catches up by the date)
            extras = partial_dates(info, extras, now, source)
        spec = ctx.spec(info.cls)
        actions.append(
            BulkAction(
                op="update",
                # conditioned on the version read: to the fence alias of the index it was
                # read from (IndexSpec.conditioned_target), never to a physical index (a
                # reindex that swapped meanwhile must not get the old index back)
                index=spec.conditioned_target(
                    spec.write_name(hit.get("_index")), hit.get("_index")
                ),
                id=hit["_id"],
                body={"doc": extras},
                if_seq_no=hit.get("_seq_no"),
                if_primary_term=hit.get("_primary_term"),
                ref=PendingWrite("patch", None, info, id=hit["_id"]),
            )
        )
    if not actions:
        return []
    outcomes = send(ctx, actions, refresh=refresh)
    failed = [o for o in outcomes if not o.ok and o.status != 409]
    if failed:
        log.warning(
            "%s: idx of %d document(s) could not be brought up to date (%s); run "
            "mapper.custom_fields(%s).rebuild_idx()",
            info.name,
            len(failed),
            ", ".join(f"{o.id}: {o.status} {o.error_type}" for o in failed[:5]),
            info.name,
        )
    return list(outcomes)


def _read(ctx: Context, info: ModelInfo, ids: list[str]) -> list[dict[str, Any]]:
    """The stored hits among ``ids``, real-time (:func:`~esmapper.indexes.reads.get_documents`,
    the one owner of by-id reads: a time-series model's partitions, a feature's routing)."""
    try:
        return [dict(raw) for raw in get_documents(ctx.client, ctx.spec(info.cls), ids)]
    except NotFoundError:
        return []
    except DocumentError as exc:  # an entry that failed: the writes are done, idx may lag
        log.warning(
            "%s: idx of %d document(s) could not be checked (%s); run "
            "mapper.custom_fields(%s).rebuild_idx()",
            info.name,
            len(ids),
            exc,
            info.name,
        )
        return []
