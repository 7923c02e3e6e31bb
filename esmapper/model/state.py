"""Per-instance bookkeeping the mapper keeps on a loaded or written document."""

from __future__ import annotations

from typing import Any

__all__ = ["DocState", "state_of"]


class DocState:
    """What the store last confirmed for a document.

    ``original`` is the ``_source`` as loaded or last written (the basis of change
    detection and of ``ModifiedDocument.original``), ``index`` the physical index it was
    read from or written to.
    """

    __slots__ = ("index", "original")

    def __init__(self, original: dict[str, Any] | None, index: str | None = None) -> None:
        self.original = original
        self.index = index


def state_of(doc: Any) -> DocState | None:
    """The :class:`DocState` of ``doc``, or ``None`` for a document never stored."""
    try:
        state: DocState | None = doc._esm_state
    except AttributeError:
        return None
    return state
