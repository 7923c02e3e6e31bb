"""Custom cache keys: where the core calls the cache hooks of a repository subclass.

A repository subclass registered for a model (``mapper.register(Model,
repository=MyRepository)``) may override three hooks (see
:class:`esmapper.repository.Repository`): ``invalidate_cache_for`` (the documents a write
touched, each with its original, and the change type), ``invalidate_cache_by_query``
(the filter of a ``patch_all``/``remove_all``) and ``add_to_cache`` (the documents a
cached read fetched). The mapper lists such a repository in ``Services.custom_keys``;
a model without one costs one dict lookup per write batch and per cached read miss.

The by-id entries are the core's (removed by :func:`esmapper._outcomes.send` for every
id it sent, filled under a reservation by the reads): a hook only ever handles the keys
the user made (``Repository.add_to_cache_with_keys``, a search's ``cache_key=``). What
calls the hooks:

- :func:`invalidate_written`: :func:`esmapper._outcomes.send`, for every action it sent
  (confirmed, failed or of unknown outcome: a write whose answer was lost may be
  stored), one call per model and write kind, after the ids were removed. Each
  :class:`~esmapper.signals.ModifiedDocument` holds the document written (``value``;
  for a partial patch the stored source with the patch merged in, ``None`` for a script
  patch) and the stored one it replaced (``original``: known for documents loaded from
  the store, scanned by ``patch_all``/``remove_all``, or read back by a client-side
  patch; ``None`` for a new or constructed document). A write of which neither is
  known (a partial or script patch by id: nothing is loaded) is not passed.
- :func:`invalidate_query`: ``Repository.patch_all``/``remove_all``, once per call,
  whatever its path (by query, or per document: those writes also pass through
  :func:`invalidate_written`) and outcome.
- :func:`add_read`: the by-id reads, with the documents fetched from Elasticsearch and
  stored in the cache (a fill refused because a write removed the reservation is not
  passed: those documents may be stale), ``dirty_read=False``; ``find``/``find_one``
  with caching on, with the page's documents, ``dirty_read`` true unless the search
  refreshed first (``consistency="immediate"``/``"wait"``).

A hook that raises is logged (``esmapper.cache``), never turned into a failed write or
read: the write is stored, the read answered.
"""

from __future__ import annotations

import datetime as _dt
import logging
from collections.abc import Iterable, Mapping, Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from esmapper._bodies import merged
from esmapper._pending import KINDS, PendingWrite
from esmapper._search_answers import page_entry
from esmapper.model.state import state_of
from esmapper.signals import ChangeType, ModifiedDocument

if TYPE_CHECKING:
    from esmapper._context import Context
    from esmapper.model.info import ModelInfo

__all__ = [
    "add_read",
    "invalidate_moved",
    "invalidate_query",
    "invalidate_written",
    "key_entries",
    "sees_writes",
    "stored",
]

log = logging.getLogger("esmapper.cache")


def _modified(pending: PendingWrite) -> ModifiedDocument | None:
    """The :class:`ModifiedDocument` of one write (``None``: neither side is known)."""
    info = pending.info
    source = pending.original_source
    original = None if source is None else info.from_source(source, pending.doc_id, None)
    value = pending.doc
    form = pending.form
    if value is None and form is not None and form.update and source is not None:
        changes = (form.body or {}).get("doc")
        if isinstance(changes, Mapping):  # a partial patch: what it leaves stored
            value = info.from_source(merged(source, changes), pending.doc_id, None)
    if value is None and original is None:
        return None
    return ModifiedDocument(value, original)


def invalidate_written(ctx: Context, info: ModelInfo, pendings: Sequence[PendingWrite]) -> None:
    """Call ``invalidate_cache_for`` of ``info``'s model's repository with the documents
    of ``pendings`` (sent writes), one call per write kind (see the module docstring)."""
    hooks = ctx.custom_keys.get(info.cls)
    if hooks is None or info.cls not in ctx.write_hooks or not ctx.written_caches(info):
        return
    by_kind: dict[ChangeType, list[ModifiedDocument]] = {}
    try:  # (called after the write was sent: nothing here may turn it into a failure)
        for pending in pendings:
            modified = _modified(pending)
            if modified is not None:
                by_kind.setdefault(KINDS[pending.kind].change_type, []).append(modified)
    except Exception:
        log.exception(
            "%s.invalidate_cache_for: the documents of %d write(s) could not be made; "
            "their custom cache keys may be stale",
            type(hooks).__name__,
            len(pendings),
        )
        return
    _call_invalidate(hooks, by_kind)


def invalidate_moved(ctx: Context, info: ModelInfo, moves: Sequence[tuple[Any, Any]]) -> None:
    """Call ``invalidate_cache_for`` of ``info``'s model's repository for documents moved
    to another id (``rekey``: ``(old document, new document)``, written behind the write
    pipeline): the old one ``REMOVED``, the new one ``ADDED`` (a key made of the content
    holds the old id)."""
    hooks = ctx.custom_keys.get(info.cls)
    if hooks is None or not moves or not ctx.written_caches(info):
        return
    _call_invalidate(
        hooks,
        {
            ChangeType.REMOVED: [ModifiedDocument(old, old) for old, _new in moves],
            ChangeType.ADDED: [ModifiedDocument(new, None) for _old, new in moves],
        },
    )


def _call_invalidate(hooks: Any, by_kind: Mapping[ChangeType, list[ModifiedDocument]]) -> None:
    for change_type, documents in by_kind.items():
        try:
            hooks.invalidate_cache_for(documents, change_type)
        except Exception:
            log.exception(
                "%s.invalidate_cache_for failed for %d %s document(s); their custom cache "
                "keys may be stale",
                type(hooks).__name__,
                len(documents),
                change_type.name,
            )


