"""Old location of :mod:`esmapper.indexes._occupied`, an implementation module (private: see
"Public and private modules" in docs/architecture.md); it re-exports the names so imports
of ``esmapper.indexes.occupied`` keep working. Import from the package instead."""

from esmapper.indexes._occupied import (
    alias_taken_error,
    concrete_index,
)

__all__ = [
    "alias_taken_error",
    "concrete_index",
]
