"""The fencing token of a reindex run: a marker alias on the index it builds.

The lock ``reindex:<alias>`` is a lease (:mod:`esmapper.locks`): a run paused past it (a
stopped process, a long GC pause, a frozen VM) may resume after another run took the lock
over, and a check made before a request says nothing about the moment the server acts on
it. So each step whose effect another run could not repair is made conditional on the
server's state, in the same request:

- :func:`claim`: once its target ``new`` is prepared, a run puts its own marker alias
  ``<new>.reindex-run-<token>`` on it, taking off every other run's marker in the same
  ``POST /_aliases`` (each ``remove`` with ``must_exist``: a marker that vanished meanwhile
  means a third run is at work, and the claim is refused). A run that takes the lock over
  therefore always leaves the earlier holder without its marker (its target is recreated or
  reclaimed).
- :func:`swap_conditions`: the run's alias swap carries ``remove`` of its marker with
  ``must_exist`` (next to ``remove`` of the alias from the old index, also ``must_exist``).
  ``POST /_aliases`` is atomic over its actions: a run whose marker is gone has its swap
  refused (404 ``aliases_not_found_exception``) and nothing moves.
- :func:`drop_target` (the rollback of a failed run) first takes its marker off ``new``
  (``must_exist``: refused when another run took ``new`` over), then deletes ``new`` with
  the ``remove_index`` alias action in a request conditioned on the model's write alias
  still naming the index it names now (``remove`` with ``must_exist`` and the same ``add``
  back, on that other index): a target some serving alias points at is never deleted, even
  by a run paused between its read and its request. The condition cannot sit on ``new``
  itself: Elasticsearch applies ``remove_index`` first and refuses every other action on
  the index it deleted.
- :func:`delete_unclaimed` (a non-empty leftover target a run recreates) deletes it the same
  way: the markers it carried when read taken off first (``must_exist``), then the delete
  conditioned on the write alias naming another index.
- Deletes of documents from ``new`` (ids the old index no longer has, stale copies) are
  sent through the marker alias (:meth:`Run.target`): once the marker is gone they answer
  404 ``index_not_found_exception`` (a delete never creates an index) and the run stops
  with :class:`~esmapper.errors.LockError`.

What is not fenced by the server is harmless when the lease is lost, or is checked
(:meth:`esmapper.locks.Lock.check`, no request) right before it is sent; see
docs/architecture.md ("Locks are leases").
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Collection
from typing import TYPE_CHECKING, Any, Final

from elasticsearch import ApiError, Elasticsearch, NotFoundError

from esmapper._transport import once, send_or_read_back
from esmapper.errors import IndexConfigurationError, LockError
from esmapper.indexes.timeseries import parse_partition

if TYPE_CHECKING:
    from esmapper.indexes.spec import IndexSpec

__all__ = [
    "MARKER_INFIX",
    "claim",
    "delete_unclaimed",
    "drop_target",
    "is_marker",
    "new_marker",
    "serving_aliases",
    "swap_conditions",
]

log = logging.getLogger("esmapper.indexes")

MARKER_INFIX: Final = ".reindex-run-"


def new_marker(new: str) -> str:
    """A fresh marker alias for a run building ``new``: ``<new>.reindex-run-<token>``."""
    return f"{new}{MARKER_INFIX}{uuid.uuid4().hex[:12]}"


def is_marker(new: str, alias: str) -> bool:
    """Whether ``alias`` is a run's marker on ``new``."""
    return alias.startswith(f"{new}{MARKER_INFIX}")


def serving_aliases(spec: IndexSpec, index: str) -> list[str]:
    """The aliases through which ``index`` serves ``spec``'s reads and writes: the model's
    alias and, for a partition, its dated alias."""
    partition = parse_partition(spec, index) if spec.is_time_series else None
    return [spec.alias] + ([spec.dated_alias(partition.start)] if partition else [])


def aliases_of(client: Elasticsearch, index: str) -> list[str]:
    """The aliases ``index`` carries (``GET /<index>/_alias``); none for a missing index."""
    try:
        body = client.indices.get_alias(index=index).body
    except NotFoundError:
        return []
    return sorted((body.get(index) or {}).get("aliases") or {})


def _refused(what: str, exc: ApiError | None, body: Any = None) -> LockError:
    reason = exc.message if exc is not None else (body or {}).get("action_results")
    return LockError(f"{what} was refused: another reindex run took the target over ({reason})")


def _aliases_request(client: Elasticsearch, actions: list[dict[str, Any]], what: str) -> None:
    """One ``POST /_aliases`` sent once; a refusal (404 of a ``must_exist``, or an answer
    listing errors) raises :class:`LockError`."""
    try:
        answer = once(client).indices.update_aliases(actions=actions)
    except NotFoundError as exc:
        raise _refused(what, exc) from exc
    if answer.body.get("errors"):
        raise _refused(what, None, answer.body)


def claim(client: Elasticsearch, new: str, marker: str) -> None:
    """Put ``marker`` on ``new`` and take every other run's marker off it, in one ``POST
    /_aliases`` (``GET /<new>/_alias`` first; each removal ``must_exist``). A lost answer is
    read back (ours there and the others gone: done; else sent once more). Raises
    :class:`LockError` when refused (a marker vanished meanwhile: another run claims it)."""
    others = [a for a in aliases_of(client, new) if is_marker(new, a) and a != marker]
    actions: list[dict[str, Any]] = [
        {"remove": {"index": new, "alias": a, "must_exist": True}} for a in others
    ]
    actions.append({"add": {"index": new, "alias": marker}})
    for alias in others:
        log.warning("%s: taking it over from the run that put %s on it", new, alias)

    def claimed() -> bool:
        now = aliases_of(client, new)
        return marker in now and not any(a in now for a in others)

    send_or_read_back(
        lambda: _aliases_request(client, actions, f"claiming {new}"),
        claimed,
        what=f"POST /_aliases (claim {new})",
    )