def invalidate_query(ctx: Context, info: ModelInfo, filter: Any, change_type: ChangeType) -> None:
    """Call ``invalidate_cache_by_query`` of ``info``'s model's repository (a
    ``patch_all``: ``SAVED``, a ``remove_all``: ``REMOVED``)."""
    hooks = ctx.custom_keys.get(info.cls)
    if hooks is None or not ctx.written_caches(info):
        return
    try:
        hooks.invalidate_cache_by_query(filter, change_type)
    except Exception:
        log.exception(
            "%s.invalidate_cache_by_query failed (%s of %r); custom cache keys may be stale",
            type(hooks).__name__,
            change_type.name,
            filter,
        )


def sees_writes(ctx: Context, info: ModelInfo) -> bool:
    """Whether a write of ``info``'s model calls an ``invalidate_cache_for`` hook (its
    repository overrides it, and a cache is invalidated): then what a write replaces is
    worth loading first (``remove`` by id, a partial or script ``patch`` by id)."""
    return info.cls in ctx.write_hooks and bool(ctx.written_caches(info))


#: the keys ``Repository.add_to_cache_with_keys`` stored during an ``add_to_cache`` hook
#: of a by-id read (see :func:`add_read`); ``None`` outside one
_stored: ContextVar[list[str] | None] = ContextVar("esmapper_custom_keys", default=None)


def stored(keys: Iterable[str]) -> None:
    """``Repository.add_to_cache_with_keys`` stored ``keys`` (recorded for :func:`add_read`
    when it runs inside a by-id read's hook)."""
    made = _stored.get()
    if made is not None:
        made.extend(keys)


def add_read(
    ctx: Context,
    info: ModelInfo,
    documents: Sequence[Any],
    ttl: _dt.timedelta | _dt.datetime | None,
    *,
    dirty_read: bool,
    alias: str | None = None,
) -> None:
    """Call ``add_to_cache`` of ``info``'s model's repository with ``documents`` (read
    with caching on, for ``ttl``: passed on as ``expires_in`` seconds).

    ``alias``: the documents were just stored by id under ``<alias>:<id>`` (a by-id read's
    fills). A write of one of them between its fill and the hook's keys would leave
    those keys stale (the write's hook dropped them before they were stored): so after
    the hook, the keys it stored are removed again unless every document's by-id entry
    is still there (a write removes it before its own hook runs: whichever comes last,
    nothing stale stays)."""
    hooks = ctx.custom_keys.get(info.cls)
    cache = ctx.documents_of(info)
    if hooks is None or cache is None or not documents:
        return
    expires_in = cache.seconds(ttl)
    if expires_in is not None and not expires_in > 0:
        return  # an expires_at past by now: nothing is cached (the hook would be refused)
    made: list[str] = []
    recording = _stored.set(made) if alias is not None else None
    try:
        hooks.add_to_cache(list(documents), expires_in=expires_in, dirty_read=dirty_read)
    except Exception:
        log.exception(
            "%s.add_to_cache failed for %d document(s); they are not cached under their keys",
            type(hooks).__name__,
            len(documents),
        )
    finally:
        if recording is not None:
            _stored.reset(recording)
    if made and alias is not None:
        client = cache.client
        if not all(isinstance(client.get(f"{alias}:{doc.id}"), dict) for doc in documents):
            client.remove_many(made)


def _hit_of(info: ModelInfo, doc: Any) -> dict[str, Any]:
    """The search hit a page cached under a custom key holds for ``doc``: its source as
    the model writes it, its version and the index it was read from or written to.
    A document not stored yet, or loaded in part, raises ``ValueError``."""
    state = state_of(doc)
    if state is None or doc.id is None:
        raise ValueError(
            f"{info.name} {getattr(doc, 'id', None)!r} is not stored yet: only a document "
            "read from or written to Elasticsearch can be cached under a key"
        )
    if state.partial:
        raise ValueError(
            f"{info.name} {doc.id!r} was loaded in part (includes/excludes): it cannot be "
            "cached as a whole document under a key"
        )
    hit: dict[str, Any] = {"_id": doc.id, "_index": state.index, "_source": info.to_source(doc)}
    condition = state.condition
    if condition is not None:
        hit["_seq_no"], hit["_primary_term"] = condition[1], condition[2]
    return hit


def key_entries(info: ModelInfo, entries: Mapping[str, Any]) -> Iterable[tuple[str, Any]]:
    """``(key, value)`` of what ``Repository.add_to_cache_with_keys`` stores for
    ``entries`` (key -> a document of ``info``'s model, or several): the page a
    ``find``/``find_one`` given that ``cache_key=`` serves (its hits, ``total`` their
    count, every shard answered). Checked before anything is stored: a key that is no
    non-empty string, a value that is no document of the model, or one not stored yet or
    loaded in part raise ``TypeError``/``ValueError``."""
    made = []
    for key, value in entries.items():
        if not isinstance(key, str) or not key:
            raise TypeError(f"cache key {key!r} must be a non-empty string")
        docs = list(value) if isinstance(value, list | tuple) else [value]
        for doc in docs:
            if not isinstance(doc, info.cls):
                raise TypeError(
                    f"add_to_cache_with_keys() caches {info.name} documents under key "
                    f"{key!r}, got {doc!r}"
                )
        hits = [_hit_of(info, doc) for doc in docs]
        response = {"hits": {"total": {"value": len(hits), "relation": "eq"}, "hits": hits}}
        made.append((key, page_entry(response, None)))
    return made
