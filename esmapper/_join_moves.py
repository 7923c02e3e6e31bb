"""Moving a join child to another parent: the ``prepare``, ``shape`` and ``finish`` work of
:class:`esmapper._join.ChildJoin` for a save whose document names another parent than its
stored copy.

A child is stored on its parent's shard (routed by the parent id). Its new copy is written
first, routed by the new parent, then the old copy is deleted on the old parent's shard.
Whether the two routings land on one shard is Elasticsearch's hash of each, so
:func:`prepare_moves` reads, in real time before anything is written, the stored copy at
the old routing and the id at the new one (two ``_mget``, only for the batches that move a
child):

- the same copy found at both (one shard): the save replaces it in place, with its own
  condition (a ``Versioned`` model's ``if_seq_no`` of the copy it loaded: atomic), and no
  delete follows;
- otherwise (two shards) the new copy's write carries no condition of the old copy's:
  on the new parent's shard there is no such document, and a conditional write there is a
  version conflict (:func:`shape_moves`; a stray copy found there, left by an interrupted
  move, is the one the write is conditioned on and replaces). The old copy's condition goes
  to its delete (:func:`delete_old_copies`).

The old copy read again is the optimistic check of a ``Versioned`` model's save (a version
conflict, raised before anything is sent, when the copy changed since it was loaded; a
model without versions deletes what is stored now), so the race with another writer of the
same child is narrowed to the moment between the read and the delete; a delete refused
then (409) is read back: a copy still there is logged (two copies, one under each parent).
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs

from esmapper.errors import VersionConflictError
from esmapper.ids import Id
from esmapper.indexes.reads import get_documents
from esmapper.options import refresh_param

if TYPE_CHECKING:
    from esmapper._context import Context
    from esmapper._features import WriteCall
    from esmapper._pending import PendingWrite
    from esmapper.bulk import BulkAction
    from esmapper.indexes.spec import IndexSpec

__all__ = ["Move", "delete_old_copies", "prepare_moves", "shape_moves"]

log = logging.getLogger("esmapper.join")


@attrs.define(eq=False)
class Move:
    """One save moving a stored child: its ``pending`` write, the ``old`` parent id (the
    old copy's routing), the old copy's ``seq_no``/``primary_term`` and ``index``; whether
    the new routing lands on the old copy's shard (``in_place``), else the numbers of a
    stray copy found on the new parent's shard (``stray``, ``None``: none)."""

    pending: PendingWrite
    old: str
    seq_no: int
    primary_term: int
    index: str | None
    in_place: bool = False
    stray: tuple[int, int] | None = None


#: id(pending) -> its Move, while the write that prepared it runs (``shape`` is given the
#: actions only; a Move holds its pending, so the id is not reused while it is listed)
_moving: weakref.WeakValueDictionary[int, Move] = weakref.WeakValueDictionary()
_lock = threading.Lock()


def prepare_moves(
    call: WriteCall,
    spec: IndexSpec,
    found: Sequence[tuple[PendingWrite, str, tuple[int, int, str | None]]],
    routing_of_write: Any,
) -> list[Move]:
    """The :class:`Move` of each ``(pending, old parent, (seq_no, primary_term, index))``
    of ``found``, read as the module docstring says (``POST /<alias>/_mget`` at the old
    routings, then at the new ones). Raises VersionConflictError (nothing sent yet) when
    the old copy of a ``Versioned`` model's save changed or went since it was loaded."""
    if not found:
        return []
    client = call.ctx.client
    plain = [str.__str__(p.doc.id) for p, _, _ in found]
    pairs = list(zip(plain, found, strict=True))
    olds = get_documents(client, spec, [Id(key, routing=old) for key, (_, old, _) in pairs])
    news = get_documents(
        client, spec, [Id(key, routing=routing_of_write(p)) for key, (p, _, _) in pairs]
    )
    at_old = {str(h["_id"]): h for h in olds}
    at_new = {str(h["_id"]): h for h in news}
    moves: list[Move] = []
    for key, (pending, old, (read_seq_no, read_term, index)) in pairs:
        info = pending.info
        checked = info.versioned and call.options.version_check
        stored = at_old.get(key)
        now = None if stored is None else (stored.get("_seq_no"), stored.get("_primary_term"))
        if now != (read_seq_no, read_term) and checked:
            raise VersionConflictError(
                f"version conflict moving {info.name} {key!r} from {old!r}: its stored copy "
                f"{'is gone' if now is None else 'changed'} since it was read",
                ids=[key],
            )
        if stored is None:  # gone meanwhile (a model without versions): nothing to delete
            continue
        move = Move(pending, old, int(stored["_seq_no"]), int(stored["_primary_term"]), index)
        here = at_new.get(key)
        if here is None:
            pass
        elif (here.get("_seq_no"), here.get("_primary_term"), here.get("_index")) == (
            move.seq_no,
            move.primary_term,
            stored.get("_index"),
        ):
            move.in_place = True  # one shard: the same copy at both routings
        else:
            move.stray = (int(here["_seq_no"]), int(here["_primary_term"]))
        moves.append(move)
    with _lock:
        for move in moves:
            _moving[id(move.pending)] = move
    return moves


def shape_moves(ctx: Context, actions: Sequence[BulkAction]) -> None:
    """The new copy's write of each move to another shard: conditioned on the stray copy
    found there, else on nothing, and sent to the write alias (a conditioned write goes to
    the fence alias of the index its version was read from; that version was the old
    copy's)."""
    if not _moving:
        return
    for action in actions:
        move = _moving.get(id(action.ref))
        if move is None or move.pending is not action.ref or move.in_place:
            continue
        if action.if_seq_no is None:  # an unconditional save: nothing of the old copy's
            continue
        spec = ctx.spec(move.pending.info.cls)
        if move.stray is None:
            action.if_seq_no = action.if_primary_term = None
            action.index = spec.write_target
        else:
            action.if_seq_no, action.if_primary_term = move.stray


def delete_old_copies(
    call: WriteCall, spec: IndexSpec, moves: Sequence[Move], confirmed: Sequence[PendingWrite]
) -> list[str]:
    """Delete the old copy of each move whose new copy is ``confirmed`` and went to
    another shard: one ``_bulk`` of ``delete`` actions routed by the old parent id and
    conditioned on the old copy's numbers; a refused one (409) is read back, and a copy
    still there logged, as is any other failure (the save is stored: never raised).
    Returns the ids deleted or tried (their cache entries are the caller's to drop)."""
    written = {id(p) for p in confirmed}
    chosen = [m for m in moves if id(m.pending) in written and not m.in_place]
    with _lock:
        for move in moves:
            if _moving.get(id(move.pending)) is move:
                del _moving[id(move.pending)]
    if not chosen:
        return []
    operations: list[dict[str, Any]] = []
    for move in chosen:
        target = spec.conditioned_target(spec.write_name(move.index), move.index)
        operations.append(
            {
                "delete": {
                    "_index": target,
                    "_id": str.__str__(move.pending.doc.id),
                    "routing": move.old,
                    "if_seq_no": move.seq_no,
                    "if_primary_term": move.primary_term,
                }
            }
        )
    ids = [str.__str__(m.pending.doc.id) for m in chosen]
    name = chosen[0].pending.info.name
    refresh = refresh_param(call.options.consistency)
    try:
        params: dict[str, Any] = {} if refresh is None else {"refresh": refresh}
        answer = call.ctx.client.bulk(operations=operations, **params).body
        refused: list[Move] = []
        for move, item in zip(chosen, answer.get("items") or (), strict=False):
            result: dict[str, Any] = next(iter(item.values()), {})
            status = result.get("status")
            if status == 409:
                refused.append(move)
            elif status not in (200, 404):
                log.warning(
                    "the old copy of %s %r was not deleted after its move: %s",
                    name,
                    result.get("_id"),
                    result.get("error"),
                )
        if refused:
            again = get_documents(
                call.ctx.client,
                spec,
                [Id(str.__str__(m.pending.doc.id), routing=m.old) for m in refused],
            )
            for hit in again:
                log.warning(
                    "the old copy of %s %r under %r changed after it was read and was not "
                    "deleted after its move: two copies are stored, one under each parent",
                    name,
                    hit.get("_id"),
                    hit.get("_routing"),
                )
    except Exception as exc:  # (the write is stored: its caller must not see a failure)
        log.warning("the old copies of %s %s were not deleted after their move: %s", name, ids, exc)
    return ids