def swap_conditions(new: str, marker: str | None) -> list[dict[str, Any]]:
    """The actions that fence a run's alias swap: ``remove`` of its marker from ``new`` with
    ``must_exist`` (the swap is refused, atomically, when another run took ``new`` over).
    Put first in the swap's ``POST /_aliases``; none for a run without a marker."""
    if marker is None:
        return []
    return [{"remove": {"index": new, "alias": marker, "must_exist": True}}]


def _still_elsewhere(client: Elasticsearch, new: str, alias: str) -> list[dict[str, Any]] | None:
    """The conditions that prove, inside the request that deletes ``new``, that ``alias``
    (the model's write alias for ``new``'s place: the versioned alias, a partition's dated
    alias) still names the index(es) it names now, none of them ``new``: per holder a
    ``remove`` with ``must_exist`` and the same ``add`` back (the model's aliases carry no
    properties, so the pair changes nothing when it succeeds). If a swap moved ``alias``
    meanwhile, the ``remove`` finds nothing and the whole request is refused, ``new``
    included. ``None`` when ``alias`` names ``new`` already (``GET /_alias/<alias>``).

    The conditions name other indexes than ``new`` on purpose: Elasticsearch applies a
    request's ``remove_index`` actions first and then refuses any other action on an index
    it deleted, so no condition on ``new`` itself can go with its deletion."""
    try:
        holders = sorted(client.indices.get_alias(name=alias).body)
    except NotFoundError:
        holders = []
    if new in holders:
        return None
    actions: list[dict[str, Any]] = []
    for index in holders:
        actions.append({"remove": {"index": index, "alias": alias, "must_exist": True}})
        actions.append({"add": {"index": index, "alias": alias}})
    return actions


def _delete_fenced(client: Elasticsearch, new: str, alias: str, what: str) -> None:
    """``new`` deleted with ``remove_index`` in one ``POST /_aliases`` conditioned on
    ``alias`` not naming it (:func:`_still_elsewhere`), sent once; a lost answer is read
    back (gone: done). Raises :class:`LockError` when ``alias`` names ``new`` or moved
    meanwhile (refused: nothing deleted)."""
    conditions = _still_elsewhere(client, new, alias)
    if conditions is None:
        raise LockError(f"{what} was refused: {alias} points at {new}")
    actions = [*conditions, {"remove_index": {"index": new}}]
    send_or_read_back(
        lambda: _aliases_request(client, actions, what),
        lambda: not client.indices.exists(index=new),
        what=f"POST /_aliases (remove_index {new})",
    )


def _drop_markers(client: Elasticsearch, new: str, markers: list[str], what: str) -> None:
    """Take ``markers`` off ``new`` in one ``POST /_aliases`` (each ``must_exist``), sent
    once; a lost answer is read back (all gone: done). Raises :class:`LockError` when
    refused: another run claimed ``new`` meanwhile (its claim took them off)."""
    if not markers:
        return
    actions: list[dict[str, Any]] = [
        {"remove": {"index": new, "alias": m, "must_exist": True}} for m in markers
    ]
    send_or_read_back(
        lambda: _aliases_request(client, actions, what),
        lambda: not any(m in aliases_of(client, new) for m in markers),
        what=f"POST /_aliases (markers off {new})",
    )


def drop_target(
    client: Elasticsearch, new: str, marker: str | None, serving: Collection[str], alias: str
) -> bool:
    """The rollback's delete of ``new``: only while it carries ``marker`` and none of
    ``serving`` (read with ``GET /<new>/_alias`` just before). Two requests, each
    conditioned by the server: the run's marker taken off (``must_exist``: refused when
    another run took ``new`` over), then ``new`` deleted on the condition that ``alias``
    (its write alias) still names another index (:func:`_delete_fenced`). Returns whether
    it was deleted; a target another run took over, or that the alias points at, is left
    alone (logged). Between the two requests another run may claim ``new`` (nothing
    serves from it); deleting it then makes that run's swap refused, never a served index
    lost."""
    if marker is None:
        log.warning("%s: not claimed by this run; not deleting it", new)
        return False
    found = aliases_of(client, new)
    if marker not in found or any(a in found for a in serving):
        log.error(
            "%s: not deleting it: %s",
            new,
            "the alias points at it" if any(a in found for a in serving) else
            "another reindex run took it over",
        )  # fmt: skip
        return False
    try:
        _drop_markers(client, new, [marker], f"releasing {new}")
        _delete_fenced(client, new, alias, f"deleting {new}")
    except LockError as exc:
        log.error("%s: not deleted: %s", new, exc)
        return False
    return True


def delete_unclaimed(client: Elasticsearch, new: str, serving: Collection[str], alias: str) -> None:
    """Delete the non-empty leftover ``new`` before it is built again: never while one of
    ``serving`` points at it (:class:`~esmapper.errors.IndexConfigurationError`, read
    with ``GET /<new>/_alias``); the run markers it carries when read are taken off first
    (``must_exist``: :class:`LockError` when a run claimed it meanwhile), then it is
    deleted on the condition that ``alias`` still names another index
    (:func:`_delete_fenced`; :class:`LockError` when refused)."""
    found = aliases_of(client, new)
    held = [a for a in found if a in serving]
    if held:
        raise IndexConfigurationError(
            f"{new} is behind {', '.join(held)}: it serves, it is not a leftover of a reindex; "
            "not deleting it",
            index=new,
        )
    markers = [a for a in found if is_marker(new, a)]
    _drop_markers(client, new, markers, f"deleting the leftover {new}")
    _delete_fenced(client, new, alias, f"deleting the leftover {new}")
