"""Old location of :mod:`esmapper.indexes._lookup`, an implementation module (private: see
"Public and private modules" in docs/architecture.md); it re-exports the names so imports
of ``esmapper.indexes.lookup`` keep working. Import from the package instead."""

from esmapper.indexes._lookup import (
    MGET_ENTRIES,
    live_partitions,
    mget_ids,
    read_params,
    stored_copies,
)

__all__ = [
    "MGET_ENTRIES",
    "live_partitions",
    "mget_ids",
    "read_params",
    "stored_copies",
]
