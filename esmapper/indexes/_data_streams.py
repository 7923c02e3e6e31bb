"""Index names that Elasticsearch's built-in data-stream templates claim: the one owner of
that rule.

Elasticsearch installs composable index templates, each of priority 100 and with
``data_stream``, for ``logs-*-*``, ``metrics-*-*``, ``synthetics-*-*`` and ``traces-*-*``
(Elastic Agent's data streams; on unless the cluster sets ``stack.templates.enabled:
false``). The template of highest priority matching a new index's name decides: when it is
one of those, ``PUT /<name>`` answers 400 ``illegal_argument_exception`` ("cannot create
index with name [logs-app-v1], because it matches with template [logs] that creates data
streams only, use create data stream api instead"), and a write that would create the index
creates a data stream instead. The names count with the mapper's ``index_prefix``:
``Index.name = "app"`` under ``index_prefix="logs-eu-"`` is ``logs-eu-app-v1``.

What esmapper does about it:

- a versioned or plain model whose index would match is refused when the mapper builds its
  index spec (:func:`refuse_model_names`): every write would fail on such a cluster, as
  would ``configure_indexes``;
- a prefix under which esmapper's own indexes (``<prefix>esmapper-locks``,
  ``<prefix>esmapper-migrations``) would match is refused by the mapper
  (:func:`refuse_names`);
- a time-series model may match (``Index.name = "logs"`` makes partitions
  ``logs-v1-2026.03.10``): its own template (``<alias>-v<N>-*``, priority
  :data:`~esmapper.indexes.timeseries.TEMPLATE_PRIORITY`, above the built-in and the
  Fleet-managed ones as Elastic recommends) wins once installed, so a write that creates a
  partition whose name a built-in template claims first makes sure the model's template
  is there (:func:`~esmapper.indexes.timeseries.PartitionCache.ensure`), even before
  ``configure_indexes`` ran.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Final

from esmapper.errors import IndexConfigurationError

if TYPE_CHECKING:
    from esmapper.indexes.spec import IndexSpec

__all__ = [
    "BUILT_IN_DATA_STREAM_PATTERNS",
    "data_stream_pattern",
    "refuse_model_names",
    "refuse_names",
]

#: The index patterns of Elasticsearch's built-in data-stream templates (priority 100).
BUILT_IN_DATA_STREAM_PATTERNS: Final = ("logs-*-*", "metrics-*-*", "synthetics-*-*", "traces-*-*")

_COMPILED: Final = tuple(
    (pattern, re.compile(".*".join(re.escape(part) for part in pattern.split("*"))))
    for pattern in BUILT_IN_DATA_STREAM_PATTERNS
)


def data_stream_pattern(name: str) -> str | None:
    """The built-in data-stream pattern that claims the index ``name``, or ``None``."""
    for pattern, regex in _COMPILED:
        if regex.fullmatch(name) is not None:
            return pattern
    return None


def _refusal(owner: str, name: str, pattern: str, remedy: str) -> IndexConfigurationError:
    return IndexConfigurationError(
        f"{owner}: index {name!r} matches {pattern!r}, the pattern of one of Elasticsearch's "
        "built-in data-stream templates: Elasticsearch refuses to create a regular index of "
        'that name (400 illegal_argument_exception "... matches with template [...] that '
        f'creates data streams only"). {remedy}',
        index=name,
        error_type="illegal_argument_exception",
    )


def refuse_names(owner: str, names: Iterable[str]) -> None:
    """Raise :class:`IndexConfigurationError` when one of the index ``names`` (esmapper's
    own indexes under a mapper's ``index_prefix``) is claimed by a built-in data-stream
    template. Sends nothing."""
    for name in names:
        pattern = data_stream_pattern(name)
        if pattern is not None:
            raise _refusal(
                owner,
                name,
                pattern,
                f"Choose an index_prefix that does not start with {pattern.split('*')[0]!r} "
                "(e.g. 'myapp_' or 'myapp-').",
            )


def refuse_model_names(spec: IndexSpec) -> None:
    """Raise :class:`IndexConfigurationError` when a versioned or plain ``spec`` would
    create an index a built-in data-stream template claims (``<alias>-v<N>`` or
    ``<alias>``; any version matches when one does). Time-series models are not refused
    (see the module docstring). Sends nothing."""
    if spec.is_time_series:
        return
    name = spec.physical_name()
    pattern = data_stream_pattern(name)
    if pattern is None:
        return
    raise _refusal(
        spec.info.name,
        name,
        pattern,
        f"Rename the model's index (Index.name = {spec.options.name!r}) or give the Mapper "
        f"an index_prefix (e.g. 'myapp_') so that its names do not match {pattern!r}.",
    )
