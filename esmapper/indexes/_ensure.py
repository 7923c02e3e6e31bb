"""Writes ensure their index: the index and alias exist before the first write.

The one owner of "create a model's index, create-only, race-free": both
:func:`~esmapper.indexes.configure.configure_indexes` and the first write of a model in a
process (:meth:`EnsuredIndex.ensure`, called when the write picks its target,
:meth:`~esmapper.indexes.spec.IndexSpec.write_targets`) create through
:func:`create_index`. Time-series partitions are ensured per period by
:class:`~esmapper.indexes.timeseries.PartitionCache`, the same way.

What the first write of a model sends, once per mapper and process (later writes send
nothing more; ``configure_indexes`` counts as that first time):

- versioned: ``GET /_alias/<alias>``; when an index holds it, ``HEAD
  /<index>/_alias/<index>.fence`` (when missing, ``GET /<index>/_alias`` + ``PUT``: an
  index made before fence aliases existed gets its fence, :func:`fence_if_serving`; an
  index a reindex replaced since the alias was read, deleted or no longer behind it, does
  not: the alias is read again, up to 3 times, and the write goes through it to the new
  index); when no index holds the alias,
  ``HEAD /<alias>`` (+ ``HEAD /_alias/<alias>``): a concrete index under the alias name
  raises :class:`~esmapper.errors.AliasNameTakenError`, nothing is created; else
  ``PUT /<alias>-v<N>`` with the model's mapping and settings **and the alias and its
  fence alias in the same request** (the index never exists without them);
- plain: ``HEAD /<alias>``; when missing, ``PUT /<alias>``;
- time-series: nothing here.

Before it creates the index, the write calls ``spec.before_create`` (the mapper's
fresh-install decision, :func:`esmapper.migrations.planning.decide_before_first_index`:
whichever path creates the first model index decides, before creating it).

Race-free between processes: the create is create-only, so two processes' first writes at
once create one index; the loser's ``resource_already_exists_exception`` is success once
the alias is seen on the index (``HEAD /<index>/_alias/<alias>``; added with
``PUT /<index>/_alias/<alias>`` when missing). The create and the alias are sent without the
transport's retries; a lost answer is read back (``HEAD``) and sent again only when missing
(:func:`esmapper._transport.send_or_read_back`).

The index is not created by a read (a read of a missing index answers empty / None).
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Final

from elasticsearch import ApiError, BadRequestError, Elasticsearch, NotFoundError

from esmapper._transport import once, send_or_read_back
from esmapper.errors import IndexConfigurationError
from esmapper.indexes._occupied import alias_taken_error, concrete_index

if TYPE_CHECKING:
    from esmapper.indexes.spec import IndexSpec

__all__ = [
    "EnsuredIndex",
    "alias_targets",
    "announce_create",
    "answer_of",
    "create_index",
    "ensure_fence",
    "ensure_index",
    "fence_if_serving",
    "put_alias",
    "reason_of",
    "refused",
    "restore_fence",
]

log = logging.getLogger("esmapper.indexes")

_REREADS: Final = 3  # alias reads by a first write while reindexes move it meanwhile


def alias_targets(client: Elasticsearch, alias: str) -> list[str]:
    """The indexes holding ``alias``, sorted (``GET /_alias/<alias>``; none: ``[]``)."""
    try:
        response = client.indices.get_alias(name=alias)
    except NotFoundError:
        return []
    return sorted(response.body)


def reason_of(exc: ApiError) -> str:
    """The server's reason in an API error (``body["error"]["reason"]``; the error type,
    ``exc.message`` in elasticsearch-py, when the answer has none)."""
    info = exc.info if isinstance(exc.info, dict) else {}
    error = info.get("error", {})
    if isinstance(error, dict):
        return str(error.get("reason", exc.message))
    return str(error or exc.message)


def refused(what: str, exc: ApiError, *, index: str) -> IndexConfigurationError:
    """``IndexConfigurationError("<what>: <type>: <reason>")`` about ``index``, carrying the
    server's error type and reason (:func:`reason_of`)."""
    reason = reason_of(exc)
    return IndexConfigurationError(
        f"{what}: {exc.error}: {reason}", index=index, error_type=str(exc.error), reason=reason
    )


