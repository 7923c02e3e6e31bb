"""Old location of :mod:`esmapper.model._tracking`, an implementation module (private: see
"Public and private modules" in docs/architecture.md); it re-exports the names so imports
of ``esmapper.model.tracking`` keep working. Import from the package instead."""

from esmapper.model._tracking import (
    TrackedSlot,
    WatchedSlot,
    mark_assigned,
    touch,
    watch,
)

__all__ = [
    "TrackedSlot",
    "WatchedSlot",
    "mark_assigned",
    "touch",
    "watch",
]
