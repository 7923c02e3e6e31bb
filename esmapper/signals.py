"""Blinker signals for document changes, queries and sessions, and their payloads.

Every signal lives in one :class:`blinker.Namespace`; the sender is the model class, so
``em.signals.documents_saved.connect(fn, sender=Employee)`` listens to one model. Receivers
are held by strong references (a lambda keeps working) and get keyword arguments:

- ``documents_adding``/``_added``, ``documents_saving``/``_saved``,
  ``documents_removing``/``_removed``, ``documents_changing``/``_changed``:
  ``documents=[ModifiedDocument(value, original)]``, ``change_type``, ``options``.
  "-ing" signals fire before the write (receivers may modify documents, or raise to veto:
  nothing is written); "-ed" signals fire only for documents Elasticsearch confirmed.
- ``before_query`` (``query``: a mutable :class:`QueryContext`, ``options``), ``after_query``
  (``query``, ``result``: the raw response body, ``options``). Every search, count and
  aggregation of a model sends them; a ``before_query`` receiver may change
  ``query.body`` (what it leaves is sent, not validated again) or raise to stop the search.
- ``before_publish_entity_changed`` (``message``: mutable :class:`EntityChanged`; set
  ``message.cancel = True`` to skip publishing) and ``entity_changed`` (``message``).
- ``before_flush``, ``after_flush``, ``after_commit``, ``after_rollback``: sender is the
  session. What a flush writes is decided after ``before_flush`` (SQLAlchemy's rule):
  documents its receivers add, remove or change are written by that flush.

Order for each write: adding/saving/removing -> changing -> write -> added/
saved/removed -> changed -> before_publish_entity_changed -> entity_changed.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Iterable
from typing import Any

import attrs
import blinker
from blinker._utilities import make_id

__all__ = [
    "ChangeType",
    "EntityChanged",
    "ModifiedDocument",
    "QueryContext",
    "Signal",
    "after_commit",
    "after_flush",
    "after_query",
    "after_rollback",
    "before_flush",
    "before_publish_entity_changed",
    "before_query",
    "documents_added",
    "documents_adding",
    "documents_changed",
    "documents_changing",
    "documents_removed",
    "documents_removing",
    "documents_saved",
    "documents_saving",
    "entity_changed",
    "namespace",
    "send_safely",
    "union_original_and_modified",
]

log = logging.getLogger("esmapper.signals")


class ChangeType(enum.IntEnum):
    """What happened to a document (the values match Foundatio's ``ChangeType``)."""

    ADDED = 0
    SAVED = 1
    REMOVED = 2


@attrs.define(slots=True)
class ModifiedDocument:
    """A document in a change: ``value`` (modifiable in "-ing" receivers) and ``original``,
    the state loaded from the store (``None`` for new documents or when unknown)."""

    value: Any
    original: Any = None


def union_original_and_modified(documents: Iterable[ModifiedDocument]) -> list[Any]:
    """The documents of a change, both sides: each ``value`` and each ``original`` that
    is not ``None``, in order, each object once (the old and the new content of a
    document whose custom cache keys must go: a changed email address names two keys)."""
    found: list[Any] = []
    seen: set[int] = set()
    for modified in documents:
        for doc in (modified.value, modified.original):
            if doc is not None and id(doc) not in seen:
                seen.add(id(doc))
                found.append(doc)
    return found


@attrs.define(slots=True)
class EntityChanged:
    """The change notification published for each changed document.

    ``type`` is the model name, ``id`` the document id (``None`` for a change by query, and
    for a batch: then ``ids`` lists the documents, see ``Index.batch_notifications``; the
    id of a document routed by something its id does not tell, a join child, is an
    :class:`~esmapper.ids.Id` with that ``routing``, its parent id, also when delivered
    by a distributed bus: a receiver reloads it by that id on its shard, in real time),
    ``data`` free-form enrichment added by ``before_publish_entity_changed`` receivers,
    ``origin`` ``"local"`` (written by this process) or ``"remote"`` (delivered by a
    distributed bus from another process).
    """

    type: str
    id: str | None
    change_type: ChangeType
    data: dict[str, Any] = attrs.field(factory=dict)
    ids: tuple[str, ...] = ()
    cancel: bool = attrs.field(default=False, eq=False, repr=False)
    origin: str = attrs.field(default="local", eq=False)


@attrs.define(slots=True)
class QueryContext:
    """A search about to be sent (``before_query``) or answered (``after_query``).

    ``model`` is the model class searched, ``body`` the compiled request body (query with
    the soft-delete clause, sort, aggregations, paging, ``_source``), ``options`` the call's
    :class:`~esmapper.options.Options` and ``index`` the alias (or dated partitions) searched.
    """

    model: type[Any]
    body: dict[str, Any]
    options: Any
    index: str


class Signal(blinker.NamedSignal):
    """A blinker signal whose receivers are held strongly unless ``weak=True`` is asked for."""

    def connect(self, receiver: Any, sender: Any = blinker.ANY, weak: bool = False) -> Any:
        return super().connect(receiver, sender, weak)

    def connect_via(self, sender: Any, weak: bool = False) -> Callable[[Any], Any]:
        return super().connect_via(sender, weak)

    def disconnect(self, receiver: Callable[..., Any], sender: Any = blinker.ANY) -> None:
        """Disconnect; a receiver left without senders is dropped entirely, so
        :func:`has_receivers` turns false again (blinker keeps empty per-sender entries)."""
        super().disconnect(receiver, sender)
        if sender is blinker.ANY:
            return
        sender_id, receiver_id = make_id(sender), make_id(receiver)
        if not self._by_sender.get(sender_id):
            self._by_sender.pop(sender_id, None)
        if not self._by_receiver.get(receiver_id):
            self._by_receiver.pop(receiver_id, None)
            self.receivers.pop(receiver_id, None)


class _Namespace(blinker.Namespace):
    def signal(self, name: str, doc: str | None = None) -> Signal:
        if name not in self:
            self[name] = Signal(name, doc)
        return self[name]  # type: ignore[return-value]


namespace = _Namespace()

documents_adding = namespace.signal("documents_adding", "before new documents are written")
documents_added = namespace.signal("documents_added", "after new documents were confirmed")
documents_saving = namespace.signal("documents_saving", "before documents are replaced")
documents_saved = namespace.signal("documents_saved", "after replaced documents were confirmed")
documents_removing = namespace.signal("documents_removing", "before documents are deleted")
documents_removed = namespace.signal("documents_removed", "after deletes were confirmed")
documents_changing = namespace.signal("documents_changing", "before any document write")
documents_changed = namespace.signal("documents_changed", "after any confirmed document write")
before_query = namespace.signal("before_query", "before a search is sent")
after_query = namespace.signal("after_query", "after a search answered")
before_publish_entity_changed = namespace.signal(
    "before_publish_entity_changed", "before an EntityChanged message is published"
)
entity_changed = namespace.signal("entity_changed", "an EntityChanged message")
before_flush = namespace.signal("before_flush", "a session is about to flush")
after_flush = namespace.signal("after_flush", "a session flushed")
after_commit = namespace.signal("after_commit", "a session committed")
after_rollback = namespace.signal("after_rollback", "a session rolled back")


def has_receivers(signal: blinker.Signal, sender: Any) -> bool:
    """Whether anything listens to ``signal`` for ``sender`` (skip building payloads if not)."""
    return bool(signal.receivers) and bool(signal.has_receivers_for(sender))


def send_safely(signal: blinker.Signal, sender: Any, **kwargs: Any) -> None:
    """Send ``signal`` to every receiver of ``sender``; a receiver that raises is logged
    (with the signal, the sender and the receiver) and the others still run.

    Used for what happens *after* a write was stored ("-ed" signals, ``entity_changed``):
    a failing subscriber must not turn a stored write into an error.
    """
    for receiver in list(signal.receivers_for(sender)):
        try:
            receiver(sender, **kwargs)
        except Exception:
            message = kwargs.get("message")
            log.exception(
                "a %s receiver %r failed for %s%s; the write is stored, the other receivers "
                "still ran",
                signal.name if isinstance(signal, blinker.NamedSignal) else "signal",
                receiver,
                getattr(sender, "__name__", sender),
                f" (id={message.id!r})" if isinstance(message, EntityChanged) else "",
            )
