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
- :func:`drop_target` (the rollback of a failed run) deletes ``new`` with the ``remove_index``
  alias action in one request with ``remove`` of the run's marker (``must_exist``): only a
  target still claimed by this run, hence never swapped, is deleted; the aliases are read
  just before, and a target some serving alias points at is never deleted.
- :func:`delete_unclaimed` (a non-empty leftover target a run recreates) deletes it the same
  way, conditioned on the markers it carried when read (``must_exist``), and never when a
  serving alias points at it.
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
from esmapper.errors import LockError

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
    from esmapper.indexes.timeseries import parse_partition

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


def drop_target(
    client: Elasticsearch, new: str, marker: str | None, serving: Collection[str]
) -> bool:
    """The rollback's delete of ``new``: only while it carries ``marker`` and none of
    ``serving`` (read with ``GET /<new>/_alias`` just before), as one ``POST /_aliases``
    (``remove`` of the marker with ``must_exist``, ``remove_index``), sent once; a lost
    answer is read back (gone: done). Returns whether it was deleted; a target another run
    took over, or that the alias points at, is left alone (logged)."""
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
    actions = [*swap_conditions(new, marker), {"remove_index": {"index": new}}]
    try:
        send_or_read_back(
            lambda: _aliases_request(client, actions, f"deleting {new}"),
            lambda: not client.indices.exists(index=new),
            what=f"POST /_aliases (remove_index {new})",
        )
    except LockError as exc:
        log.error("%s: not deleted: %s", new, exc)
        return False
    return True


def delete_unclaimed(client: Elasticsearch, new: str, serving: Collection[str]) -> None:
    """Delete the non-empty leftover ``new`` before it is built again: never while one of
    ``serving`` points at it (:class:`~esmapper.errors.IndexConfigurationError`), and
    conditioned on the markers it carries when read (``GET /<new>/_alias``; each
    ``remove`` with ``must_exist``, with ``remove_index``, in one ``POST /_aliases`` sent
    once; a lost answer is read back). Raises :class:`LockError` when refused (a run
    claimed it meanwhile)."""
    from esmapper.errors import IndexConfigurationError

    found = aliases_of(client, new)
    held = [a for a in found if a in serving]
    if held:
        raise IndexConfigurationError(
            f"{new} is behind {', '.join(held)}: it serves, it is not a leftover of a reindex; "
            "not deleting it",
            index=new,
        )
    actions: list[dict[str, Any]] = [
        {"remove": {"index": new, "alias": a, "must_exist": True}}
        for a in found
        if is_marker(new, a)
    ]
    actions.append({"remove_index": {"index": new}})
    send_or_read_back(
        lambda: _aliases_request(client, actions, f"deleting the leftover {new}"),
        lambda: not client.indices.exists(index=new),
        what=f"POST /_aliases (remove_index {new})",
    )