def answer_of(exc: ApiError) -> str:
    """An error answer in one line: ``<status>: <type>: <reason>`` (``<status>: <type>``
    when the answer gives no other reason)."""
    reason = " ".join(reason_of(exc).split())
    text = f"{exc.meta.status}: {exc.message}"
    return text if reason in ("", str(exc.message)) else f"{text}: {reason}"


def create_index(client: Elasticsearch, spec: IndexSpec, *, with_alias: bool) -> bool | None:
    """Create ``spec``'s physical index (create-only), with its alias when ``with_alias``.

    Sends ``PUT /<physical>`` once; a lost answer is settled with ``HEAD /<physical>``
    (sent again only if missing). ``True`` if this call created it; ``False`` if it already
    existed (``resource_already_exists_exception``: another process created it); ``None``
    when the answer was lost and the index was read back (most likely ours). When not
    ``True`` and ``with_alias``, the alias is checked and added (:func:`put_alias`). Raises
    :class:`AliasNameTakenError` when the alias name is a concrete index, else
    :class:`IndexConfigurationError` when Elasticsearch refuses the index.
    """
    name = spec.physical_name()
    body = spec.body(with_alias=with_alias)
    fence = spec.fence_of(name) if with_alias else None
    if fence is not None:  # the index serves from its creation: its fence comes with it
        body["aliases"] = {**body.get("aliases", {}), fence: {}}

    def create() -> bool:
        try:
            once(client).indices.create(index=name, **body)
        except BadRequestError as exc:
            if exc.error == "resource_already_exists_exception":
                return False  # created concurrently by another process (or by our lost try)
            if with_alias and concrete_index(client, spec.alias):
                raise alias_taken_error(spec.info.name, spec.alias, f"index {name!r}") from exc
            what = f"cannot create index {name!r} for {spec.info.name}"
            raise refused(what, exc, index=name) from exc
        return True

    created = send_or_read_back(
        create, lambda: bool(client.indices.exists(index=name)), what=f"PUT /{name}"
    )
    if not created and with_alias:  # read back or already there: make sure of the alias
        put_alias(client, name, spec.alias)
        ensure_fence(client, spec, name)
    return created


def ensure_fence(client: Elasticsearch, spec: IndexSpec, physical: str) -> None:
    """Give ``physical`` (one of ``spec``'s fenced physical indexes, :meth:`IndexSpec.fence_of
    <esmapper.indexes.spec.IndexSpec.fence_of>`) its fence alias unless it has it (an index
    made before fences existed): ``HEAD /<physical>/_alias/<fence>``, then ``PUT`` when
    missing (:func:`put_alias`). Nothing for an index the model does not fence. Called
    where this process first learns which index serves the model (the first write,
    ``configure_indexes``, a partition's first write), never on an index a reindex
    replaced: its fence is gone on purpose."""
    fence = spec.fence_of(physical)
    if fence is not None:
        put_alias(client, physical, fence)


def fence_if_serving(client: Elasticsearch, spec: IndexSpec, physical: str) -> bool:
    """:func:`ensure_fence` on ``physical`` (read behind the model's write alias a moment
    ago) only while it still serves: ``HEAD /<physical>/_alias/<fence>``; when missing,
    ``GET /<physical>/_alias`` and, if ``physical`` still holds the write alias (the
    versioned alias; a partition: its period's dated alias), ``PUT`` of the fence.
    ``False`` when ``physical`` is gone or no longer holds that alias (a reindex replaced
    it since it was read: its fence is gone on purpose and is not added again, a write
    goes through the alias to the new index); ``True`` otherwise, also for an index the
    model does not fence."""
    fence = spec.fence_of(physical)
    if fence is None or client.indices.exists_alias(name=fence, index=physical):
        return True
    try:
        body = client.indices.get_alias(index=physical).body
        aliases = (body.get(physical) or {}).get("aliases") or {}
        if spec.write_name(physical) not in aliases:
            return False  # no longer behind the model's write alias
        put_alias(client, physical, fence)
    except NotFoundError:  # deleted since it was read (a reindex replaced it)
        return False
    return True


