"""Version upgrades of ``versioned`` indexes: reindex ``<alias>-vK`` into ``<alias>-vN``.

:func:`reindex` runs, under the lock ``reindex:<alias>`` (20 min TTL, renewed while it runs;
FEATURES IM-13), these phases (FEATURES IM-2, IM-6, IM-8, IM-9, P-15):

1. **prepare**: ``PUT /<alias>-vN`` with the current mapping and settings and no alias (an
   empty ``-vN`` left by ``configure_indexes`` is reused; a non-empty one, the leftover of
   an interrupted run, is deleted first so every document gets the current script).
2. **copy**: ``POST /_reindex`` from ``-vK`` to ``-vN`` with the model's reindex scripts
   (the scripts of the versions K < v <= N: one is sent as is, several are wrapped into
   ``void f000(def ctx) {...}`` functions called in order). How a pass runs (a polled task,
   or synchronously on servers without tasks; external versions; ``conflicts=proceed``):
   :mod:`esmapper.indexes._reindex_pass`. The old index keeps serving reads and writes.
3. **catch_up** (``HasDates`` models): the documents with ``updated_utc`` >= the copy's
   start (the mapper's clock minus ``catch_up_margin``, for clock skew between writers)
   are copied again, while writes still go to the old index.
4. **final_catch_up**: ``PUT /<alias>-vK/_block/write``, then the documents changed since
   the catch-up started are copied (models without dates: every document; unchanged ones
   are skipped as version conflicts). From the block on, writes through the alias fail
   with 403 ``cluster_block_exception`` until the swap (they were not applied: retry them).
5. **verify**: refresh both indexes and reconcile ids, always (whatever the counts: a
   script that drops documents makes them equal or lower): every id the write-blocked old
   index no longer has is deleted from the new one (an id scroll of both, ``_bulk``
   deletes), so a document deleted during the run never comes back. Then count both.
6. **swap**: first the decision of step 7 is written into ``-vK``'s mapping ``_meta``
   (``PUT /<alias>-vK/_mapping``, :func:`esmapper.indexes.leftovers.mark_replaced`), so a
   process killed after the swap leaves a leftover that ``migrate`` recognises and deletes
   (:mod:`esmapper.indexes.leftovers`); then one atomic ``POST /_aliases`` (remove the alias
   from ``-vK`` with ``must_exist``, add it to ``-vN``), sent once. Writes now go to ``-vN``.
7. **delete_old**: ``DELETE /<alias>-vK`` only when ``delete_old`` and the new count >= the
   old count (FEATURES IM-8; fewer happens when a script drops documents); otherwise the
   old index stays, write-blocked, for inspection (its marker says why). A 404 (deleted
   meanwhile) is fine.
8. custom-field models (``HasCustomFields``): ``idx`` is copied as stored (slots belong to
   the tenant, not to the index version); when reindex scripts ran, after the lock is
   released, ``mapper.custom_fields(Model).rebuild_idx()`` recomputes it and rewrites the
   documents whose ``idx`` a script made stale (conditional partial updates).

Unknown outcomes (a dropped connection, a timeout, an unreadable answer). Every write of a
run is sent once, without the transport's retries (:mod:`esmapper._transport`), and a lost
answer is settled by reading the state back, never by a blind resend: a lost ``PUT
/<alias>-vN`` or write block is checked (``HEAD``, ``_settings``) and sent once more only if
it is missing; a lost ``_reindex`` pass is run once more (external versions make that
harmless); a lost bulk of deletes is settled by scrolling the ids again. A lost answer to
the **swap** reads ``GET /_alias/<alias>`` back: on ``-vN`` the swap happened and the run
continues as a success (the new index is never deleted); still on ``-vK`` it did not, and
the run fails and rolls back as below; anything else (no alias, another index, the read
fails) raises :class:`ReindexError` without deleting anything or removing the write block.

Blocking the old index before the last pass (instead of catching up after the swap, as the
reference implementation does) means no write made during the run can be lost or reverted
by a late copy, and reads never see the new index missing recent writes.

Failures. Before the swap any failure (a failing script, a refused document, a count
mismatch, a lost lock, any exception) removes the write block, leaves the old index serving
behind the alias, and deletes the new index (``keep_failed_index=True`` keeps it for
inspection); pass failures raise :class:`ReindexError`, other exceptions propagate. A
process killed while the block is on leaves the old index write-blocked: run the reindex
again (it clears a leftover block first) or ``PUT /<alias>-vK/_settings
{"index.blocks.write": false}``. A process killed after the swap, before deleting the old
index, leaves it behind the alias no more: ``esmapper status`` reports it and ``migrate``
deletes it (:mod:`esmapper.indexes.leftovers`). The marker written before the swap stays
on an old index whose swap failed; it is harmless (an index behind the alias is never a
leftover) and the next reindex overwrites it.

Limitations. Versions (``primary_term:seq_no``) are per index: a document read before the
swap and saved after it gets :class:`~esmapper.errors.VersionConflictError` (re-read and
retry). For ``HasDates`` models, a write that does not bump ``updated_utc`` (a raw client
write) during the copy or catch-up is not caught up. Time-series models are not reindexed
(FEATURES IM-3/IM-4).
"""

