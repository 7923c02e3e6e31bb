"""A custom field's name, fenced: one create-only claim document per (entity type, tenant,
lower-cased name).

Names are decided under the tenant lock
(:class:`esmapper.custom_fields.slots.TenantLockOptions`), a lease: a holder paused past
it (a stopped process, a long GC pause) may resume after another process took the lock
over and added the same name. What the holder checked under the lock is then stale, so
the name's creation is conditioned on the server's state too: the definition holding a
name claims it with a create-only document
``customfield-name:<entity>:<tenant>:<lower-cased name>`` in the locks index
(``<prefix>esmapper-locks``), holding ``{"definition": <definition id>}``.

- :meth:`NameClaims.claim` creates it (``op_type=create``). A 409 reads the claim: when it
  names a definition that is live (stored, not soft-deleted, holding that name) the name
  is taken and that definition's id is returned; a stale claim (its definition removed,
  soft-deleted or renamed since, or a writer that died before releasing it) is taken over
  with a write conditioned on the stale claim's ``if_seq_no``/``if_primary_term``, so two
  claimants cannot both win.
- :meth:`NameClaims.release` deletes a claim when its definition gives the name up (a
  rename's former name, a soft or hard delete), conditioned on the version read and only
  while it names that definition. A release that fails leaves a stale claim, which the
  next claim of that name takes over: harmless.

A lost answer is read back (``GET``): the claim naming our definition means it was applied.
Definitions stored before claims existed hold no claim; the checks made under the tenant
lock still cover them.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Final

from elasticsearch import ConflictError, NotFoundError, TransportError

from esmapper._transport import is_unknown_outcome, once
from esmapper.custom_fields.definition import CustomFieldDefinition
from esmapper.errors import DocumentError, DocumentValidationError
from esmapper.ids import compose_id
from esmapper.locks import LOCK_INDEX

if TYPE_CHECKING:
    from esmapper._context import Context
    from esmapper.custom_fields._field_mappings import FieldMappings
    from esmapper.custom_fields.repository import CustomFieldRepository

__all__ = ["CLAIM_PREFIX", "NameClaims", "check_free", "lost_name"]

log = logging.getLogger("esmapper.custom_fields")

CLAIM_PREFIX: Final = "customfield-name:"
_ATTEMPTS: Final = 3


class NameClaims:
    """The name claims of one entity type (see the module docstring)."""

    def __init__(self, ctx: Context, entity_type: str) -> None:
        self.ctx = ctx
        self.index = f"{ctx.index_prefix}{LOCK_INDEX}"
        self.entity_type = entity_type

    def live(self, definition_id: str, lower: str) -> bool:
        """Whether the definition ``definition_id`` is stored, active and named ``lower``
        (case-insensitively; a real-time read): a claim naming it is live."""
        repo = self.ctx.repository(CustomFieldDefinition)
        found = repo.get(definition_id, soft_deletes="all", cache=False)
        return found is not None and not found.is_deleted and found.name.lower() == lower

    def claim_id(self, tenant: str, name: str) -> str:
        """The id of the claim of ``name`` (lower-cased) for ``tenant``."""
        return compose_id(self.entity_type, tenant, name.lower(), prefix=CLAIM_PREFIX)

    def _read(self, claim: str) -> dict[str, Any] | None:
        try:
            return dict(self.ctx.client.get(index=self.index, id=claim).body)
        except NotFoundError:
            return None

    @staticmethod
    def _holder(hit: dict[str, Any] | None) -> str | None:
        if hit is None:
            return None
        holder = (hit.get("_source") or {}).get("definition")
        return None if holder is None else str(holder)

    def claim(self, tenant: str, name: str, definition: str) -> str | None:
        """Claim ``name`` for the definition ``definition``; ``None`` when it is ours now
        (created, taken over from a stale claim, or already ours), else the id of the live
        definition holding it. Sends a create-only ``PUT`` of the claim, and on a 409 a
        ``GET`` of it, a real-time read of its definition and a conditional take-over."""
        claim, lower = self.claim_id(tenant, name), name.lower()
        body = {"definition": definition}
        for _ in range(_ATTEMPTS):
            try:
                once(self.ctx.client).index(
                    index=self.index, id=claim, document=body, op_type="create"
                )
                return None
            except ConflictError:
                pass
            except TransportError as exc:
                if not is_unknown_outcome(exc):
                    raise
            current = self._read(claim)
            holder = self._holder(current)
            if current is None:
                continue  # released meanwhile (or a lost create not applied): again
            if holder == definition:
                return None
            if holder is not None and self.live(holder, lower):
                return holder
            if self._take_over(claim, current, body):
                return None
        raise DocumentError(
            f"claiming custom field name {name!r} failed: its claim kept changing", ids=[claim]
        )

    def _take_over(self, claim: str, stale: dict[str, Any], body: dict[str, Any]) -> bool:
        """Replace the stale claim ``stale`` (conditioned on its version); whether it is
        ours now."""
        try:
            once(self.ctx.client).index(
                index=self.index,
                id=claim,
                document=body,
                if_seq_no=stale["_seq_no"],
                if_primary_term=stale["_primary_term"],
            )
            log.info("custom field name claim %s taken over from %s", claim, self._holder(stale))
            return True
        except (ConflictError, NotFoundError):
            return False
        except TransportError as exc:
            if not is_unknown_outcome(exc):
                raise
            return bool(self._holder(self._read(claim)) == body["definition"])

    def claim_all(
        self, tenant: str, items: list[CustomFieldDefinition]
    ) -> list[CustomFieldDefinition]:
        """Claim the names ``items`` take (renamed or restored); a name a live definition
        of another id holds (taken while this process's tenant lock had lapsed) releases
        what was claimed and raises DocumentValidationError. Returns the items claimed."""
        claimed: list[CustomFieldDefinition] = []
        for item in items:
            holder = self.claim(tenant, item.name, str(item.id))
            if holder is not None:
                for done in claimed:
                    self.release(tenant, done.name, str(done.id))
                raise _name_taken(item, tenant, holder)
            claimed.append(item)
        return claimed

    def release(self, tenant: str, name: str, definition: str) -> None:
        """Give ``name`` up for ``definition``: delete its claim while it names that
        definition (``GET``, then a ``DELETE`` conditioned on the version read). Failures
        are logged: a claim left behind is stale and taken over by the next claim."""
        claim = self.claim_id(tenant, name)
        try:
            current = self._read(claim)
            if current is None or self._holder(current) != definition:
                return
            self.ctx.client.options(ignore_status=(404, 409)).delete(
                index=self.index,
                id=claim,
                if_seq_no=current["_seq_no"],
                if_primary_term=current["_primary_term"],
            )
        except Exception:
            log.warning("could not release custom field name claim %s", claim, exc_info=True)


def lost_name(
    repo: CustomFieldRepository, tenant: str, item: CustomFieldDefinition, holder: str
) -> CustomFieldDefinition:
    """``item`` was created but its name is held by the live definition ``holder`` (added by
    another process while this one's tenant lock had lapsed): ``item`` is removed (hard
    delete, its slot cleared first) and ``holder`` returned when its type matches;
    DocumentValidationError otherwise."""
    repo.remove(item)
    existing = repo.get(holder, soft_deletes="all", cache=False)
    if existing is None or existing.index_type != item.index_type:
        kind = "another type" if existing is not None else "a definition removed since"
        raise DocumentValidationError(
            f"custom field {item.name!r} of tenant {tenant!r} was added meanwhile by "
            f"another process with {kind}; not {item.index_type!r}",
            field="index_type",
            ids=[holder],
        )
    return existing


def _name_taken(
    item: CustomFieldDefinition, tenant: str, other: str | None
) -> DocumentValidationError:
    return DocumentValidationError(
        f"custom field name {item.name!r} is already used by another active "
        f"field of tenant {tenant!r}",
        field="name",
        ids=[item.id, other],
    )


def check_free(mappings: FieldMappings, tenant: str, saving: list[CustomFieldDefinition]) -> None:
    """Under the tenant lock: refuse a name another active definition of ``tenant`` holds
    (checked after the batch's own changes) with DocumentValidationError; a refreshed
    search of the tenant's active definitions."""
    saving_ids = {i.id for i in saving}
    active: dict[str, str | None] = {}
    for hit in mappings.load(tenant, refresh=True):
        if hit["_id"] not in saving_ids:
            source = hit["_source"] or {}
            active[str(source.get("name", "")).lower()] = hit["_id"]
    for item in saving:
        if item.is_deleted:
            continue
        other = active.get(item.name.lower())
        if other is not None and other != item.id:
            raise _name_taken(item, tenant, other)
        active[item.name.lower()] = item.id
