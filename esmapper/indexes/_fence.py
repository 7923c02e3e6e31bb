"""The fence alias of a physical index: the one naming rule (see :func:`fence_name`).

Re-exported by :mod:`esmapper.indexes.spec`, whose :meth:`IndexSpec.fence_of
<esmapper.indexes.spec.IndexSpec.fence_of>` / :meth:`IndexSpec.conditioned_target
<esmapper.indexes.spec.IndexSpec.conditioned_target>` decide which writes use it; a module
of its own so that the index-creating modules below the spec can name fences too.
"""

from __future__ import annotations

__all__ = ["FENCE_SUFFIX", "fence_name", "is_fence"]

#: What a physical index's fence alias adds to its name (:func:`fence_name`).
FENCE_SUFFIX = ".fence"


def fence_name(physical: str) -> str:
    """The fence alias of the physical index ``physical``: ``<physical>.fence``
    (``items-v1.fence``, ``logs-v2-2026.12.02.fence``). The one naming rule.

    Every physical index a versioned or time-series model writes to (``<alias>-vN``, each
    partition ``<alias>-vN-<period>``) carries it beside the model's aliases, and a write
    conditioned on a version read from that index is sent to it
    (:meth:`IndexSpec.conditioned_target
    <esmapper.indexes.spec.IndexSpec.conditioned_target>`): versions
    (``if_seq_no``/``if_primary_term``) mean something inside one physical index only. A
    reindex's alias swap removes the old index's fence in the same atomic request that
    moves the model's alias, so from then on such a write is refused (404 under
    ``require_alias``, never applied) and reported as a version conflict. No name the
    model's other rules make ends in ``.fence`` (physical names end in ``-v<N>`` or a
    period, aliases in the model's name or a period; only a model itself named
    ``*.fence`` could), so a fence does not collide with them. Sends nothing.
    """
    return f"{physical}{FENCE_SUFFIX}"


def is_fence(name: str) -> bool:
    """Whether ``name`` is named like a fence alias (:func:`fence_name`). Sends nothing."""
    return name.endswith(FENCE_SUFFIX)
