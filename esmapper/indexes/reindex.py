"""Version upgrades of ``versioned`` indexes: reindex ``<alias>-vK`` into ``<alias>-vN``.

:func:`reindex` runs, under the lock ``reindex:<alias>`` (90 s ttl, renewed
every 30 s by a heartbeat thread while the process lives, so a killed run's lock lapses
within 90 s, at once for a rerun on the same machine: :mod:`esmapper.locks`), these phases:

0. **leftovers**: a write block a killed reindex left on the index behind the alias
   (marked in its ``_meta``, its lock not live) is removed at once, before anything else,
   also when the alias turns out to be up to date (:mod:`esmapper.indexes.blocks`). A
   block someone else set refuses the reindex.
1. **prepare**: ``PUT /<alias>-vN`` with the current mapping and settings and no alias. An
   existing ``-vN`` is first rid of the ``_reindex`` tasks a killed run left writing into
   it (they outlive their client: cancelled and waited for). An empty one (left by
   ``configure_indexes``) is reused; a non-empty one, the leftover of an interrupted run,
   is **resumed** when the record that run wrote into its ``_meta`` matches this run (the
   same old index by ``uuid``, the same scripts, pipeline, mapping and settings), else
   deleted first so every document gets the current script (never while the alias points
   at it): :mod:`esmapper.indexes._reindex_resume`. Then the run **claims** ``-vN``: one
   ``POST /_aliases`` puts its marker alias ``<alias>-vN.reindex-run-<token>`` on it and
   takes every other run's marker off. The marker is the run's fencing token
   (:mod:`esmapper.indexes._reindex_fence`): the swap, the rollback's delete of ``-vN`` and
   the deletes of documents from it are conditioned on it, so a run paused past its
   lease that resumes after another run took over is refused by the server. A
   custom-field model with scripts: the ``idx`` rebuild of step 8 is recorded in ``-vN``'s
   ``_meta`` now (:mod:`esmapper.indexes._idx_owed`), so a run killed after the swap leaves
   it owed. Then ``GET /<alias>-vK/_stats/indexing?level=shards``: the primaries'
   ``max_seq_no`` and write counters before the copy (step 4,
   :mod:`esmapper.indexes._reindex_quiet`).
2. **copy**: the run's record (the old index's ``uuid``, the fingerprint, the copy's start
   and ``max_seq_no``) is written into ``-vN``'s ``_meta`` through the run's marker alias,
   and again, marked completed, after the pass. A resumed run's pass copies only the
   documents changed since the recorded start less ``catch_up_margin`` (a completed copy
   of a model with an updated date), else reads every document and writes only those
   missing or changed (external versions skip the rest); the rest of the run is a normal
   run's, always with the catch-up and final passes, the stale-copy comparison from the
   recorded ``max_seq_no`` and the id reconciliation by counts (deletes between the
   runs).
   ``POST /_reindex`` from ``-vK`` to ``-vN`` with the model's reindex scripts
   (the scripts of the versions K < v <= N: one is sent as is, several are wrapped into
   ``void f000(def ctx) {...}`` functions called in order). How a pass runs (a polled task,
   or synchronously on servers without tasks; external versions; ``conflicts=proceed``):
   :mod:`esmapper.indexes._reindex_pass`. The old index keeps serving reads and writes.
3. **catch_up** (models with an updated date: ``HasDates``' ``updated_utc``, or the one
   ``Index.dates`` names, which every write sets, :mod:`esmapper._dates`; below
   ``updated_utc`` stands for it; when ``GET /<alias>-vK/_stats/indexing`` shows the
   primaries' write counters moved since before the copy): the documents with
   ``updated_utc`` >= the copy's start (the mapper's clock minus ``catch_up_margin``, for
   clock skew between writers) are copied again, while writes still go to the old index.
   The old index is refreshed first only when it does not refresh itself within a quarter
   of the margin
   (``index.refresh_interval``, 1 s by default; ``-1`` always refreshes): a write this
   pass cannot see yet is younger than the final pass's start, and that pass follows a
   refresh. (The copy always follows a refresh: documents written before the run are
   copied whatever their ``updated_utc``.)
4. **final_catch_up**: the block marker in ``-vK``'s ``_meta`` (who blocks it, under which
   lock), ``PUT /<alias>-vK/_block/write``, then the documents changed since the catch-up
   started are copied after ``POST /<alias>-vK/_refresh`` (models without dates: every
   document; unchanged ones are skipped as version conflicts). Then (every model) the
   copies of documents removed and added again under their id during the run are replaced:
   Elasticsearch forgets a delete's version after ``index.gc_deletes`` (60 s), so such a
   document starts over at ``_version`` 1 and every pass skipped it as a version conflict,
   leaving the removed document's copy in ``-vN``. Only when a catch-up pass skipped
   documents (version conflicts, a script's noops) and a primary's ``max_seq_no`` moved
   since the copy began (the shard stats again), the documents of ``-vK`` written since
   (``_seq_no`` above the lowest ``max_seq_no`` read before the copy: a server-side range
   where the server answers one, else an id scroll filtered on ``_seq_no``; ``HasDates``
   models: ``updated_utc`` >= the copy's start) are compared with their copies (``POST
   /<alias>-vN/_mget`` per 1000): another ``_version`` is stale (a correct copy carries
   the old document's version); with the same version ``updated_utc`` (``HasDates``), the
   whole ``_source`` (no script), or nothing (a script and no dates: copied again) decides
   (:mod:`esmapper.indexes._reindex_stale`). The stale ones are deleted (``_bulk``) and
   copied again by a pass with ``dest.op_type = "create"`` (the scripts apply).
   From the block on, writes
   through the alias fail with 403 ``cluster_block_exception`` until the swap (they were not
   applied: the bulk writer resends them with its back-off for up to the mapper's
   ``write_block_wait``, 30 s by default, whatever a call's ``retries=``, and they go to
   ``-vN`` once the alias moved). :attr:`ReindexResult.blocked_seconds` says how long it
   lasted.
5. **verify**: refresh the new index (reads after the swap see every document) and reconcile
   ids (every id the write-blocked old index no longer has is deleted from the new one: an
   id scroll of both, ``_bulk`` deletes), so a document deleted during the run never comes
   back. Skipped when the counts prove there is nothing to delete: without a script every
   document of the old index is in the new one (without dates the final pass copied them
   all; with dates the copy and the catch-ups took them, by ``updated_utc``), so equal
   counts mean no extra. The new index's count is the documents the passes created in it (it
   was empty and only they write to it), so only the old one is counted (``GET
   /<alias>-vK/_count``); when a pass was run again after an unknown outcome, or copies were
   replaced (step 4), the new one is counted too. A script may drop documents: then the ids
   are always compared.
6. **swap**: first the decision of step 7 is written into ``-vK``'s mapping ``_meta``
   (``PUT /<alias>-vK/_mapping``, :func:`esmapper.indexes.leftovers.mark_replaced`), so a
   process killed after the swap leaves a leftover that ``migrate`` recognises and deletes
   (:mod:`esmapper.indexes.leftovers`); ``-vK``'s fence alias ``<alias>-vK.fence`` is put
   when missing (an index made before fences existed: ``HEAD``, ``PUT _alias``); then
   ``-vK``'s write block is read again (lifted by someone: the run fails) and one atomic
   ``POST /_aliases`` (remove the run's marker from ``-vN``, the alias and ``-vK``'s fence
   alias from ``-vK``, all with ``must_exist``; add the alias and ``<alias>-vN.fence`` to
   ``-vN``), sent once, right after a lock renewal. A 404 (the marker or the alias moved:
   another run took over) refuses it and nothing moves. Writes now go to ``-vN``, and a
   write conditioned on a version read from ``-vK`` (sent to ``-vK``'s fence alias, see
   below) is refused from this instant.
7. **delete_old**: ``DELETE /<alias>-vK`` (never while an alias of the model points at it,
   read just before) only when ``delete_old`` and the new count >= the
   old count (fewer happens when a script drops documents); otherwise the
   old index stays, write-blocked, for inspection (its marker says why). A 404 (deleted
   meanwhile) is fine.
8. custom-field models (``HasCustomFields``): ``idx`` is copied as stored (slots belong to
   the tenant, not to the index version); when reindex scripts ran, after the lock is
   released, ``mapper.custom_fields(Model).rebuild_idx()`` recomputes it and rewrites the
   documents whose ``idx`` a script made stale (conditional partial updates), then the
   record of step 1 is removed. Every reindex of the model (an ``up_to_date`` one
   included: ``GET /<alias>/_mapping``) and ``migrate`` finish a rebuild a killed run
   owes before reporting success.

Unknown outcomes (a dropped connection, a timeout, an unreadable answer). Every write of a
run is sent once, without the transport's retries (:mod:`esmapper._transport`), and a lost
answer is settled by reading the state back, never by a blind resend: a lost ``PUT
/<alias>-vN`` or write block is checked (``HEAD``, ``_settings``) and sent once more only if
it is missing; a lost ``_reindex`` pass is run once more (external versions make that
harmless); a lost bulk of deletes is settled by scrolling the ids again (the deletes of
stale copies in step 4 are sent once more: idempotent, and nothing else writes to
``-vN``). A lost answer to the **swap** reads ``GET /_alias/<alias>`` back: on ``-vN``
the swap happened and the run continues as a success (the new index is never deleted);
still on ``-vK`` it did not, and the run fails and rolls back as below; anything else (no
alias, another index, the read fails) raises :class:`ReindexError` without deleting
anything or removing the write block.

Blocking the old index before the last pass (instead of catching up after the swap, as the
reference implementation does) means no write made during the run can be lost or reverted
by a late copy, and reads never see the new index missing recent writes. The price is the
blocked window: the final pass (for ``HasDates`` models only what changed since the
catch-up; without dates a pass over every document), two counts (and the id reconciliation
when the counts differ or a script ran), the marker and the swap. Give large models
``HasDates`` to keep it short.

Throttling: ``batch_size`` and ``requests_per_second`` go into
every pass; a polled pass without progress for ``stall_timeout`` is cancelled and fails the
reindex, naming the task and how far it got (:mod:`esmapper.indexes._reindex_pass`).

Failures. Before the swap any failure (a failing script, a refused document, a count
mismatch, a stalled pass, any exception) removes the write block (its own only: the
block's marker names this run's holder), leaves the old index serving behind the alias,
and deletes the new index (``keep_failed_index=True`` keeps it for inspection): its
marker taken off first (``must_exist``: refused when another run took it over), then
``remove_index`` conditioned on the alias still naming the old index, so never an index
an alias points at; pass
failures raise :class:`ReindexError`, other exceptions propagate. A run whose lock was
taken over touches neither: they belong to the new holder. A process killed while the
block is on leaves the old index write-blocked until the next ``reindex`` or ``migrate``
(or ``esmapper reindex`` / ``esmapper migrate``) of any version of the application: it
removes the block as soon as
the killed run's lock is not live, at once on the same machine, within the lock's ttl
(90 s) elsewhere. A process killed after the swap, before deleting the old
index, leaves it behind the alias no more: ``esmapper status`` reports it and ``migrate``
deletes it (:mod:`esmapper.indexes.leftovers`). The marker written before the swap stays
on an old index whose swap failed; it is harmless (an index behind the alias is never a
leftover) and the next reindex overwrites it.

Versions read before the swap. Versions (``primary_term:seq_no``) are per index, and the
copy in ``-vN`` starts every document again at ``1:0``, so a version read from ``-vK`` may
name another state of the document in ``-vN``. Every write conditioned on a version goes
to the fence alias of the physical index it was read from
(:meth:`IndexSpec.conditioned_target <esmapper.indexes.spec.IndexSpec.conditioned_target>`),
which the swap removes: a document read before the swap and saved or removed after it
(``save``, ``remove(doc)``, a session flush, ``patch(id)`` with a Json/Action patch) gets
:class:`~esmapper.errors.VersionConflictError` (re-read and retry), never applied over a
newer change; ``patch_all``/``patch(ids)``/``remove_all`` whose scan ran before the swap
read those documents again in their conflict rounds. A save or remove of a document
stored in ``-vN`` exactly as it was loaded (nobody changed it, only its index moved) is
written at its version in ``-vN`` instead (:func:`esmapper._fenced.superseded`). Before
the swap (under the block) such a write waits on the 403 like any other, then is settled
so.

Limitations. For ``HasDates`` models, a write that does not bump ``updated_utc`` (a raw
client write) during the copy or catch-up is not caught up, and a reindex script or ingest
pipeline that changes ``updated_utc`` makes every document changed during the run count
as removed and added again (copied once more under the block: longer, not wrong). Models
without ``HasDates`` whose old index was written during the run pay, under the block, a
listing of the documents written since the copy began (on a server that cannot search
``_seq_no``, an id scroll of the whole old index). With several primary shards the
``_seq_no`` floor is the lowest shard's, so more documents are compared than were
written. The pass copying documents again uses ``op_type: create``: run
again after an unknown outcome, or still running after the swap, it overwrites nothing.
Time-series models go partition by partition through the same steps
(:mod:`esmapper.indexes.partition_reindex`).
"""