from __future__ import annotations

import datetime as _dt
import logging
import re
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs
from elasticsearch import ApiError, Elasticsearch, NotFoundError, TransportError

from esmapper._transport import is_unknown_outcome, once
from esmapper.errors import IndexConfigurationError
from esmapper.indexes._reindex_pass import (
    PassOutcome,
    alias_target,
    count,
    delete_extras,
    prepare_target,
    run_pass,
    set_write_block,
    write_blocked,
)
from esmapper.indexes.configure import index_state
from esmapper.indexes.errors import ReindexError
from esmapper.indexes.leftovers import mark_replaced
from esmapper.indexes.spec import IndexSpec
from esmapper.locks import Lock, LockProvider
from esmapper.model.codec import format_datetime

if TYPE_CHECKING:
    from esmapper.mapper import Mapper

__all__ = [
    "ReindexProgress",
    "ReindexResult",
    "compose_reindex_script",
    "reindex",
    "reindex_outdated",
]

log = logging.getLogger("esmapper.indexes")

LOCK_TTL = _dt.timedelta(minutes=20)
LOCK_WAIT = _dt.timedelta(minutes=30)
_RENEW_EVERY = 60.0  # seconds between lock renewals while a pass runs (at most ttl/3)
# phase -> (percent at its start, percent at its end), after FEATURES IM-14
_PERCENT = {
    "prepare": (0, 0),
    "copy": (0, 85),
    "catch_up": (85, 89),
    "final_catch_up": (89, 90),
    "verify": (90, 91),
    "swap": (91, 92),
    "delete_old": (99, 99),
    "done": (100, 100),
}


@attrs.frozen(slots=True)
class ReindexProgress:
    """A progress report: ``done`` of ``total`` documents in ``phase`` (``prepare``,
    ``copy``, ``catch_up``, ``final_catch_up``, ``verify``, ``swap``, ``delete_old``,
    ``done``); ``total`` is 0 when unknown (a server without tasks reports a pass's start
    and end only). ``percent`` follows FEATURES IM-14; ``message`` is for humans."""

    done: int
    total: int
    phase: str
    alias: str = ""
    percent: int = 0
    message: str = ""


@attrs.frozen(slots=True)
class ReindexResult:
    """What :func:`reindex` did for one model.

    ``status``: ``reindexed``, ``up_to_date`` (the alias already pointed at
    ``new_index``) or ``failed`` (then :class:`ReindexError` carries this result).
    ``swapped``: whether the alias now points at ``new_index``. ``copied`` / ``caught_up``:
    documents written by the copy and by the catch-up passes; ``removed``: documents deleted
    from the old index during the run and so from the new one. ``old_count`` /
    ``new_count``: the counts compared before the swap; ``old_deleted``: whether the old
    index was deleted. ``failures``: Elasticsearch's failures. ``seconds``: duration.
    """

    model: str
    alias: str
    old_index: str | None
    new_index: str
    status: str
    swapped: bool = False
    copied: int = 0
    caught_up: int = 0
    removed: int = 0
    old_count: int = 0
    new_count: int = 0
    old_deleted: bool = False
    failures: tuple[dict[str, Any], ...] = ()
    seconds: float = 0.0


