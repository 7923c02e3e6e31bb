"""Index management: specs, configuration, version reindexing, time-series partitions.

Public entry points: :func:`configure_indexes`, :func:`reindex` (versioned and time-series
models; :func:`reindex_partitions` for the latter), :func:`reindex_outdated`,
:func:`find_leftovers` / :func:`delete_leftovers` (old indexes a killed reindex left behind),
:func:`find_indexes` (what ``Mapper.delete_indexes`` deletes: :class:`IndexDeletion`),
:func:`partition_versions`, :func:`maintain`, :func:`partitions_for_range`, and the errors
:class:`IndexMaxAgeExceededError` and :class:`ReindexError`.
"""

from esmapper.indexes.configure import IndexState, configure_indexes
from esmapper.indexes.deletion import IndexDeletion, find_indexes
from esmapper.indexes.errors import IndexMaxAgeExceededError, ReindexError
from esmapper.indexes.leftovers import Leftover, delete_leftovers, find_leftovers
from esmapper.indexes.maintenance import MaintenanceReport, maintain
from esmapper.indexes.partition_reindex import reindex_partitions
from esmapper.indexes.partition_versions import PartitionVersions, partition_versions
from esmapper.indexes.reindex import (
    ReindexProgress,
    ReindexResult,
    compose_reindex_script,
    reindex,
    reindex_outdated,
)
from esmapper.indexes.spec import IndexSpec
from esmapper.indexes.timeseries import partitions_for_range

__all__ = [
    "IndexDeletion",
    "IndexMaxAgeExceededError",
    "IndexSpec",
    "IndexState",
    "Leftover",
    "MaintenanceReport",
    "PartitionVersions",
    "ReindexError",
    "ReindexProgress",
    "ReindexResult",
    "compose_reindex_script",
    "configure_indexes",
    "delete_leftovers",
    "find_indexes",
    "find_leftovers",
    "maintain",
    "partition_versions",
    "partitions_for_range",
    "reindex",
    "reindex_outdated",
    "reindex_partitions",
]