from __future__ import annotations

import datetime as _dt
import logging
import re
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from esmapper._context import context_of
from esmapper._server_tasks import interruptible, interruptible_sleep
from esmapper.errors import IndexConfigurationError
from esmapper.indexes._configured import clear_marker
from esmapper.indexes._idx_owed import settle_idx_rebuild
from esmapper.indexes._join_relations import check_relations_kept
from esmapper.indexes._reindex_pass import Throttle, alias_target
from esmapper.indexes._reindex_run import (
    LOCK_TTL,
    LOCK_WAIT,
    ReindexProgress,
    ReindexResult,
    Run,
    run_phases,
)
from esmapper.indexes.blocks import clear_leftover_block, refuse_foreign_block
from esmapper.indexes.configure import index_state, is_outdated
from esmapper.indexes.partition_reindex import reindex_partitions
from esmapper.indexes.partition_versions import partition_versions
from esmapper.indexes.spec import IndexSpec
from esmapper.locks import LockProvider, check_duration
from esmapper.reindex_scripts import compose as compose_reindex_script

if TYPE_CHECKING:
    from esmapper._context import Context, HasContext

__all__ = [
    "LOCK_TTL",
    "LOCK_WAIT",
    "ReindexProgress",
    "ReindexResult",
    "compose_reindex_script",
    "reindex",
    "reindex_outdated",
]

