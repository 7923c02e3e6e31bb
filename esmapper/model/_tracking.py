"""Change tracking hooks: how a session learns which loaded documents may have changed.

Two cheap signals feed a session's "maybe dirty" set, so a flush only diffs documents
that may have changed (its cost grows with the changed documents, not with the identity
map):

- assigning any attribute (an attrs ``on_setattr`` hook): the document is diffed at the
  next flush, and
- handing out a mutable value: *reading* an attribute that holds a list, an embedded
  object or a dict, or *assigning* an embedded object or a dict (the caller keeps that
  object). The caller may mutate the value in place at any time, also after a flush
  (``tags = doc.tags; s.flush(); tags.append(...)``), so the document is **watched**: a
  session diffs it at every flush until it leaves the session (expunge, rollback, close).
  A read outside any session (or before ``session.add``) is remembered on the document's
  state, so the session that takes the document in watches it too.

Documents whose mutable values were never handed out are diffed only after an
assignment. Outside a session, an assignment costs a set lookup, one slot read and a
``None`` check; hydration and serialization do not go through these hooks.
"""

from __future__ import annotations

from typing import Any

from esmapper.model.state import DocState

__all__ = ["TrackedSlot", "WatchedSlot", "mark_assigned", "touch", "watch"]

_new_state = DocState
_set = object.__setattr__


def touch(instance: Any) -> None:
    """Tell the session holding ``instance`` (if any) that it may have changed."""
    try:
        state = instance._esm_state
    except AttributeError:
        return
    if state is not None:
        session = state.session
        if session is not None:
            session._touch(instance)


def watch(instance: Any) -> None:
    """A mutable value of the document ``instance`` was handed out: remember it on its
    state and tell its session (if any) to diff it at every flush."""
    try:
        state = instance._esm_state
    except AttributeError:  # read while the document is being constructed
        return
    if state is None:  # a new document: the state keeps the mark until a session adds it
        state = _new_state(None)
        _set(instance, "_esm_state", state)
    state.watched = True
    session = state.session
    if session is not None:
        session._watch(instance)


def mark_assigned(instance: Any, attribute: Any, value: Any) -> Any:
    """attrs ``on_setattr`` hook: an assignment marks the document maybe-dirty; assigning
    an embedded object or a dict (which the caller keeps) makes it watched. On a partially
    loaded document the field's name is recorded: a save writes assigned fields whole,
    even when the new value equals the default that stands in for an unloaded one."""
    state = getattr(instance, "_esm_state", None)
    if state is not None and state.partial:
        if state.assigned is None:
            state.assigned = set()
        state.assigned.add(attribute.name)
    if attribute.name in instance.__esm_watched__:
        watch(instance)
    else:
        touch(instance)
    return value


class TrackedSlot:
    """Wraps the slot descriptor of a mutable-valued field: reads mark maybe-dirty."""

    __slots__ = ("name", "slot")

    def __init__(self, slot: Any, name: str) -> None:
        self.slot = slot
        self.name = name

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        value = self.slot.__get__(instance, owner)
        if value is not None:
            touch(instance)
        return value

    def __set__(self, instance: Any, value: Any) -> None:
        self.slot.__set__(instance, value)

    def __delete__(self, instance: Any) -> None:
        self.slot.__delete__(instance)


class WatchedSlot(TrackedSlot):
    """The TrackedSlot of a stored document's mutable field: a read hands the value out,
    so it makes the document watched (see :func:`watch`)."""

    __slots__ = ()

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        value = self.slot.__get__(instance, owner)
        if value is not None:
            watch(instance)
        return value


def install(cls: type, mutable_fields: list[str], *, document: bool = False) -> dict[str, Any]:
    """Replace the slot descriptors of ``mutable_fields`` on ``cls`` with TrackedSlots
    (WatchedSlots for a stored ``document`` model); returns the raw slot descriptors by
    name (the codec reads through them)."""
    kind = WatchedSlot if document else TrackedSlot
    raw: dict[str, Any] = {}
    for name in mutable_fields:
        slot = next((k.__dict__[name] for k in cls.__mro__ if name in k.__dict__), None)
        if isinstance(slot, TrackedSlot):
            raw[name] = slot.slot
            if type(slot) is not kind:
                type.__setattr__(cls, name, kind(slot.slot, name))
        elif slot is not None:
            type.__setattr__(cls, name, kind(slot, name))
            raw[name] = slot
    return raw
