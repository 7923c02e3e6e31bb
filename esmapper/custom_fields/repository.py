"""``mapper.custom_fields(Model)``: the definitions' repository, bound to one entity type.

It is a full :class:`~esmapper.repository.Repository` of
:class:`~esmapper.custom_fields.definition.CustomFieldDefinition` whose searches only see the
bound entity type's definitions, whose writes refresh (``consistency="immediate"`` by
default: a definition is visible to the next slot allocation and field-mapping load), and
whose writes keep the rules:

- ``add``/``add_field``: the definition is checked (name, a type the model declares,
  ``index_slot`` 0, no id: ids are slots); an active definition of the same name
  (case-insensitive) is returned as it is when the type matches, and a
  DocumentValidationError otherwise; else it gets the lowest free slot (see
  :mod:`esmapper.custom_fields.slots`). Names are decided under the tenant's lock (its
  lease: ``lock_ttl``) and claimed create-only (:mod:`esmapper.custom_fields._names`). Then
  values the tenant's documents already hold under the name are indexed (a pass over
  them: :mod:`esmapper.custom_fields._stored_documents`, reporting to ``progress``).
- ``save``: ``entity_type``, ``tenant_key``, ``index_type`` and ``index_slot`` cannot
  change (DocumentValidationError naming the field); a rename, or a restore of a
  soft-deleted definition, takes a name no other active definition of the tenant holds.
  A rename keeps the slot: stored values answer to the new name at once; the former name
  is kept on the definition (``former_names``) so documents holding their value under it
  stay indexed, and move it to the new name on their next write. A name that is another
  field's former name is released first (its values moved to that field).
- soft delete (``is_deleted = True``, saved) keeps the slot and frees the name; ``remove``
  (hard delete) frees both, after clearing the slot's values from the tenant's documents
  (so a field that reuses the slot never shows the old field's values).
- every change drops the cached field mappings it touches (``get_field_mapping``, cached
  15 minutes in the mapper's cache client, which other processes sharing the client
  see: the invalidation is theirs too).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, overload

from elasticsearch.dsl import Q
from elasticsearch.dsl.query import Query
from typing_extensions import Unpack

from esmapper._keywords import (
    OptionKeywords,
    UntenantedOptionKeywords,
    UntenantedSearchKeywords,
)
from esmapper._limits import limited
from esmapper._pending import WriteKind
from esmapper._searching import _defaults
from esmapper.custom_fields import slots
from esmapper.custom_fields._field_mappings import MAPPING_TTL, FieldMappings
from esmapper.custom_fields._names import NameClaims, check_free, lost_name
from esmapper.custom_fields._stored_documents import (
    StoredDocumentsProgress,
    bring_up_to_date,
    release_former_names,
)
from esmapper.custom_fields.catalog import TenantFields, model_names
from esmapper.custom_fields.definition import (
    IMMUTABLE_FIELDS,
    PROCESS_MODES,
    CustomFieldDefinition,
    apply_patch,
    check_name,
    remember_former_name,
)
from esmapper.custom_fields.indexing import RECHECK_AFTER, definition_writes, stored_hit
from esmapper.custom_fields.types import model_types
from esmapper.errors import DocumentNotFoundError, DocumentValidationError
from esmapper.ids import decompose_id
from esmapper.model.state import state_of
from esmapper.options import Options
from esmapper.patches import Patch
from esmapper.repository import Repository
from esmapper.results import FindResults

if TYPE_CHECKING:
    from esmapper.mapper import Mapper

__all__ = ["MAPPING_TTL", "CustomFieldRepository"]

_PAGE = 1000


def _check_tenant(tenant: Any) -> str:
    if not isinstance(tenant, str) or not tenant:
        raise DocumentValidationError(
            f"a tenant key is a non-empty string, got {tenant!r}", field="tenant_key"
        )
    return tenant


class CustomFieldRepository(slots.TenantLockOptions, Repository[CustomFieldDefinition]):
    """The definitions of ``entity``'s custom fields (see the module docstring)."""

    def __init__(self, mapper: Mapper, entity: type) -> None:
        super().__init__(mapper, CustomFieldDefinition)
        info = entity.__esmapper__  # type: ignore[attr-defined]
        if not info.custom_fields:
            raise TypeError(
                f"{entity.__name__} has no custom fields "
                "(em.HasCustomFields or em.HasVirtualCustomFields)"
            )
        self.entity = entity
        self.entity_info = info
        self.entity_type: str = info.name
        # every search of this repository (finds, scans, by-query writes) sees only the
        # bound entity type
        self._scope = Q("term", entity_type=self.entity_type)
        self.types = {t.type: t for t in model_types(info)}
        self.defaults = Options(consistency="immediate")
        #: writes reload a cached field mapping older than this (seconds); see
        #: :data:`esmapper.custom_fields.indexing.RECHECK_AFTER`
        self.recheck_after: float = RECHECK_AFTER
        #: called with a :class:`~esmapper.custom_fields._stored_documents.StoredDocumentsProgress`
        #: while a definition change brings the stored documents up to date
        self.progress: Callable[[StoredDocumentsProgress], object] | None = None
        self._mappings = FieldMappings(self.services, info)
        self._names = NameClaims(self.services, self.entity_type)

    # -- field mappings (cached: see esmapper.custom_fields._field_mappings) -----------------

    def tenant_fields(self, tenant: str, *, max_age: float | None = None) -> TenantFields:
        """The compiled active definitions of ``tenant`` (what writes and queries use):
        from the cache client, else one search (then cached for 15 minutes, unless a change
        invalidated it meanwhile). ``max_age`` (seconds): a cached mapping loaded longer ago
        is loaded again."""
        return self._mappings.tenant_fields(tenant, max_age=max_age)

    def get_field_mapping(self, tenant: str) -> dict[str, CustomFieldDefinition]:
        """``{lower-cased name: definition}`` of ``tenant``'s active definitions (copies:
        change and ``save`` them freely). Cached as :meth:`tenant_fields` says."""
        _check_tenant(tenant)
        fields = self.tenant_fields(tenant)
        return {
            lower: CustomFieldDefinition.from_hit(stored_hit(slot.definition))
            for lower, slot in fields.by_name.items()
        }

    def changes(self, tenant: str) -> int:
        """How many times this repository invalidated ``tenant``'s mapping (a definition
        changed): read it before :meth:`tenant_fields`, pass it to :meth:`changed_since`."""
        return self._mappings.changes(tenant)

    def changed_since(self, fields: TenantFields, changes: int) -> bool:
        """Whether where the tenant's values are indexed (names, types, slots) may have
        changed since ``fields`` was read (after :meth:`changes` returned ``changes``):
        compared with the mapping the cache client holds now, loaded again (one search)
        when a change invalidated it, here or in a process sharing the cache client.
        Without a cache client only this repository's changes are seen."""
        return self._mappings.changed_since(fields, changes)

    def invalidate(self, tenant: str | None = None) -> None:
        """Drop the cached field mapping of ``tenant`` (every tenant of the entity type when
        ``None``), here and in every process sharing the cache client."""
        self._mappings.invalidate(tenant)

    # -- reads -------------------------------------------------------------------------------

    @limited(_defaults)
    def find_by_tenant(
        self, tenant: str, **kwargs: Unpack[UntenantedSearchKeywords]
    ) -> FindResults[CustomFieldDefinition]:
        """``tenant``'s definitions (active ones unless ``soft_deletes=``), sorted by
        ``display_order`` then name, 1000 a page (``next_page()`` for more)."""
        _check_tenant(tenant)
        kwargs.setdefault("limit", _PAGE)
        kwargs.setdefault("sort", "display_order name")
        return self.find(Q("term", tenant_key=tenant), **kwargs)

    # -- writes ------------------------------------------------------------------------------

    @limited(_defaults)
    def add_field(
        self,
        tenant: str,
        name: str,
        index_type: str,
        description: str | None = None,
        display_order: int = 0,
        *,
        data: dict[str, Any] | None = None,
        process_mode: str = "on_value",
        process_order: int = 0,
        **options: Unpack[UntenantedOptionKeywords],
    ) -> CustomFieldDefinition:
        """Add the custom field ``name`` of type ``index_type`` for ``tenant``, in the
        lowest free slot of that type; an active field of that name and type is returned
        as it is. Sends: the tenant lock (create, delete), one refreshed search of the
        tenant's definitions, the create (with ``refresh``). Raises
        DocumentValidationError (before anything is sent) for a bad tenant, name, type or
        mode, and when the name is active with another type; LockError when the tenant
        lock stays held 60 s."""
        definition = CustomFieldDefinition(
            tenant_key=_check_tenant(tenant),
            name=name,
            index_type=index_type,
            description=description,
            display_order=display_order,
            data=data,
            process_mode=process_mode,
            process_order=process_order,
        )
        return self.add(definition, **options)

    @overload
    def add(
        self, docs: CustomFieldDefinition, **options: Unpack[OptionKeywords]
    ) -> CustomFieldDefinition: ...
    @overload
    def add(
        self, docs: Sequence[CustomFieldDefinition], **options: Unpack[OptionKeywords]
    ) -> list[CustomFieldDefinition]: ...
    @limited(_defaults)
    def add(
        self,
        docs: CustomFieldDefinition | Sequence[CustomFieldDefinition],
        **options: Unpack[OptionKeywords],
    ) -> CustomFieldDefinition | list[CustomFieldDefinition]:
        """Add definitions (see the module docstring). Returns them, an already active one
        of the same name and type in place of its duplicate. The tenant's stored documents
        are then brought up to date (values already stored under a new name are indexed;
        :mod:`esmapper.custom_fields._stored_documents`), after a name a renamed field
        used to have is released."""
        single = isinstance(docs, CustomFieldDefinition)
        items: list[CustomFieldDefinition] = [docs] if single else list(docs)  # type: ignore[arg-type,list-item]
        out = self.add_definitions(items, self.options(**options), update_stored=True)
        return out[0] if single else out

    def add_definitions(
        self, items: list[CustomFieldDefinition], opts: Options, *, update_stored: bool
    ) -> list[CustomFieldDefinition]:
        """:meth:`add`; ``update_stored=False`` leaves the stored documents to their next
        write (``auto_create_custom_fields``, called from inside a write)."""
        for item in items:
            self._check_new(item)
        result: dict[int, CustomFieldDefinition] = {}
        by_tenant: dict[str, list[CustomFieldDefinition]] = {}
        for item in items:
            by_tenant.setdefault(item.tenant_key, []).append(item)
        for tenant, group in by_tenant.items():
            if update_stored:
                release_former_names(self, tenant, [i.name for i in group], opts)
            try:
                with self._tenant_lock(tenant):
                    result.update(self._add_tenant(tenant, group, opts))
            finally:
                self.invalidate(tenant)
            if update_stored and any(result[id(item)] is item for item in group):
                bring_up_to_date(self, tenant, "add")
        return [result[id(item)] for item in items]

    def _check_new(self, item: Any) -> None:
        if not isinstance(item, CustomFieldDefinition):
            raise TypeError(f"add() takes CustomFieldDefinition documents, got {item!r}")
        if not item.entity_type:
            object.__setattr__(item, "entity_type", self.entity_type)
        elif item.entity_type != self.entity_type:
            raise DocumentValidationError(
                f"definition of {item.entity_type!r} added through the {self.entity_type} "
                f"custom fields; use mapper.custom_fields({item.entity_type})",
                field="entity_type",
            )
        _check_tenant(item.tenant_key)
        if item.id is not None or item.index_slot:
            raise DocumentValidationError(
                f"custom field {item.name!r}: slots are allocated by add(); leave id and "
                f"index_slot unset (got id={item.id!r}, index_slot={item.index_slot!r})",
                field="index_slot",
            )
        self._check_fields(item)

    def _check_fields(self, item: CustomFieldDefinition, *, new_name: bool = True) -> None:
        check_name(item.name, new=new_name)
        clash = model_names(self.entity_info).get(item.name.lower())
        if clash is not None:
            raise DocumentValidationError(
                f"custom field {item.name!r}: {self.entity_type} has its own field {clash!r} "
                "(names are case-insensitive, and a model field would always win in queries)",
                field="name",
            )
        if item.index_type not in self.types:
            raise DocumentValidationError(
                f"custom field {item.name!r}: unknown type {item.index_type!r}; "
                f"{self.entity_type} declares {', '.join(sorted(self.types))}",
                field="index_type",
            )
        if item.process_mode not in PROCESS_MODES:
            raise DocumentValidationError(
                f"custom field {item.name!r}: process_mode {item.process_mode!r} is not "
                f"one of {', '.join(PROCESS_MODES)}",
                field="process_mode",
            )

    def _add_tenant(
        self, tenant: str, group: list[CustomFieldDefinition], options: Options
    ) -> dict[int, CustomFieldDefinition]:
        stored = [
            CustomFieldDefinition.from_hit(hit)
            for hit in self._mappings.load(tenant, every=True, refresh=True)
        ]
        active = {d.name.lower(): d for d in stored if not d.is_deleted}
        result: dict[int, CustomFieldDefinition] = {}
        new: list[CustomFieldDefinition] = []
        for item in group:
            same = active.get(item.name.lower())
            if same is None:
                active[item.name.lower()] = item
                new.append(item)
                result[id(item)] = item
            elif same.index_type == item.index_type:
                result[id(item)] = same
            else:
                raise DocumentValidationError(
                    f"custom field {item.name!r} of tenant {tenant!r} already exists with "
                    f"type {same.index_type!r} (slot {same.slot_name}); not {item.index_type!r}",
                    field="index_type",
                    ids=[same.id],
                )
        if new:
            create = partial(self._send, "add", options=options)
            slots.allocate(create, self.entity_type, tenant, new, stored)
            # the fence: a holder whose lock lapsed meanwhile finds the name claimed
            replaced: dict[int, CustomFieldDefinition] = {}
            for item in new:
                assert item.id is not None
                holder = self._names.claim(tenant, item.name, item.id)
                if holder is not None:
                    replaced[id(item)] = lost_name(self, tenant, item, holder)
            result = {key: replaced.get(id(value), value) for key, value in result.items()}
        return result

    @overload
    def save(
        self, docs: CustomFieldDefinition, **options: Unpack[OptionKeywords]
    ) -> CustomFieldDefinition: ...
    @overload
    def save(
        self, docs: Sequence[CustomFieldDefinition], **options: Unpack[OptionKeywords]
    ) -> list[CustomFieldDefinition]: ...
    @limited(_defaults)
    def save(
        self,
        docs: CustomFieldDefinition | Sequence[CustomFieldDefinition],
        **options: Unpack[OptionKeywords],
    ) -> CustomFieldDefinition | list[CustomFieldDefinition]:
        """Save definitions (see the module docstring): immutables checked against what is
        stored (read when the definition was not loaded), names kept unique under the
        tenant lock when a definition is renamed or restored."""
        single = isinstance(docs, CustomFieldDefinition)
        items: list[CustomFieldDefinition] = [docs] if single else list(docs)  # type: ignore[arg-type,list-item]
        opts = self.options(**options)
        claims: dict[str, list[CustomFieldDefinition]] = {}
        given_up: list[tuple[str, str, str]] = []  # (tenant, name, id): claims to release
        for item in items:
            if not isinstance(item, CustomFieldDefinition):
                raise TypeError(f"save() takes CustomFieldDefinition documents, got {item!r}")
            stored = self._stored(item)
            for name in IMMUTABLE_FIELDS:
                if stored.get(name) != getattr(item, name):
                    raise DocumentValidationError(
                        f"custom field {item.name!r}: {name} cannot change "
                        f"({stored.get(name)!r} -> {getattr(item, name)!r})",
                        field=name,
                        ids=[item.id],
                    )
            renamed = str(stored.get("name", "")) != item.name
            self._check_fields(item, new_name=renamed)
            renamed = str(stored.get("name", "")).lower() != item.name.lower()
            if renamed:
                remember_former_name(item, str(stored.get("name", "")))
            restored = bool(stored.get("is_deleted")) and not item.is_deleted
            if not item.is_deleted and (renamed or restored):
                claims.setdefault(item.tenant_key, []).append(item)
            gives_up = renamed or item.is_deleted
            if item.id is not None and not stored.get("is_deleted") and gives_up:
                given_up.append((item.tenant_key, str(stored.get("name", "")), item.id))
        tenants = list(dict.fromkeys(item.tenant_key for item in items))
        try:
            for tenant in tenants:
                group = [i for i in items if i.tenant_key == tenant]
                if tenant in claims:
                    names = [i.name for i in claims[tenant]]
                    release_former_names(self, tenant, names, opts, saving=group)
                    with self._tenant_lock(tenant):
                        check_free(self._mappings, tenant, group)
                        claimed = self._names.claim_all(tenant, claims[tenant])
                        try:
                            self._send("save", group, opts)
                        except BaseException:
                            for item in claimed:
                                self._names.release(tenant, item.name, str(item.id))
                            raise
                else:
                    self._send("save", group, opts)
            for tenant, name, definition in given_up:
                self._names.release(tenant, name, definition)
        finally:
            for tenant in tenants:
                self.invalidate(tenant)
        return items[0] if single else items

    def _send(self, kind: WriteKind, docs: Any, options: Options) -> None:
        """Send definitions through the write pipeline (:func:`definition_writes`)."""
        with definition_writes():
            self._run(kind, list(docs), options)

    def _stored(self, item: CustomFieldDefinition) -> dict[str, Any]:
        state = state_of(item)
        if state is not None and state.original is not None and not state.partial:
            return state.original
        if item.id is None:
            raise DocumentValidationError(
                f"custom field {item.name!r} has no id: add() it first", field="id"
            )
        current = self.get(item.id, soft_deletes="all", cache=False)
        if current is None:
            raise DocumentNotFoundError(item.id, index=self.spec.alias)
        state = state_of(current)
        assert state is not None and state.original is not None
        return state.original

    @limited(_defaults)
    def remove(
        self,
        docs: CustomFieldDefinition | str | Iterable[CustomFieldDefinition | str],
        **options: Unpack[OptionKeywords],
    ) -> None:
        """Hard-delete definitions (documents or ids): their names and slots are free.

        A freed slot is reused by the tenant's next field of that type, so its values are
        cleared from the tenant's documents first, while the slot is still held: an active
        definition is soft-deleted (saved), then every document of the tenant holding the
        slot gets its ``idx`` recomputed (:meth:`_clear_slots`: conditional per-document
        updates), then the definition is deleted. A failure on the way leaves the
        definition soft-deleted (the slot held): removing it again finishes the job."""
        items = [docs] if isinstance(docs, str | CustomFieldDefinition) else list(docs)
        definitions = [self._definition(item) for item in items]
        active = [d for d in definitions if d is not None and not d.is_deleted]
        for definition in active:
            definition.is_deleted = True
        if active:
            self.save(active)
        held: dict[str, set[str]] = {}
        for stored in definitions:
            if stored is not None:
                held.setdefault(stored.tenant_key, set()).add(stored.slot_name)
        for owner, keys in held.items():
            self._clear_slots(owner, keys)
        # the definitions as stored now (the soft delete changed their version)
        current = [d if d is not None else i for d, i in zip(definitions, items, strict=True)]
        tenants = {_tenant_of(item) for item in items}
        try:
            with definition_writes():
                super().remove(current, **options)
        finally:
            for tenant in tenants:
                self.invalidate(tenant)

    def _definition(self, item: Any) -> CustomFieldDefinition | None:
        """``item`` (a definition or an id) as stored now; ``None`` if it is not stored."""
        id: str | None = item.id if isinstance(item, CustomFieldDefinition) else str(item)
        if id is None:
            return None
        return self.get(id, soft_deletes="all", cache=False)

    def _clear_slots(self, tenant: str, keys: set[str]) -> int:
        """Recompute ``idx`` of ``tenant``'s documents that hold one of the slots ``keys``
        (their definitions no longer active, the values leave ``idx``); returns how many
        were updated."""
        holding = Q(
            "bool",
            should=[Q("exists", field=f"idx.{key}") for key in sorted(keys)],
            minimum_should_match=1,
        )
        return bring_up_to_date(self, tenant, "hard_delete", only=holding)

    @limited(_defaults)
    def remove_all(
        self, filter: str | Query | None = None, **options: Unpack[OptionKeywords]
    ) -> int:
        """Hard-delete the matching definitions of the entity type (the soft-delete mode
        applies to matching), as :meth:`remove` does (their slots cleared from the
        documents first); returns how many."""
        found = self._matching(filter, options.pop("soft_deletes", None))
        try:
            if found:
                self.remove(found, **options)
        finally:
            self.invalidate()
        return len(found)

    def _matching(self, filter: str | Query | None, soft_deletes: Any) -> list[Any]:
        """The definitions ``filter`` matches (of the entity type, ``soft_deletes`` mode)."""
        found: list[CustomFieldDefinition] = []
        self.batch_process(filter, found.extend, batch_size=_PAGE, soft_deletes=soft_deletes)
        return found

    @limited(_defaults)
    def remove_by_tenant(self, tenant: str, **options: Unpack[UntenantedOptionKeywords]) -> int:
        """Hard-delete every definition of ``tenant``, soft-deleted ones included (tenant
        offboarding: every name and slot is free, the slots cleared from the tenant's
        documents first); returns how many."""
        _check_tenant(tenant)
        options.setdefault("soft_deletes", "all")
        return self.remove_all(Q("term", tenant_key=tenant), **options)

    @limited(_defaults)
    def patch(
        self, ids: str | Iterable[str], patch: Patch, **options: Unpack[OptionKeywords]
    ) -> None:
        """Apply ``patch`` to the definitions ``ids`` and :meth:`save` them (so immutables
        and names are checked). A ScriptPatch cannot be checked: ``TypeError``."""
        wanted = [ids] if isinstance(ids, str) else list(ids)
        docs = []
        for id in wanted:
            doc = self.get(id, soft_deletes="all", cache=False)
            if doc is None:
                raise DocumentNotFoundError(id, index=self.spec.alias)
            docs.append(doc)
        changed = [d for d in docs if apply_patch(d, patch)]
        if changed:
            self.save(changed, **options)

    @limited(_defaults)
    def patch_all(
        self, filter: str | Query | None, patch: Patch, **options: Unpack[OptionKeywords]
    ) -> int:
        """:meth:`patch` every matching definition; returns how many changed."""
        found = self._matching(filter, options.pop("soft_deletes", None))
        changed = [d for d in found if apply_patch(d, patch)]
        if changed:
            self.save(changed, **options)
        return len(changed)

    # -- convenience (the CLI's verbs) -------------------------------------------------------

    def field(self, tenant: str, name: str) -> CustomFieldDefinition:
        """The active definition ``name`` of ``tenant``; DocumentNotFoundError if none."""
        found = self.get_field_mapping(tenant).get(check_name(name, new=False).lower())
        if found is None:
            raise DocumentNotFoundError(
                name,
                index=self.spec.alias,
                what=f"{self.entity_type} tenant {tenant!r} has no custom field {name!r}",
            )
        return found

    def rename_field(self, tenant: str, name: str, new_name: str) -> CustomFieldDefinition:
        """Rename ``tenant``'s field ``name`` to ``new_name`` (same slot: no reindex)."""
        definition = self.field(tenant, name)
        definition.name = check_name(new_name)
        return self.save(definition)

    def remove_field(self, tenant: str, name: str, *, hard: bool = False) -> None:
        """Soft-delete ``tenant``'s field ``name`` (the name is free, the slot kept), or
        hard-delete it (``hard=True``: both free)."""
        definition = self.field(tenant, name)
        if hard:
            self.remove(definition)
        else:
            definition.is_deleted = True
            self.save(definition)

    def rebuild_idx(self, tenant: str | None = None, *, batch_size: int = 500) -> int:
        """Recompute ``idx`` of every stored document of the entity type (of ``tenant``
        only, if given), writing only those whose ``idx`` changed (conditional partial
        updates; see :func:`esmapper.custom_fields.indexing.reconcile`). For after a
        reindex script that changed ``custom_fields``, or after a hard-deleted slot was
        reused. Reports to :attr:`progress`. Returns the number of documents updated."""
        return bring_up_to_date(self, tenant, "rebuild", batch_size=batch_size)


def _tenant_of(item: Any) -> str | None:
    if isinstance(item, CustomFieldDefinition):
        return item.tenant_key
    try:
        return decompose_id(str(item))[1]
    except (ValueError, IndexError):
        return None