log = logging.getLogger("esmapper.indexes")


def check_lock_options(lock_wait: _dt.timedelta, lock_ttl: _dt.timedelta) -> None:
    """``ValueError`` (``TypeError``) unless ``lock_ttl`` is a ``timedelta`` above zero and
    ``lock_wait`` one of at least zero; sends nothing."""
    check_duration("lock_ttl", lock_ttl)
    check_duration("lock_wait", lock_wait, zero=True)


def _version_of(spec: IndexSpec, index: str) -> int:
    match = re.fullmatch(rf"{re.escape(spec.alias)}-v(\d+)", index)
    if match is None:
        raise IndexConfigurationError(
            f"{spec.info.name}: alias {spec.alias!r} points at {index!r}, which is not one of "
            f"its versioned indexes ({spec.alias}-v<N>)",
            index=spec.alias,
        )
    return int(match.group(1))


def reindex(
    mapper: Context | HasContext,
    model: type,
    *,
    progress: Callable[[ReindexProgress], None] | None = None,
    lock_wait: _dt.timedelta = LOCK_WAIT,
    lock_ttl: _dt.timedelta = LOCK_TTL,
    delete_old: bool = True,
    keep_failed_index: bool = False,
    catch_up_margin: _dt.timedelta = _dt.timedelta(minutes=1),
    batch_size: int | None = None,
    requests_per_second: float | None = None,
    stall_timeout: _dt.timedelta | None = None,
) -> ReindexResult:
    """Reindex ``model``'s ``versioned`` index into its current version; see the module
    docstring for every request sent. A ``daily``/``monthly`` model's partitions are
    reindexed one after the other by the same steps
    (:func:`esmapper.indexes.partition_reindex.reindex_partitions`).

    ``progress`` receives :class:`ReindexProgress` reports (an exception raised by it aborts
    the reindex like any failure). ``batch_size`` (documents per batch, ``source.size``) and
    ``requests_per_second`` throttle every pass; ``stall_timeout`` is how
    long a pass may make no progress before it is cancelled and the reindex fails (default
    ``max(10 min, 3 * batch / requests_per_second)``; servers with tasks only). A
    throttle value that is not a finite number > 0 raises ``ValueError`` before anything is
    sent. ``lock_ttl`` is the expiry of the ``reindex:<alias>`` lock, renewed by a heartbeat
    every ttl/3 while this process runs (:mod:`esmapper.locks`). A ``lock_ttl`` not above
    zero, a negative ``lock_wait`` or a negative ``catch_up_margin`` (it would skip every
    write made during the copy) raises ``ValueError`` before anything is sent.

    Raises :class:`~esmapper.errors.LockError` when another process holds
    ``reindex:<alias>`` for longer than ``lock_wait`` (or the lock is lost),
    :class:`~esmapper.errors.IndexConfigurationError` for a ``plain`` model,
    an alias that is missing, points at several indexes or at a newer version, or an old
    index write-blocked by someone else, and :class:`~esmapper.indexes.errors.ReindexError`
    when a pass fails or stalls. Returns ``status="up_to_date"`` without copying when the
    alias already points at the current version (e.g. another process finished the same
    reindex while this one waited); a write block a killed reindex left is removed first in
    every case (``cleared_block_seconds``). A rerun after a killed reindex reuses what it
    copied when nothing that shapes the copy changed (``resumed_from``, see
    :mod:`esmapper.indexes._reindex_resume`).
    """
    check_lock_options(lock_wait, lock_ttl)
    check_duration("catch_up_margin", catch_up_margin, zero=True)
    throttle = Throttle(batch_size, requests_per_second, stall_timeout)
    mapper = context_of(mapper)  # a Mapper: its services
    spec = mapper.spec(model)
    clear_marker(mapper)  # the configuration changes: the next configure_indexes() runs
    if spec.is_time_series:
        moved = reindex_partitions(
            mapper,
            model,
            progress=progress,
            lock_wait=lock_wait,
            lock_ttl=lock_ttl,
            delete_old=delete_old,
            keep_failed_index=keep_failed_index,
            catch_up_margin=catch_up_margin,
            throttle=throttle,
        )
        settle_idx_rebuild(mapper, model)
        return moved
    if spec.kind != "versioned":
        raise IndexConfigurationError(
            f"{spec.info.name}: only versioned and time-series indexes are reindexed "
            f"(kind={spec.kind!r})",
            index=spec.alias,
        )
    client = mapper.client
    new = spec.physical_name()
    # its wait for the lock ends like a task wait once an interruptible() event is set
    locks = LockProvider(
        client, index_prefix=mapper.index_prefix, clock=mapper.clock, sleep=interruptible_sleep
    )
    with locks.acquire(f"reindex:{spec.alias}", lock_ttl, wait=lock_wait) as lock:
        old = alias_target(client, spec)
        if old is None:
            raise IndexConfigurationError(
                f"{spec.info.name}: alias {spec.alias!r} does not exist; call "
                "configure_indexes() first",
                index=spec.alias,
            )
        cleared = clear_leftover_block(locks, old, held=lock, lock_ttl=lock_ttl)
        cleared_for = None if cleared is None else cleared.seconds(mapper.clock())
        if old == new:
            settle_idx_rebuild(mapper, model, held=True)  # a killed run's debt
            return ReindexResult(
                spec.info.name,
                spec.alias,
                old,
                new,
                "up_to_date",
                cleared_block_seconds=cleared_for,
            )
        old_version = _version_of(spec, old)
        if old_version > spec.version:
            raise IndexConfigurationError(
                f"{spec.info.name}: alias {spec.alias!r} points at {old!r}, newer than the "
                f"model's version {spec.version}; refusing to downgrade",
                index=spec.alias,
            )
        refuse_foreign_block(client, old, spec.info.name, mapper.clock())
        script = compose_reindex_script(spec.options.reindex_scripts, old_version, spec.version)
        if script is None:  # (a script may rewrite the join values: its author's to know)
            check_relations_kept(client, spec, old)
        run = Run(mapper, spec, lock, progress, old, new, script, throttle)
        if cleared_for is not None:
            run.update(cleared_block_seconds=cleared_for)
        result = run_phases(
            run, delete_old=delete_old, keep_failed_index=keep_failed_index, margin=catch_up_margin
        )
    settle_idx_rebuild(mapper, model)  # owed when scripts ran (recorded before the swap)
    return result


