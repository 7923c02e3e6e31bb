"""Old location of :mod:`esmapper.indexes._placement`, an implementation module (private: see
"Public and private modules" in docs/architecture.md); it re-exports the names so imports
of ``esmapper.indexes.placement`` keep working. Import from the package instead."""

from esmapper.indexes._placement import (
    time_series_targets,
)

__all__ = [
    "time_series_targets",
]
