"""Change tracking hooks: how a session learns which loaded documents may have changed.

Two cheap signals feed a session's "maybe dirty" set, so a flush only diffs documents
that may have changed (its cost grows with the changed documents, not with the identity
map):

- assigning any attribute (an attrs ``on_setattr`` hook), and
- *reading* an attribute that holds a mutable value (a list, an embedded object, a dict):
  the caller may mutate it in place (``doc.tags.append(...)``, ``doc.address.city = ...``),
  so the document is diffed at the next flush.

Outside a session both hooks cost one slot read and a ``None`` check.
"""

from __future__ import annotations

from typing import Any

__all__ = ["TrackedSlot", "mark_assigned", "touch"]


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


def mark_assigned(instance: Any, attribute: Any, value: Any) -> Any:
    """attrs ``on_setattr`` hook: an assignment marks the document maybe-dirty."""
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


def install(cls: type, mutable_fields: list[str]) -> dict[str, Any]:
    """Replace the slot descriptors of ``mutable_fields`` on ``cls`` with TrackedSlots;
    returns the raw slot descriptors by name (the codec reads through them)."""
    raw: dict[str, Any] = {}
    for name in mutable_fields:
        slot = None
        for klass in cls.__mro__:
            slot = klass.__dict__.get(name)
            if slot is not None:
                break
        if isinstance(slot, TrackedSlot):
            raw[name] = slot.slot
        elif slot is not None:
            type.__setattr__(cls, name, TrackedSlot(slot, name))
            raw[name] = slot
    return raw