def compose_reindex_script(scripts: Mapping[int, str], current: int, target: int) -> str | None:
    """The Painless source for a reindex from version ``current`` to ``target``.

    The scripts of the versions ``current < v <= target`` in version order (FEATURES IM-6):
    none gives ``None``, one is returned as is, several are wrapped as
    ``void f000(def ctx) { ... }`` ... and called in order: ``f000(ctx); f001(ctx); ``.
    """
    chosen = [scripts[v] for v in sorted(scripts) if current < v <= target]
    if not chosen:
        return None
    if len(chosen) == 1:
        return chosen[0]
    functions = "".join(f"void f{i:03d}(def ctx) {{ {s} }}\n" for i, s in enumerate(chosen))
    return functions + "".join(f"f{i:03d}(ctx); " for i in range(len(chosen)))


@attrs.define(slots=True, eq=False)
class _Run:
    """One reindex ``old -> new`` of ``spec``: reports progress and renews the lock."""

    mapper: Mapper
    spec: IndexSpec
    lock: Lock
    progress: Callable[[ReindexProgress], None] | None
    old: str
    new: str
    script: str | None
    renewed: float = attrs.field(factory=time.monotonic)

    @property
    def client(self) -> Elasticsearch:
        return self.mapper.client

    def report(self, phase: str, done: int = 0, total: int = 0, message: str = "") -> None:
        if time.monotonic() - self.renewed >= min(_RENEW_EVERY, self.lock.ttl.total_seconds() / 3):
            self.lock.renew()  # raises LockError if the lock was lost
            self.renewed = time.monotonic()
        low, high = _PERCENT[phase]
        percent = low + (high - low) * min(done, total) // total if total > 0 else low
        if self.progress is not None:
            self.progress(ReindexProgress(done, total, phase, self.spec.alias, percent, message))

    def copy(self, phase: str, query: dict[str, Any] | None) -> PassOutcome:
        """One ``_reindex`` pass from ``old`` to ``new`` (``query``: only those documents)."""
        source: dict[str, Any] = {"index": self.old}
        if query is not None:
            source["query"] = query
        body: dict[str, Any] = {
            "source": source,
            "dest": {"index": self.new, "version_type": "external"},
        }
        if self.script is not None:
            body["script"] = {"source": self.script, "lang": "painless"}
        outcome = run_pass(
            self.client, body, progress=lambda done, total: self.report(phase, done, total)
        )
        self.report(
            phase,
            outcome.total,
            outcome.total,
            f"Total: {outcome.total:,} Copied: {outcome.copied:,} VersionConflicts: "
            f"{outcome.version_conflicts:,} Failures: {len(outcome.failures)}",
        )
        return outcome

    def since(self, start: _dt.datetime) -> dict[str, Any] | None:
        """The catch-up query: changed since ``start`` (``None``: every document)."""
        if not self.spec.info.has_dates:
            return None
        return {"range": {"updated_utc": {"gte": format_datetime(start)}}}


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
    mapper: Mapper,
    model: type,
    *,
    progress: Callable[[ReindexProgress], None] | None = None,
    lock_wait: _dt.timedelta = LOCK_WAIT,
    lock_ttl: _dt.timedelta = LOCK_TTL,
    delete_old: bool = True,
    keep_failed_index: bool = False,
    catch_up_margin: _dt.timedelta = _dt.timedelta(minutes=1),
) -> ReindexResult:
    """Reindex ``model``'s ``versioned`` index into its current version; see the module
    docstring for every request sent.

    ``progress`` receives :class:`ReindexProgress` reports (an exception raised by it aborts
    the reindex like any failure). Raises :class:`~esmapper.errors.LockError` when another
    process holds ``reindex:<alias>`` for longer than ``lock_wait``,
    :class:`~esmapper.errors.IndexConfigurationError` for a model that is not ``versioned``
    or an alias that is missing, points at several indexes or at a newer version, and
    :class:`~esmapper.indexes.errors.ReindexError` when a pass fails. Returns
    ``status="up_to_date"`` without writing when the alias already points at the current
    version (e.g. another process finished the same reindex while this one waited).
    """
    spec = mapper.spec(model)
    if spec.kind != "versioned":
        raise IndexConfigurationError(
            f"{spec.info.name}: only versioned indexes are reindexed (kind={spec.kind!r})",
            index=spec.alias,
        )
    client = mapper.client
    new = spec.physical_name()
    locks = LockProvider(client, index_prefix=mapper.index_prefix, clock=mapper.clock)
    with locks.acquire(f"reindex:{spec.alias}", lock_ttl, wait=lock_wait) as lock:
        old = alias_target(client, spec)
        if old is None:
            raise IndexConfigurationError(
                f"{spec.info.name}: alias {spec.alias!r} does not exist; call "
                "configure_indexes() first",
                index=spec.alias,
            )
        if old == new:
            return ReindexResult(spec.info.name, spec.alias, old, new, "up_to_date")
        old_version = _version_of(spec, old)
        if old_version > spec.version:
            raise IndexConfigurationError(
                f"{spec.info.name}: alias {spec.alias!r} points at {old!r}, newer than the "
                f"model's version {spec.version}; refusing to downgrade",
                index=spec.alias,
            )
        script = compose_reindex_script(spec.options.reindex_scripts, old_version, spec.version)
        run = _Run(mapper, spec, lock, progress, old, new, script)
        result = _reindex(
            run, delete_old=delete_old, keep_failed_index=keep_failed_index, margin=catch_up_margin
        )
    if script is not None and spec.info.custom_fields:
        # a script may have changed custom_fields: idx is recomputed where it went stale
        mapper.custom_fields(model).rebuild_idx()
    return result


