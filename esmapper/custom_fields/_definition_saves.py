"""Saving the definitions custom-field types modified while documents were processed.

A type's ``process_value`` gets a working copy of the definition (the cached ones are
shared, read-only) and may ask for it to be saved (``definition_modified``):
:mod:`esmapper.custom_fields.indexing` records it in a :class:`Modified` per group of
documents, and the write pipeline calls :meth:`DefinitionSaves.save` after the documents'
write. Each save sends the definition's save through its repository (refreshed), retrying
version conflicts by re-reading it and replaying the documents' ``process_value`` on the
fresh copy; a failure there is a logged warning, never a failed document write. The same
call rechecks the mapping each group was computed with and, when a definition changed
while the write was in flight, brings the written documents' ``idx`` up to date
(:func:`esmapper.custom_fields.indexing.recheck_written`).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any

from esmapper.custom_fields._access import custom_access, definitions
from esmapper.custom_fields.catalog import FieldSlot, TenantFields
from esmapper.custom_fields.definition import CustomFieldDefinition
from esmapper.errors import VersionConflictError
from esmapper.model.state import stored_hit

if TYPE_CHECKING:
    from esmapper._context import Context
    from esmapper.model.info import ModelInfo

__all__ = ["DEFINITION_SAVE_ROUNDS", "DefinitionSaves", "Modified"]

log = logging.getLogger("esmapper.custom_fields")

#: save rounds of a definition a type modified (each conflict re-reads and replays)
DEFINITION_SAVE_ROUNDS = 50


class Modified:
    """The definitions types modified while one group of documents (one model, one tenant)
    was processed: working copies of the cached ones, and which documents (with their value
    key) modified each, to replay them on a fresh copy after a conflict."""

    __slots__ = ("changed", "cls", "copies")

    def __init__(self, cls: type) -> None:
        self.cls = cls
        self.copies: dict[str, CustomFieldDefinition] = {}
        self.changed: dict[str, tuple[FieldSlot, list[tuple[Any, str | None]]]] = {}

    def working(self, slot: FieldSlot) -> CustomFieldDefinition:
        copy = self.copies.get(slot.key)
        if copy is None:
            copy = CustomFieldDefinition.from_hit(stored_hit(slot.definition))
            self.copies[slot.key] = copy
        return copy

    def record(self, slot: FieldSlot, doc: Any, key: str | None) -> None:
        self.changed.setdefault(slot.key, (slot, []))[1].append((doc, key))


class DefinitionSaves:
    """Definitions ``process_value`` asked to save (``definition_modified``). The
    write pipeline saves them after the documents' write (:meth:`save`): each on the
    working copy the documents were processed with; a version conflict (another writer
    saved it meanwhile) re-reads it and replays the documents' ``process_value`` on the
    fresh copy, up to :data:`DEFINITION_SAVE_ROUNDS` times. A definition that cannot be
    saved is logged (a warning), never a failed document write."""

    __slots__ = ("computed", "ctx", "groups", "recheck")

    def __init__(self, ctx: Context, recheck: Callable[..., None]) -> None:
        self.ctx = ctx
        #: brings the ``idx`` of written documents up to date after a definition changed
        #: (:func:`esmapper.custom_fields.indexing.recheck_written`)
        self.recheck = recheck
        self.groups: list[Modified] = []
        #: (model, mapping used, the repository's change count before, documents) of
        #: each group whose idx was computed: rechecked after the write (:meth:`save`)
        self.computed: list[tuple[ModelInfo, TenantFields, int, list[Any]]] = []

    def save(self, written: Collection[int] | None = None, *, refresh: Any = None) -> None:
        """After the documents' write: save the modified definitions (``written``: the
        ``id()`` of the documents whose write succeeded, the others' modifications are
        dropped; all when ``None``), then recheck the mapping each group was computed
        with. A definition changed while the write was in flight (a field added, renamed,
        retyped, removed, its slot freed and reused) leaves documents indexed by the old
        one, which no later write would correct: those documents are read back and their
        ``idx`` updated (:func:`reconcile`, conditioned on the version read; ``refresh``
        as the write's). Sends nothing when no definition changed."""
        computed, self.computed = self.computed, []
        try:
            # first: the definitions this write saves below must not count as a change
            for info, fields, changes, docs in computed:
                done = [d for d in docs if written is None or id(d) in written]
                if done and self._changed_since(info, fields, changes):
                    self.recheck(self.ctx, info, fields.tenant, done, refresh)
        finally:
            self._save_definitions(written)

    def _changed_since(self, info: ModelInfo, fields: TenantFields, changes: int) -> bool:
        """Whether the tenant's definitions may have changed since ``fields`` was read (a
        failure to tell is logged and counts as no change: the write itself succeeded)."""
        try:
            return definitions(self.ctx, info.cls).changed_since(fields, changes)
        except Exception:
            log.warning(
                "%s: could not recheck the custom-field mapping of tenant %r after a write",
                info.name,
                fields.tenant,
                exc_info=True,
            )
            return False

    def _save_definitions(self, written: Collection[int] | None) -> None:
        for group in self.groups:
            for key, (slot, docs) in group.changed.items():
                done = [d for d in docs if written is None or id(d[0]) in written]
                if done:
                    # the working copy holds what failed writes did too: replay the others
                    replay = len(done) != len(docs)
                    _save_definition(
                        self.ctx, group.cls, slot, group.copies[key], done, replay=replay
                    )
        self.groups = []


def _save_definition(
    ctx: Context,
    cls: type,
    slot: FieldSlot,
    definition: CustomFieldDefinition,
    docs: list[tuple[Any, str | None]],
    *,
    replay: bool,
) -> None:
    repo = definitions(ctx, cls)
    for _round in range(DEFINITION_SAVE_ROUNDS):
        try:
            if replay:
                fresh = _replayed(repo, slot, definition, docs)
                if fresh is None:
                    return  # deleted meanwhile: nothing to save
                definition = fresh
            repo.save(definition)
            return
        except VersionConflictError:
            replay = True
        except Exception:
            log.warning(
                "custom field %r (type %r): the definition its type modified could not be "
                "saved; the documents were written",
                slot.definition.name,
                slot.definition.index_type,
                exc_info=True,
            )
            return
        time.sleep(random.uniform(0, 0.01 * (_round + 1)))
    log.warning(
        "custom field %r (type %r): the definition its type modified kept changing "
        "concurrently (%d rounds) and was not saved; the documents were written",
        slot.definition.name,
        slot.definition.index_type,
        DEFINITION_SAVE_ROUNDS,
    )


def _replayed(
    repo: Any,
    slot: FieldSlot,
    definition: CustomFieldDefinition,
    docs: list[tuple[Any, str | None]],
) -> CustomFieldDefinition | None:
    """A fresh read of ``definition`` with the documents' ``process_value`` run on it again
    (their results are not used: only what they do to the definition)."""
    fresh: CustomFieldDefinition | None = repo.get(definition.id, soft_deletes="all", cache=False)
    if fresh is None or fresh.is_deleted:
        return None
    for doc, key in docs:
        values = custom_access(doc).values(doc) or {}
        value = values.get(key) if key is not None else None
        try:
            slot.field_type.process_value(doc, value, fresh)
        except Exception:
            log.debug("process_value raised while replayed on a fresh definition", exc_info=True)
    return fresh
