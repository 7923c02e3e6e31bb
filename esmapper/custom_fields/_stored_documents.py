"""Bringing a tenant's stored documents up to date after a definition change.

``idx`` is recomputed on every write of a document (:mod:`esmapper.custom_fields.indexing`),
so a definition change reaches a document on its next write by itself. The definitions'
repository does not wait for that: after a change, every stored document of the tenant is
read and written again where its recompute differs (:func:`bring_up_to_date`: a point in
time over the tenant's documents, soft-deleted ones included, then
:func:`~esmapper.custom_fields.indexing.reconciled` per batch: a partial update
conditioned on the version read, so a concurrent write wins and recomputed ``idx`` itself).
The changes that do it, all in :mod:`esmapper.custom_fields.repository` (a rename writes
no document: the slot keeps its values, which answer the new name at once, and a value
stored under the former name moves on the document's next write):

- a field added (or added again with another type after a soft delete: a retype): values
  already stored under its name are indexed (``reason="add"``);
- a name that a renamed field used to have, taken by another field (added, renamed to it
  or restored): first the values still stored under it move to the renamed field, then the
  name is dropped from that field's ``former_names`` (:func:`release_former_names`,
  ``"release"``), so the new field never takes them;
- a hard delete: the slot's values leave ``idx`` before the slot can be reused
  (``"hard_delete"``, only the documents holding the slot);
- ``rebuild_idx()`` (``"rebuild"``).

Progress: the repository's ``progress`` callback (``fields.progress = callable``) gets a
:class:`StoredDocumentsProgress` after the count and after every batch; a line is logged at
INFO per batch of a pass over more than one batch.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import attrs
from elasticsearch.dsl import Q
from elasticsearch.dsl.query import Query

from esmapper.custom_fields.definition import CustomFieldDefinition
from esmapper.custom_fields.indexing import reconciled, stored_hit
from esmapper.custom_fields.search import tenant_clause

if TYPE_CHECKING:
    from esmapper.custom_fields.repository import CustomFieldRepository
    from esmapper.options import Options
    from esmapper.repository import Repository

__all__ = ["StoredDocumentsProgress", "bring_up_to_date", "release_former_names"]

log = logging.getLogger("esmapper.custom_fields")

BATCH = 500


@attrs.frozen(slots=True)
class StoredDocumentsProgress:
    """A pass over the stored documents of ``entity_type`` (of ``tenant``; ``None``: every
    tenant) after a definition change (``reason``: ``add``, ``release``, ``hard_delete``,
    ``rebuild``): ``done`` of ``total`` documents read
    (``total`` counted when the pass began), ``updated`` of them written."""

    entity_type: str
    tenant: str | None
    reason: str
    done: int
    total: int
    updated: int


def bring_up_to_date(
    repo: CustomFieldRepository,
    tenant: str | None,
    reason: str,
    *,
    only: Query | None = None,
    batch_size: int = BATCH,
) -> int:
    """Recompute ``idx`` (and move renamed fields' values) of the stored documents of
    ``tenant`` (every tenant when ``None``; ``only``: a narrower filter), writing those
    whose result differs; returns how many were written. Sends a count, then a point in
    time and one search per batch (``batch_process``) and per batch one ``_bulk`` of
    conditional partial updates (``refresh``: the next pass sees them)."""
    parts: list[Any] = []
    clause = tenant_clause(repo.entity_info, tenant)
    if clause is not None:
        parts.append(Q(clause))
    if only is not None:
        parts.append(only)
    filter = None if not parts else parts[0] if len(parts) == 1 else Q("bool", filter=parts)
    entities: Repository[Any] = repo.services.repository(repo.entity)
    # this count decides whether the documents are rewritten: never a partial one
    total = entities.count(
        filter, soft_deletes="all", consistency="immediate", partial_results=False
    )
    figures = StoredDocumentsProgress(repo.entity_type, tenant, reason, 0, total, 0)

    def report() -> None:  # to the repository's progress callback, if any
        callback: Callable[[StoredDocumentsProgress], object] | None = repo.progress
        if callback is not None:
            callback(figures)

    report()
    if total == 0:
        return 0

    def batch(docs: list[Any]) -> None:
        nonlocal figures
        hits = [stored_hit(doc) for doc in docs]
        outcomes = reconciled(repo.services, repo.entity_info, hits, refresh=True)
        updated = figures.updated + sum(1 for o in outcomes if o.ok)
        figures = attrs.evolve(figures, done=figures.done + len(docs), updated=updated)
        if total > BATCH:
            log.info(
                "%s custom fields (%s, tenant %r): %d of %d documents read, %d updated",
                repo.entity_type,
                reason,
                tenant,
                figures.done,
                total,
                figures.updated,
            )
        report()

    entities.batch_process(
        filter, batch, batch_size=batch_size, soft_deletes="all", consistency="immediate"
    )
    return figures.updated


def release_former_names(
    repo: CustomFieldRepository,
    tenant: str,
    names: Iterable[str],
    options: Options,
    *,
    saving: Iterable[CustomFieldDefinition] = (),
) -> None:
    """Before a field takes one of ``names``: where another active field of ``tenant``
    (not one of ``saving``) was called so before a rename, move the values stored under
    that name to it (a pass over the tenant's documents), then drop the name from its
    ``former_names`` (a save). Sends one search of the definitions and nothing more when
    no name is a former one."""
    wanted = {name.lower() for name in names}
    if not wanted:
        return
    skip = {d.id for d in saving}
    fields = repo.tenant_fields(tenant, max_age=0)
    holders = {
        lower: slot
        for lower, slot in fields.former.items()
        if lower in wanted and slot.definition.id not in skip
    }
    if not holders:
        return
    bring_up_to_date(repo, tenant, "release")
    changed: dict[str, CustomFieldDefinition] = {}
    for lower, slot in holders.items():
        key = slot.definition.id or ""
        definition = changed.get(key) or CustomFieldDefinition.from_hit(stored_hit(slot.definition))
        definition.former_names = [n for n in definition.former_names if n.lower() != lower]
        changed[key] = definition
    try:
        repo._send("save", list(changed.values()), options)
    finally:
        repo.invalidate(tenant)
