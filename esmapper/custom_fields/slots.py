"""Slot allocation: the lowest free slot from 1 per (entity type, tenant, index type), race
free between threads and processes.

A definition's id is its slot (``<entity>:<tenant>:<type>:<slot>``, composed), and it is
created with ``op_type=create``: creating the definition reserves the slot, and a conflict
(409) means another writer took it first, so the next free slot is tried. No lock is
needed for slots; a soft-deleted definition still holds its slot (its document exists), a
hard delete frees it (its document is gone). A create whose answer was lost is read back
by the write pipeline (:func:`esmapper._outcomes.send`): our source there means we hold
the slot; anything else is a conflict, and the next slot is tried.

Names are another matter: "same name returns the existing definition" needs one decision
per (entity type, tenant) at a time, so adds, renames and restores run under the lock
``customfield:<entity>:<tenant>`` (``TenantLockOptions._tenant_lock``: :mod:`esmapper.locks`,
create-only lock document, a lease of :data:`LOCK_TTL`, 30 s, unless the repository's
``lock_ttl`` says otherwise; a killed holder blocks that tenant's name changes for at most
that long). The slot
reservation stays create-only under it, so even a holder whose lock expired cannot give
one slot twice, and a name is claimed create-only too (:mod:`esmapper.custom_fields._names`),
so a holder paused past its lease cannot add a second active field of a name another
process added meanwhile.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from esmapper.custom_fields.definition import CustomFieldDefinition, definition_id
from esmapper.errors import BulkWriteError, DocumentError, DuplicateDocumentError
from esmapper.ids import compose_id
from esmapper.locks import LockProvider, check_duration

if TYPE_CHECKING:
    from esmapper._services import Services

__all__ = [
    "LOCK_TTL",
    "LOCK_WAIT",
    "TenantLockOptions",
    "allocate",
]

LOCK_TTL = _dt.timedelta(seconds=30)
LOCK_WAIT = _dt.timedelta(seconds=60)
_LOCK_POLL = 0.02
#: create rounds before giving up (each round retries only the slots others took)
MAX_ROUNDS = 50


def allocate(
    create: Any,
    entity_type: str,
    tenant: str,
    new: Sequence[CustomFieldDefinition],
    existing: Iterable[CustomFieldDefinition],
) -> None:
    """Give each of ``new`` the lowest slot free of its type (``existing``: every stored
    definition of the tenant, soft-deleted ones included) and create them with
    ``create(definitions)`` (the write pipeline's ``add``: create-only). A definition whose
    create conflicts gets the next free slot, until all are created. Raises the pipeline's
    error for any other failure, DocumentError after :data:`MAX_ROUNDS` rounds."""
    used: dict[str, set[int]] = {}
    for definition in existing:
        used.setdefault(definition.index_type, set()).add(definition.index_slot)
    pending = list(new)
    for _round in range(MAX_ROUNDS):
        for definition in pending:
            taken = used.setdefault(definition.index_type, set())
            slot = 1  # the lowest free from 1
            while slot in taken:
                slot += 1
            taken.add(slot)
            object.__setattr__(definition, "index_slot", slot)
            object.__setattr__(
                definition, "id", definition_id(entity_type, tenant, definition.index_type, slot)
            )
        try:
            create(pending)
            return
        except (DuplicateDocumentError, BulkWriteError) as exc:
            conflicts = [f for f in exc.failures if f.status == 409]
            if len(conflicts) != len(exc.failures):
                raise
            lost = {id(f.document) for f in conflicts}
            pending = [d for d in pending if id(d) in lost]
    raise DocumentError(
        f"could not reserve a custom-field slot for {entity_type} tenant {tenant!r} after "
        f"{MAX_ROUNDS} attempts (every slot tried was taken concurrently)",
        ids=[d.id for d in pending],
    )


class TenantLockOptions:
    """The tenant lock's options of a custom-field repository: ``lock_ttl`` (the lease,
    default :data:`LOCK_TTL`) and ``lock_wait`` (default :data:`LOCK_WAIT`), checked when
    set; :meth:`_tenant_lock` holds the lock with them."""

    services: Services
    entity_type: str
    _lock_ttl: _dt.timedelta = LOCK_TTL
    _lock_wait: _dt.timedelta = LOCK_WAIT

    @property
    def lock_ttl(self) -> _dt.timedelta:
        """The lease of the tenant lock names are decided under (default 30 s, renewed by a
        heartbeat every third of it); a killed holder blocks the tenant's name changes this
        long. Setting a value that is not a ``timedelta`` above zero raises ``ValueError``
        (``TypeError``)."""
        return self._lock_ttl

    @lock_ttl.setter
    def lock_ttl(self, value: _dt.timedelta) -> None:
        self._lock_ttl = check_duration("lock_ttl", value)

    @property
    def lock_wait(self) -> _dt.timedelta:
        """How long a name change waits for the tenant lock (default 60 s) before
        LockError; setting a negative value raises ``ValueError``."""
        return self._lock_wait

    @lock_wait.setter
    def lock_wait(self, value: _dt.timedelta) -> None:
        self._lock_wait = check_duration("lock_wait", value, zero=True)

    @contextlib.contextmanager
    def _tenant_lock(self, tenant: str) -> Iterator[None]:
        """Hold ``customfield:<entity>:<tenant>`` for a lease of :attr:`lock_ttl` (renewed
        by a heartbeat, see the module docstring); raises LockError when another holder
        keeps it longer than :attr:`lock_wait`."""
        ctx = self.services
        provider = LockProvider(ctx.client, index_prefix=ctx.index_prefix, clock=ctx.clock)
        name = "customfield:" + compose_id(self.entity_type, tenant)
        with provider.acquire(name, self._lock_ttl, wait=self._lock_wait, poll=_LOCK_POLL):
            yield
