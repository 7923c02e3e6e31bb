"""The names a point in time over a model is opened on: the one owner of that choice, for
``find(snapshot=...)``, the session's reads and the scans of ``batch_process``,
``patch_all`` and ``remove_all`` (all through :meth:`esmapper._search.SearchRequest.find`).

- A versioned or plain model: its alias (``POST /<alias>/_pit``), as before.
- A time-series model pruned with ``partitions=(start, end)``: the dated aliases of the
  range (:func:`~esmapper.indexes.timeseries.partitions_for_range`), opened with
  ``ignore_unavailable=true`` like the plain search of the same range: a day without
  documents has no partition, and without it Elasticsearch answers the whole request 404
  ``index_not_found_exception``.
- Any other time-series read: the partitions the umbrella alias covers, named one by one
  (``GET /_alias/<umbrella>``, then ``POST /<dated alias>,<dated alias>,.../_pit`` with
  ``ignore_unavailable=true``: a partition retention deletes in between is skipped).
  Elasticsearch resolves the umbrella alias to every partition, but the local test server
  opens a point in time on an alias of several indexes over its first index only (and
  ``patch_all``/``remove_all``/``batch_process`` then saw one day, silently); the names
  mean the same partitions on both. Each partition is named by its dated alias, which
  follows a reindex's swap. When the list would not fit in an HTTP request line
  (:data:`MAX_TARGET_CHARS`; Elasticsearch's ``http.max_initial_line_length`` is 4 KB) it is
  shortened to one wildcard per year of dated aliases (``<umbrella>-2026.*``), which no
  physical partition (``<umbrella>-v1-...``) and no fence alias matches.

One point in time over every partition keeps the search's own order: hits come sorted by
the search's sort across all partitions, the total and the aggregations are those of all
of them, and a ``search_after`` token (the sort values of the last hit, nothing more)
continues across partition boundaries as it does on the umbrella alias.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from esmapper._pit import PitTarget
from esmapper.indexes._ensure import alias_targets
from esmapper.indexes.timeseries import parse_partition

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

    from esmapper.indexes.spec import IndexSpec

__all__ = ["MAX_TARGET_CHARS", "pit_target", "umbrella_expression"]

#: The longest index list a point in time is opened on before it is shortened to yearly
#: wildcards: the request line (``POST /<list>/_pit?keep_alive=5m&ignore_unavailable=true
#: HTTP/1.1``) must stay under Elasticsearch's ``http.max_initial_line_length`` (4 KB).
MAX_TARGET_CHARS: Final = 3000


def pit_target(
    client: Elasticsearch, spec: IndexSpec, pruned: Sequence[str] | None
) -> PitTarget | None:
    """Where a point in time over ``spec``'s documents is opened (see the module
    docstring); ``None`` when a time-series model has no partition (nothing to open).

    ``pruned``: the dated aliases ``partitions=`` chose, or ``None``. Sends ``GET
    /_alias/<umbrella>`` for an unpruned time-series model, nothing otherwise.
    """
    if pruned is not None:
        return PitTarget(",".join(pruned), listed=True)
    if not spec.is_time_series:
        return PitTarget(spec.read_target, listed=False)
    members = alias_targets(client, spec.read_target)
    if not members:
        return None
    return PitTarget(umbrella_expression(spec, members, MAX_TARGET_CHARS), listed=True)


def umbrella_expression(spec: IndexSpec, members: Sequence[str], max_chars: int) -> str:
    """The index expression naming the indexes ``members`` of the umbrella alias (pure):
    each partition by its dated alias, another index under the alias by its own name;
    sorted and without repeats (two partitions of one period are one dated alias, the live
    one). Longer than ``max_chars``: the partitions as one ``<umbrella>-<year>.*`` wildcard
    per year instead."""
    dated: dict[str, int] = {}
    others: set[str] = set()
    for index in members:
        partition = parse_partition(spec, index)
        if partition is None:
            others.add(index)
        else:
            dated[spec.dated_alias(partition.start)] = partition.start.year
    expression = ",".join(sorted({*dated, *others}))
    if len(expression) <= max_chars:
        return expression
    years = {f"{spec.alias}-{year:04d}.*" for year in dated.values()}
    return ",".join(sorted(years | others))