def restore_fence(client: Elasticsearch, spec: IndexSpec, physical: str) -> bool:
    """After a write to ``physical``'s fence alias was refused because the fence does not
    exist: whether ``physical`` still serves ``spec``'s model's writes (it holds the
    versioned alias; a partition: its period's dated alias), and if so its fence is added
    (:func:`fence_if_serving`), so the next read-and-write goes through. ``False`` when the
    index is gone or holds no such alias (a reindex replaced it: its fence is never made
    again).

    The window this leaves: a reindex swapping right between the read and the add leaves
    the fence on the replaced index; that index is write-blocked from before its swap
    until it is deleted, so a write through that fence is refused, never applied."""
    if spec.fence_of(physical) is None or not fence_if_serving(client, spec, physical):
        return False
    log.warning(
        "%s serves %s but had no fence alias (made before fences existed?): added",
        physical,
        spec.info.name,
    )
    return True


def put_alias(client: Elasticsearch, index: str, alias: str) -> None:
    """``PUT /<index>/_alias/<alias>`` unless it is there; a lost answer is read back."""
    if client.indices.exists_alias(name=alias, index=index):
        return
    send_or_read_back(
        lambda: once(client).indices.put_alias(index=index, name=alias),
        lambda: bool(client.indices.exists_alias(name=alias, index=index)),
        what=f"PUT /{index}/_alias/{alias}",
    )


def ensure_index(client: Elasticsearch, spec: IndexSpec) -> None:
    """Make sure ``spec``'s write target exists, creating it from the model if missing.

    Sends what the module docstring lists (nothing for time-series models), and before
    a create whatever ``spec.before_create`` sends (:func:`announce_create`). Raises
    :class:`~esmapper.errors.AliasNameTakenError` for a concrete index under a versioned
    model's alias name, :class:`IndexConfigurationError` when Elasticsearch refuses the
    index, the client's errors otherwise. Mappings of an existing index are not checked
    (that is ``configure_indexes``' job).
    """
    if spec.is_time_series:
        return
    if spec.kind == "plain":
        if client.indices.exists(index=spec.alias):
            return
        announce_create(spec)
        if create_index(client, spec, with_alias=False):
            log.info("created index %s for %s on its first write", spec.alias, spec.info.name)
        return
    for _ in range(_REREADS):
        targets = alias_targets(client, spec.alias)
        if not targets:
            break
        # an index made before fences existed gets its fence; one a reindex replaced since
        # the alias was read (deleted, or no longer behind it) does not: read it again
        if all([fence_if_serving(client, spec, target) for target in targets]):
            return
    else:
        return  # the alias keeps moving: writes go through it all the same
    if concrete_index(client, spec.alias):
        raise alias_taken_error(spec.info.name, spec.alias, f"index {spec.physical_name()!r}")
    announce_create(spec)
    if create_index(client, spec, with_alias=True):
        log.info(
            "created index %s (alias %s) for %s on its first write",
            spec.physical_name(),
            spec.alias,
            spec.info.name,
        )


def announce_create(spec: IndexSpec) -> None:
    """Call ``spec.before_create`` (the mapper's install decision, see
    :mod:`esmapper.migrations.install`) right before a write creates one of the model's
    indexes; what it raises stops the write before anything is created."""
    if spec.before_create is not None:
        spec.before_create()


class EnsuredIndex:
    """Whether this process made sure a spec's index exists (one per spec, so per mapper).

    Thread-safe: concurrent first writes of one mapper wait for one :func:`ensure_index`.
    """

    __slots__ = ("_done", "_lock")

    def __init__(self) -> None:
        self._done = False
        self._lock = threading.Lock()

    @property
    def done(self) -> bool:
        return self._done

    def ensure(self, client: Elasticsearch, spec: IndexSpec) -> None:
        """:func:`ensure_index` the first time; nothing (no request) afterwards."""
        if self._done:
            return
        with self._lock:
            if not self._done:
                ensure_index(client, spec)
                self._done = True

    def mark(self) -> None:
        """Record that the index exists (``configure_indexes`` just made sure of it)."""
        self._done = True

    def forget(self) -> None:
        """The next write ensures the index again (it was deleted, or a write found its
        alias missing)."""
        with self._lock:
            self._done = False
