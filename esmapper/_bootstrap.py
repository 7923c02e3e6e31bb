"""``esmapper.bootstrap(mapper)``: what a process calls once at its start, before it serves.

It is the reference's startup action (``AddStartupAction("ConfigureIndexes", ...)`` plus
``UseWaitForStartupActionsBeforeServingRequests``) without dependency injection: a plain
call that returns when the indexes are ready to serve, so a web app calls it before it
accepts requests (a Flask app factory, a FastAPI lifespan, a worker's start).
"""

from __future__ import annotations

import datetime as _dt
import logging

from esmapper.indexes._configured import LOCK_WAIT, SKIPPED
from esmapper.indexes.configure import IndexState
from esmapper.locks import check_duration
from esmapper.mapper import Mapper

__all__ = ["bootstrap"]

log = logging.getLogger("esmapper.indexes")


def bootstrap(
    mapper: Mapper,
    *,
    begin_reindexing_outdated: bool = False,
    wait: _dt.timedelta = LOCK_WAIT,
) -> list[IndexState]:
    """Configure every registered model's indexes once for the fleet
    (:meth:`Mapper.configure_indexes <esmapper.Mapper.configure_indexes>`: create missing
    indexes and aliases, add new fields; one process of those starting together does it,
    under the ``configure-indexes`` lock, the others wait for it up to ``wait`` and find
    it done); with ``begin_reindexing_outdated=True`` also enqueue a reindex work item on
    the mapper's ``work_queue`` for every model whose alias is on an older version, for a
    worker (``esmapper jobs reindex-worker``) to run. Returns the models' states.

    An outdated model without ``begin_reindexing_outdated`` is logged (WARNING) with how to
    reindex it: the application serves from the old version meanwhile.

    Raises what ``configure_indexes`` raises: :class:`~esmapper.errors.LockError` when
    another process configures for longer than ``wait``,
    :class:`~esmapper.errors.IndexConfigurationError` (a mapping change that needs a new
    version; an outdated model and no work queue with ``begin_reindexing_outdated``),
    ``TypeError``/``ValueError`` for a bad argument before anything is sent."""
    if not isinstance(mapper, Mapper):
        raise TypeError(f"bootstrap takes an esmapper.Mapper, not {mapper!r}")
    if not isinstance(begin_reindexing_outdated, bool):
        raise TypeError(
            f"begin_reindexing_outdated must be True or False, not {begin_reindexing_outdated!r}"
        )
    check_duration("wait", wait, zero=True)
    states = mapper.configure_indexes(
        begin_reindexing_outdated=begin_reindexing_outdated, lock_wait=wait
    )
    outdated = [s for s in states if s.action == "outdated"]
    if outdated and not begin_reindexing_outdated:
        log.warning(
            "outdated, served from their old version until reindexed (esmapper migrate, "
            "esmapper reindex MODEL, or bootstrap(begin_reindexing_outdated=True) with a "
            "worker): %s",
            ", ".join(f"{s.model} ({s.current_index} -> {s.expected_index})" for s in outdated),
        )
    skipped = all(s.action == SKIPPED for s in states)
    log.info(
        "bootstrap: %d models %s",
        len(states),
        "configured by another process meanwhile" if skipped and states else "configured",
    )
    return states