def _reindex(
    run: _Run, *, delete_old: bool, keep_failed_index: bool, margin: _dt.timedelta
) -> ReindexResult:
    client, spec, old, new, clock = run.client, run.spec, run.old, run.new, run.mapper.clock
    began = time.monotonic()
    result = ReindexResult(spec.info.name, spec.alias, old, new, "failed")

    def fail(message: str, failures: tuple[dict[str, Any], ...]) -> ReindexError:
        done = attrs.evolve(result, failures=failures, seconds=time.monotonic() - began)
        return ReindexError(f"reindex {old} -> {new} failed: {message}", result=done)

    if write_blocked(client, old):
        log.warning("removing the write block a crashed reindex left on %s", old)
        set_write_block(client, old, False)
    blocked = False
    rollback = True  # False once the alias may already point at the new index
    try:  # until the swap, any failure leaves the old index serving and drops the new one
        run.report("prepare", message=f"Reindexing {old} -> {new}")
        prepare_target(client, spec, new)
        client.indices.refresh(index=old)
        since = clock() - margin
        first = run.copy("copy", None)
        if first.failures:
            raise fail("the copy reported failures; the old index still serves", first.failures)
        caught_up = 0
        if spec.info.has_dates:
            since, previous = clock() - margin, since
            client.indices.refresh(index=old)
            second = run.copy("catch_up", run.since(previous))
            if second.failures:
                raise fail("the catch-up reported failures", second.failures)
            caught_up = second.copied
        blocked = True  # before sending: a block whose answer was lost is removed too
        set_write_block(client, old, True)
        client.indices.refresh(index=old)
        last = run.copy("final_catch_up", run.since(since))
        result = attrs.evolve(result, copied=first.copied, caught_up=caught_up + last.copied)
        if last.failures:
            raise fail("the final catch-up reported failures", last.failures)
        run.report("verify")
        client.indices.refresh(index=[old, new])
        # Always, whatever the counts (a script may drop documents): a document deleted from
        # the old index after it was copied must not come back in the new one.
        result = attrs.evolve(result, removed=delete_extras(client, old, new))
        client.indices.refresh(index=new)
        old_count, new_count = count(client, old), count(client, new)
        result = attrs.evolve(result, old_count=old_count, new_count=new_count)
        run.report("verify", 1, 1, f"Old Docs: {old_count:,} New Docs: {new_count:,}")
        keep = _keep_reason(delete_old, old_count, new_count, new)
        mark_replaced(client, old, new, keep=keep)  # before the swap: a crash after it is known
        run.report("swap", message=f"Updating alias {spec.alias}: remove {old}, add {new}")
        try:
            swap = once(client).indices.update_aliases(
                actions=[
                    {"remove": {"index": old, "alias": spec.alias, "must_exist": True}},
                    {"add": {"index": new, "alias": spec.alias}},
                ]
            )
            refused = swap.body.get("errors")  # a partial answer (noida-db); ES is atomic
            unknown: BaseException | None = None
        except TransportError as exc:
            if not is_unknown_outcome(exc):
                raise
            refused, unknown = False, exc
        if refused or unknown is not None:
            # Read the alias back: never delete the index it may already point at.
            target = _swap_target(client, spec, old, new)
            if target is None:
                rollback = False
                raise fail(
                    f"the alias swap's outcome is unknown ({unknown or 'a partial answer'}) and "
                    f"{spec.alias!r} points neither at {old} alone nor at {new} alone; nothing "
                    f"was deleted and {old} is still write-blocked: inspect the alias, point it "
                    f"at the index holding the documents and remove the block by hand",
                    tuple(swap.body.get("action_results", ())) if refused else (),
                )
            if target == old:
                if refused:
                    raise fail(
                        "the alias swap was refused", tuple(swap.body.get("action_results", ()))
                    )
                raise fail(
                    f"the alias swap's answer was lost ({unknown}) and {spec.alias!r} still "
                    f"points at {old}: the swap did not happen; the old index still serves",
                    (),
                ) from unknown
            log.warning(
                "the alias swap's answer was %s; read back: %s points at %s",
                f"lost ({unknown})" if unknown is not None else "partial",
                spec.alias,
                new,
            )
    except BaseException:
        if rollback:
            if blocked:
                set_write_block(client, old, False)
            if not keep_failed_index:
                client.options(ignore_status=404).indices.delete(index=new)
        raise
    result = attrs.evolve(result, swapped=True)
    run.report("swap", 1, 1, f"Updated alias {spec.alias}: removed {old}, added {new}")
    deleted = keep is None
    if deleted:
        run.report("delete_old", message=f"Deleting index {old}")
        try:
            once(client).indices.delete(index=old)
        except NotFoundError:
            log.warning("%s was already deleted", old)
        except TransportError as exc:
            if not is_unknown_outcome(exc) or client.indices.exists(index=old):
                raise
            log.warning("deleting %s had an unknown outcome (%s); it is gone", old, exc)
    elif delete_old:  # e.g. a script dropped documents (ctx.op = 'noop')
        log.warning("kept %s (%d documents): %s", old, result.old_count, keep)
    run.report("done", message=f"Reindexed {old} -> {new}")
    return attrs.evolve(
        result, status="reindexed", old_deleted=deleted, seconds=time.monotonic() - began
    )