def _outdated(ctx: Context, model: type) -> tuple[IndexSpec, str | None] | None:
    """``(spec, current)`` when ``model`` needs a reindex (see :func:`reindex_outdated`),
    else ``None``; sends the one alias read."""
    spec = ctx.spec(model)
    if spec.kind == "plain":
        return None
    if spec.is_time_series:
        lowest = partition_versions(ctx.client, spec, ctx.clock()).lowest
        current = None if lowest is None else f"{spec.alias}-v{lowest}-*"
        outdated = is_outdated(spec, current=None, lowest=lowest)
    else:
        current, _ = index_state(ctx.client, spec)
        outdated = is_outdated(spec, current=current, lowest=None)
    return (spec, current) if outdated else None


def check_parallel(max_parallel: int) -> None:
    """``ValueError`` (``TypeError``) unless ``max_parallel`` is an ``int`` >= 1; sends
    nothing."""
    if isinstance(max_parallel, bool) or not isinstance(max_parallel, int):
        raise TypeError(f"max_parallel must be an int, not {type(max_parallel).__name__}")
    if max_parallel < 1:
        raise ValueError(f"max_parallel must be at least 1, not {max_parallel}")


def reindex_outdated(
    mapper: Context | HasContext,
    models: Iterable[type] | None = None,
    *,
    progress: Callable[[ReindexProgress], None] | None = None,
    lock_wait: _dt.timedelta = LOCK_WAIT,
    lock_ttl: _dt.timedelta = LOCK_TTL,
    batch_size: int | None = None,
    requests_per_second: float | None = None,
    stall_timeout: _dt.timedelta | None = None,
    starting: Callable[[type, IndexSpec, str | None], None] | None = None,
    done: Callable[[type, ReindexResult], None] | None = None,
    failed: Callable[[type, BaseException], None] | None = None,
    max_parallel: int = 1,
) -> list[ReindexResult]:
    """Reindex every model (of ``models``, default all registered) that
    :func:`~esmapper.indexes.configure.is_outdated`: a ``versioned`` model whose alias
    points at an older version, a time-series model with a live partition at an older
    version. The migration runner reindexes through this loop too.

    Sends ``GET /_alias/<alias>`` per versioned model (``GET /<alias>-v*/_alias`` per
    time-series one), then :func:`reindex` for the outdated ones (with the lock and
    throttle options); plain models are skipped. ``starting(model, spec, current)`` is
    called before each reindex (``current``: the index the alias points at, for a
    time-series model the lowest version's pattern ``<alias>-v<K>-*``), ``done(model,
    result)`` after it, ``failed(model, exception)`` when it raised.

    ``max_parallel`` (an ``int`` >= 1, else ``ValueError``/``TypeError`` before anything is
    sent): 1 (the default) reindexes one model after the other, reading each model's alias
    just before its reindex. Above 1, every model's alias is read first, then up to
    ``max_parallel`` models are reindexed at once, each in a thread of its own (each under
    its own ``reindex:<alias>`` lock, every model's passes sequential as with 1): peak
    extra disk is one new index (or partition) per model running, and the callbacks,
    ``progress`` included, are called from those threads, concurrently.

    Raises what :func:`reindex` raises: the first failure stops the run (in parallel: no
    further model starts, those running finish, then the first failure is raised; the
    others are logged and passed to ``failed``); a bad throttle value before anything is
    sent. Interrupted in parallel (Ctrl-C reaches the calling thread only), none starts
    and the running ones stop as one reindex does on Ctrl-C, at their next task poll
    (:func:`esmapper._server_tasks.interruptible`: the task cancelled, the run rolled
    back); the interrupt is raised once they have. Returns the results of the reindexed
    models, in the order they finished.
    """
    check_lock_options(lock_wait, lock_ttl)
    Throttle(batch_size, requests_per_second, stall_timeout)  # checked before any request
    check_parallel(max_parallel)
    ctx = context_of(mapper)  # a Mapper: its services
    options: dict[str, Any] = {
        "progress": progress,
        "lock_wait": lock_wait,
        "lock_ttl": lock_ttl,
        "batch_size": batch_size,
        "requests_per_second": requests_per_second,
        "stall_timeout": stall_timeout,
    }
    chosen = list(models) if models is not None else ctx.models

    def one(
        model: type, spec: IndexSpec, current: str | None, stop: threading.Event | None = None
    ) -> ReindexResult:
        if starting is not None:
            starting(model, spec, current)
        try:
            result = reindex(ctx, model, **options)
        except BaseException as exc:
            if stop is not None:
                stop.set()  # before anyone hears of it: no model starts after a failure
            if failed is not None:
                failed(model, exc)
            raise
        if done is not None:
            done(model, result)
        return result

    if max_parallel == 1:
        results = []
        for model in chosen:
            found = _outdated(ctx, model)
            if found is not None:
                results.append(one(model, *found))
        return results
    work = [(model, found) for model in chosen if (found := _outdated(ctx, model)) is not None]
    return _in_parallel(work, one, max_parallel)


