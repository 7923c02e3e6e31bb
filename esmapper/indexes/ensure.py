"""Old location of :mod:`esmapper.indexes._ensure`, an implementation module (private: see
"Public and private modules" in docs/architecture.md); it re-exports the names so imports
of ``esmapper.indexes.ensure`` keep working. Import from the package instead."""

from esmapper.indexes._ensure import (
    EnsuredIndex,
    alias_targets,
    announce_create,
    answer_of,
    create_index,
    ensure_fence,
    ensure_index,
    put_alias,
    reason_of,
    restore_fence,
)

__all__ = [
    "EnsuredIndex",
    "alias_targets",
    "announce_create",
    "answer_of",
    "create_index",
    "ensure_fence",
    "ensure_index",
    "put_alias",
    "reason_of",
    "restore_fence",
]