def _keep_reason(delete_old: bool, old_count: int, new_count: int, new: str) -> str | None:
    """Why the old index is kept after the swap, ``None`` when it is deleted."""
    if not delete_old:
        return "delete_old=False"
    if new_count < old_count:
        return f"{new} has {new_count} documents, fewer than its {old_count}"
    return None


def _swap_target(client: Elasticsearch, spec: IndexSpec, old: str, new: str) -> str | None:
    """After a swap whose outcome is unknown: ``new`` if the alias points at it alone (the
    swap happened), ``old`` if it still points at it alone (it did not), else ``None``
    (also when the alias cannot be read)."""
    try:
        target = alias_target(client, spec)
    except (IndexConfigurationError, TransportError, ApiError) as exc:
        log.error("reading alias %s back after the swap failed: %s", spec.alias, exc)
        return None
    return target if target in (old, new) else None


def reindex_outdated(
    mapper: Mapper,
    models: Iterable[type] | None = None,
    *,
    progress: Callable[[ReindexProgress], None] | None = None,
    lock_wait: _dt.timedelta = LOCK_WAIT,
) -> list[ReindexResult]:
    """Reindex, one after the other, every ``versioned`` model (of ``models``, default all
    registered) whose alias points at an older version (FEATURES IM-27).

    Sends ``GET /_alias/<alias>`` per model, then :func:`reindex` for the outdated ones;
    time-series and plain models are skipped. Raises what :func:`reindex` raises (the
    first failure stops the run); returns the results of the reindexed models.
    """
    results = []
    for model in list(models) if models is not None else mapper.models:
        spec = mapper.spec(model)
        if spec.kind != "versioned":
            continue
        current, _ = index_state(mapper.client, spec)
        if current is None or current == spec.physical_name():
            continue
        results.append(reindex(mapper, model, progress=progress, lock_wait=lock_wait))
    return results