def _in_parallel(
    work: list[tuple[type, tuple[IndexSpec, str | None]]],
    one: Callable[[type, IndexSpec, str | None, threading.Event], ReindexResult],
    max_parallel: int,
) -> list[ReindexResult]:
    """Run ``one`` for every model of ``work``, up to ``max_parallel`` at once; after a
    failure none starts, the running ones finish and the first failure is raised."""
    stop = threading.Event()
    interrupt = threading.Event()  # the caller was interrupted: so are the running reindexes
    guard = threading.Lock()
    results: list[ReindexResult] = []
    errors: list[BaseException] = []

    def run(model: type, spec: IndexSpec, current: str | None) -> None:
        if stop.is_set():
            return
        try:
            with interruptible(interrupt):
                result = one(model, spec, current, stop)
        except BaseException as exc:
            with guard:
                if errors:
                    log.error("reindexing %s failed too: %s", spec.alias, exc)
                errors.append(exc)
            return
        with guard:
            results.append(result)

    workers = min(max_parallel, len(work))
    if workers:
        with ThreadPoolExecutor(workers, thread_name_prefix="esmapper-reindex") as pool:
            try:
                for future in [pool.submit(run, model, *found) for model, found in work]:
                    future.result()
            except BaseException:
                # e.g. Ctrl-C (it reaches this thread only): none starts, and the running
                # ones stop as a reindex does on Ctrl-C (at their next task poll: the task
                # cancelled, the run rolled back), waited for before it is raised
                stop.set()
                interrupt.set()
                raise
    if errors:
        raise errors[0]
    return results
