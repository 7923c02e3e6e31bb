"""One reindex ``<alias>-vK -> <alias>-vN`` under its lock: the phases, progress and result.

:func:`run_phases` is the body of :func:`esmapper.indexes.reindex.reindex` once the lock is
held and the leftovers of a killed run are cleared; the module docstring of
:mod:`esmapper.indexes.reindex` describes every phase and request.
"""

from __future__ import annotations

import datetime as _dt
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs
from elasticsearch import ApiError, Elasticsearch, NotFoundError, TransportError

from esmapper._transport import is_unknown_outcome, once
from esmapper.errors import LockError
from esmapper.indexes._ensure import put_alias
from esmapper.indexes._fence import fence_name
from esmapper.indexes._idx_owed import owe_idx_rebuild
from esmapper.indexes._meta import put_meta
from esmapper.indexes._reindex_errors import record_failures
from esmapper.indexes._reindex_fence import (
    aliases_of,
    claim,
    drop_target,
    new_marker,
    serving_aliases,
    swap_conditions,
)
from esmapper.indexes._reindex_pass import (
    CANCELLED,
    PassOutcome,
    PassStalled,
    Throttle,
    count,
    delete_extras,
    prepare_target,
    refreshes_itself,
    run_pass,
)
from esmapper.indexes._reindex_quiet import WriteMarks, unchanged, write_marks, written_since
from esmapper.indexes._reindex_resume import (
    RECORD,
    Record,
    Resume,
    decide,
    fingerprint,
    read_record,
    source_uuid,
)
from esmapper.indexes._reindex_stale import (
    floor_of,
    recreate_ids,
    seq_no_query,
    stale_ids,
    written_ids,
)
from esmapper.indexes.blocks import block_writes, unblock_own, write_blocked
from esmapper.indexes.errors import ReindexError
from esmapper.indexes.leftovers import mark_replaced
from esmapper.indexes.pipelines import reindex_dest
from esmapper.indexes.spec import IndexSpec
from esmapper.locks import DEFAULT_TTL, Lock
from esmapper.model.codec import format_datetime

if TYPE_CHECKING:
    from esmapper._context import Context

__all__ = ["LOCK_TTL", "LOCK_WAIT", "ReindexProgress", "ReindexResult", "Run", "run_phases"]

log = logging.getLogger("esmapper.indexes")

#: the defaults of a reindex's lock (``reindex:<alias>``): its time to live, and how long
#: a reindex waits for another one holding it (a versioned model's and a time-series one's)
LOCK_TTL = DEFAULT_TTL
LOCK_WAIT = _dt.timedelta(minutes=30)

_EXTERNAL: dict[str, Any] = {"version_type": "external"}
_IDS_PER_PASS = 10_000  # ids in the ``ids`` query of one pass

# phase -> (percent at its start, percent at its end)
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
    and end only). ``percent`` rises through fixed ranges per phase; ``message`` is for
    humans."""

    done: int
    total: int
    phase: str
    alias: str = ""
    percent: int = 0
    message: str = ""


@attrs.frozen(slots=True)
class ReindexResult:
    """What :func:`~esmapper.indexes.reindex.reindex` did for one model.

    ``status``: ``reindexed``, ``up_to_date`` (the alias already pointed at
    ``new_index``) or ``failed`` (then :class:`ReindexError` carries this result).
    ``swapped``: whether the alias now points at ``new_index``. ``copied`` / ``caught_up``:
    documents written by the copy and by the catch-up passes; ``removed``: documents deleted
    from the old index during the run and so from the new one. ``old_count`` /
    ``new_count``: the counts compared before the swap; ``old_deleted``: whether the old
    index was deleted. ``failures``: Elasticsearch's failures. ``seconds``: duration.
    ``blocked_seconds``: how long writes through the alias were refused (403) because of
    this run, from its write block on the old index to the alias swap (or to the block's
    removal when the run failed). ``cleared_block_seconds``: when the run first removed a
    write block a killed reindex had left on the old index, how long that block had been
    on (``None``: there was none). ``error_index`` / ``error_count``: where the documents a
    pass could not copy were recorded, and how many (:mod:`esmapper.indexes._reindex_errors`;
    ``None`` / 0: none failed). ``resumed_from``: when the run reused the new index an
    interrupted run had left (same old index, same script, pipeline, mapping and settings:
    :mod:`esmapper.indexes._reindex_resume`), the start of that run's copy; ``copied`` is
    then what the rerun's first pass wrote (the documents missing or changed since),
    ``None`` when the run copied everything.

    Time-series models: the totals over the partitions reindexed, one result each in
    ``partitions`` (oldest version, then oldest period first); ``old_index`` /
    ``new_index`` are the patterns ``<alias>-v<K>-*`` / ``<alias>-v<N>-*``;
    ``blocked_seconds`` is the longest window of one partition (each blocks only its
    period's writes), ``cleared_block_seconds`` the longest leftover block lifted and
    ``resumed_from`` the earliest start a partition resumed from.
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
    blocked_seconds: float = 0.0
    cleared_block_seconds: float | None = None
    partitions: tuple[ReindexResult, ...] = ()
    error_index: str | None = None
    error_count: int = 0
    resumed_from: _dt.datetime | None = None


@attrs.define(slots=True, eq=False)
class Run:
    """One reindex ``old -> new`` of ``spec``: reports progress, checks the lock (renewed by
    its heartbeat, :mod:`esmapper.locks`) and builds the result.

    ``actions``: the alias swap's actions (default: move ``spec.alias`` from ``old`` to
    ``new``); ``probe``: the alias read back after a swap whose answer was lost (default
    ``spec.alias``). A time-series partition moves all its aliases and probes its dated
    alias (:mod:`esmapper.indexes.partition_reindex`).
    """

    ctx: Context
    spec: IndexSpec
    lock: Lock
    progress: Callable[[ReindexProgress], None] | None
    old: str
    new: str
    script: str | None
    throttle: Throttle = attrs.field(factory=Throttle)
    actions: tuple[dict[str, Any], ...] = ()
    probe: str = ""
    result: ReindexResult = attrs.field(init=False)
    began: float = attrs.field(init=False, factory=time.monotonic)
    blocked_at: float | None = attrs.field(init=False, default=None)
    rollback: bool = attrs.field(init=False, default=True)
    """False once the alias may already point at the new index."""
    created: int = attrs.field(init=False, default=0)
    """Documents the passes created in ``new`` (empty when the copy started): its count."""
    counted: bool = attrs.field(init=False, default=True)
    """Whether ``created`` is exact (no pass was run again after an unknown outcome)."""
    marks: WriteMarks | None = attrs.field(init=False, default=None)
    """The old index's primaries read before the copy (:mod:`esmapper.indexes._reindex_quiet`):
    their ``max_seq_no`` (every document written since has a ``_seq_no`` above the lowest)
    and the counters that prove, read again later, that nothing was written since."""
    marker: str | None = attrs.field(init=False, default=None)
    """The run's marker alias on ``new``, its fencing token
    (:mod:`esmapper.indexes._reindex_fence`); ``None`` until it is claimed."""
    resume: Resume | None = attrs.field(init=False, default=None)
    """How the run goes on from the ``new`` an interrupted run left (:meth:`prepare`);
    ``None``: a full copy."""
    prepared: bool = attrs.field(init=False, default=False)

    def __attrs_post_init__(self) -> None:
        self.result = ReindexResult(
            self.spec.info.name, self.spec.alias, self.old, self.new, "failed"
        )

    @property
    def client(self) -> Elasticsearch:
        return self.ctx.client

    @property
    def target(self) -> str:
        """Where the run deletes documents of ``new``: through its marker alias, so a delete
        sent after another run took ``new`` over finds no index (fenced)."""
        return self.marker or self.new

    def swap_actions(self) -> list[dict[str, Any]]:
        """The one atomic ``POST /_aliases`` of the swap: the run's fence (its marker must
        still be on ``new``: :func:`~esmapper.indexes._reindex_fence.swap_conditions`), then
        the model's aliases move from ``old`` to ``new`` (``actions``, default
        ``spec.alias``), ``old``'s fence alias is removed (it exists: :func:`run_phases` made
        sure of it right before) and ``new``'s added
        (:func:`~esmapper.indexes._fence.fence_name`): from that instant a write conditioned
        on a version read from ``old`` is refused, never applied to ``new``."""
        actions: list[dict[str, Any]] = (
            [dict(a) for a in self.actions]
            if self.actions
            else [
                {"remove": {"index": self.old, "alias": self.spec.alias, "must_exist": True}},
                {"add": {"index": self.new, "alias": self.spec.alias}},
            ]
        )
        old_fence, new_fence = fence_name(self.old), fence_name(self.new)
        named = {(kind, body["alias"]) for a in actions for kind, body in a.items()}
        if ("remove", old_fence) not in named:
            actions.append({"remove": {"index": self.old, "alias": old_fence, "must_exist": True}})
        if ("add", new_fence) not in named:
            actions.append({"add": {"index": self.new, "alias": new_fence}})
        return [*swap_conditions(self.new, self.marker), *actions]

    @property
    def fingerprint(self) -> str:
        """What decides how a copied document looks (the script, the pipeline, ``new``'s
        mapping and settings): :func:`~esmapper.indexes._reindex_resume.fingerprint`."""
        return fingerprint(self.spec, self.script, reindex_dest(self.spec, {"index": self.new}))

    def prepare(self) -> None:
        """Make ``new`` ready for the copy, once
        (:func:`~esmapper.indexes._reindex_pass.prepare_target`). A non-empty ``new`` left
        by an interrupted run is kept when its record matches this run
        (:func:`~esmapper.indexes._reindex_resume.decide`: ``GET /<new>/_mapping``, ``GET
        /<old>/_settings/index.uuid``), setting :attr:`resume`; else it is built again (the
        reason is logged)."""
        if self.prepared:
            return

        def reuse() -> bool:
            found = decide(
                read_record(self.client, self.new),
                source=self.old,
                source_uuid=source_uuid(self.client, self.old),
                fingerprint=self.fingerprint,
                dated=self.spec.info.updated_field is not None,
            )
            if isinstance(found, str):
                log.warning("%s: not resuming the interrupted reindex: %s", self.new, found)
                return False
            self.resume = found
            return True

        prepare_target(self.client, self.spec, self.new, reuse=reuse)
        self.prepared = True

    def record(self, record: Record) -> None:
        """Write ``record`` into ``new``'s ``_meta`` through the run's marker alias (a run
        another one took over cannot: 404), :func:`~esmapper.indexes._meta.put_meta`."""
        put_meta(self.client, self.target, RECORD, record.to_meta())

    def update(self, **changes: Any) -> None:
        self.result = attrs.evolve(self.result, **changes)

    def blocked_for(self) -> float:
        """Seconds since the write block was sent (0 before it)."""
        return 0.0 if self.blocked_at is None else time.monotonic() - self.blocked_at

    def fail(self, message: str, failures: tuple[dict[str, Any], ...]) -> ReindexError:
        done = attrs.evolve(
            self.result,
            failures=failures,
            seconds=time.monotonic() - self.began,
            blocked_seconds=self.blocked_for(),
        )
        if done.error_index is not None:
            message += f" ({done.error_count} document(s) recorded in {done.error_index})"
        return ReindexError(f"reindex {self.old} -> {self.new} failed: {message}", result=done)

    def report(self, phase: str, done: int = 0, total: int = 0, message: str = "") -> None:
        self.lock.check()  # raises LockError when the heartbeat found the lock lost
        low, high = _PERCENT[phase]
        percent = low + (high - low) * min(done, total) // total if total > 0 else low
        if self.progress is not None:
            self.progress(ReindexProgress(done, total, phase, self.spec.alias, percent, message))

    def copy(
        self, phase: str, query: dict[str, Any] | None, *, create: bool = False
    ) -> PassOutcome:
        """One ``_reindex`` pass from ``old`` to ``new`` (``query``: only those documents)
        with external versions, or with ``op_type: create`` when ``create`` (only documents
        missing from ``new`` are written); a stalled pass raises :class:`ReindexError`
        naming the task and how far it got, and so does a pass whose task someone else
        cancelled (it copied an unknown part). Documents the pass could not copy are recorded
        in the error index (:mod:`esmapper.indexes._reindex_errors`) before the caller fails
        the run."""
        source: dict[str, Any] = {"index": self.old}
        if query is not None:
            source["query"] = query
        dest = (
            {"index": self.new, "op_type": "create"} if create else _EXTERNAL | {"index": self.new}
        )
        body: dict[str, Any] = {"source": source, "dest": reindex_dest(self.spec, dest)}
        if self.script is not None:
            body["script"] = {"source": self.script, "lang": "painless"}
        try:
            outcome = run_pass(
                self.client,
                body,
                progress=lambda done, total: self.report(phase, done, total),
                throttle=self.throttle,
            )
        except PassStalled as exc:
            failure = {"status": None, "type": "reindex_stalled", "reason": str(exc)}
            raise self.fail(f"the {phase} pass stalled: {exc}", (failure,)) from exc
        self.created += outcome.created
        self.counted = self.counted and outcome.exact
        if outcome.failures:  # the failed documents, for inspection (the run fails next)
            name, written = record_failures(
                self.client,
                self.spec,
                self.old,
                self.new,
                outcome.failures,
                phase=phase,
                now=self.ctx.clock,
            )
            if name is not None:
                self.update(error_index=name, error_count=self.result.error_count + written)
        cancelled = [f for f in outcome.failures if f.get("type") == CANCELLED]
        if cancelled:  # part of the documents copied, and no failure says which
            raise self.fail(
                f"the {phase} pass was stopped: {cancelled[0]['reason']} (by another process: "
                "an operator, or a rerun that took over this run's lapsed lock)",
                outcome.failures,
            )
        self.report(
            phase,
            outcome.total,
            outcome.total,
            f"Total: {outcome.total:,} Copied: {outcome.copied:,} VersionConflicts: "
            f"{outcome.version_conflicts:,} Failures: {len(outcome.failures)}",
        )
        return outcome

    @property
    def seq_nos(self) -> dict[str, int] | None:
        """The primaries' ``max_seq_no`` before the copy (``None``: unknown)."""
        return None if self.marks is None else self.marks.seq_nos

    def quiet(self) -> WriteMarks | None:
        """Reads the old index's primaries again (one ``GET /<old>/_stats``): the marks
        when they prove nothing was written to it since :attr:`marks` (before the copy's
        refresh), else ``None`` (writes went on, or the figures cannot tell)."""
        now = write_marks(self.client, self.old)
        return now if unchanged(self.marks, now) else None

    def recreate_stale(self, started: _dt.datetime) -> int:
        """Under the block, after the final pass (every model): replace the copies of
        documents removed and added again under their id during the run (the passes
        skipped them as version conflicts, see :mod:`esmapper.indexes._reindex_stale`).
        Called only when a catch-up pass skipped documents: such a document was added again
        after its removed namesake was read by a pass, at or after the copy's start, so
        a catch-up pass saw it and skipped it: the first catch-up (its window starts with
        the copy) for a re-add it could see, else the final pass (a later write, or one the
        first catch-up could not see yet, is in its window, and it follows a refresh).
        Compares the documents of the old index written since the copy began (none when
        no shard's ``max_seq_no`` moved; else ``_seq_no`` above the lowest of
        :attr:`seq_nos`; ``HasDates`` models: also ``updated_utc`` >= ``started``, except
        in a resumed run, whose window spans the time between two runs)
        with their copies, deletes the stale copies and copies them again with
        ``op_type: create``; returns how many were created. A failing pass raises
        :class:`ReindexError`."""
        now = write_marks(self.client, self.old).seq_nos
        if self.seq_nos is not None and now == self.seq_nos:
            return 0  # nothing was written to the old index since the copy began
        stale = stale_ids(
            self.client,
            self.old,
            self.new,
            spec=self.spec,
            floor=floor_of(self.seq_nos),
            # a resumed run's window spans the time between two runs: a document added
            # again there may carry any updated date (an import): by ``_seq_no`` alone
            since=None if self.resume is not None else self.since(started),
            scripted=self.script is not None,
        )
        if not stale:
            return 0
        log.warning(
            "%s: %d document(s) removed and added again during the reindex; copying them again: %s",
            self.old,
            len(stale),
            ", ".join(stale[:10]) + (" ..." if len(stale) > 10 else ""),
        )
        recreate_ids(self.client, self.target, stale, spec=self.spec)
        self.counted = False  # ``created`` counted the deleted copies: count ``new``
        created = 0
        for start in range(0, len(stale), _IDS_PER_PASS):
            ids = [str.__str__(i) for i in stale[start : start + _IDS_PER_PASS]]  # (no Id)
            outcome = self.copy("final_catch_up", {"ids": {"values": ids}}, create=True)
            if outcome.failures:
                raise self.fail("copying documents added again failed", outcome.failures)
            created += outcome.created
        return created

    def copy_since(self, start: _dt.datetime) -> PassOutcome:
        """The first pass of a run resumed after a completed copy (its outcome, the sum of
        its passes): the documents changed since ``start`` (:meth:`since`) *or* written
        since that copy began by their ``_seq_no`` (above the lowest of :attr:`seq_nos`,
        the recorded ``max_seq_no``: every write since has a higher one, whatever updated
        date it carries). Between two runs lie minutes or days, not a copy's duration: an
        import or restore that keeps its documents' own dates, a patch whose caller gave
        one, or a clock far behind would otherwise go unseen. One pass with both in a
        ``bool`` ``should`` where the server answers a ``_seq_no`` range
        (:func:`~esmapper.indexes._reindex_stale.seq_no_query`: two counts of ``old``),
        else the date pass and then passes of the ``ids`` listed by their ``_seq_no``
        (:func:`~esmapper.indexes._reindex_stale.written_ids`); an unknown floor reads
        every document. A superset of the delta (with several shards the lowest floor
        takes in some older documents of the others): what is already copied is skipped
        by its version. Stops at the first pass with failures."""
        dated, floor = self.since(start), floor_of(self.seq_nos)
        if dated is None or floor < 0:
            return self.copy("copy", None)
        written = seq_no_query(self.client, self.old, floor)
        if written is not None:
            return self.copy(
                "copy", {"bool": {"should": [dated, written], "minimum_should_match": 1}}
            )
        outcome = self.copy("copy", dated)
        for batch in written_ids(self.client, self.old, floor):
            for begin in range(0, len(batch), _IDS_PER_PASS):
                if outcome.failures:
                    return outcome
                ids = [str.__str__(i) for i in batch[begin : begin + _IDS_PER_PASS]]
                more = self.copy("copy", {"ids": {"values": ids}})
                outcome = PassOutcome(
                    total=outcome.total + more.total,
                    created=outcome.created + more.created,
                    updated=outcome.updated + more.updated,
                    version_conflicts=outcome.version_conflicts + more.version_conflicts,
                    failures=outcome.failures + more.failures,
                    exact=outcome.exact and more.exact,
                )
        return outcome

    def since(self, start: _dt.datetime) -> dict[str, Any] | None:
        """The catch-up query: changed since ``start`` (``None``: every document)."""
        field = self.spec.info.updated_field  # every write sets it (esmapper._dates)
        if field is None:
            return None
        return {"range": {field: {"gte": format_datetime(start)}}}

    def reconcile(self, copied: PassOutcome | None = None) -> tuple[int, int, int]:
        """Under the block, after the final pass: delete from ``new`` what ``old`` no longer
        has; returns ``(removed, old count, new count)``. Skipped (nothing removed) when the
        counts show there is nothing to delete: without a script every document of ``old``
        is in ``new`` (without dates the final pass copied them all; with dates the copy
        took every document that existed when it started and the catch-up passes every one
        written since, by its ``updated_utc``, which the run relies on anyway), so equal
        counts mean no extra. A script may drop documents: then the ids are always
        compared (an id scroll of both indexes).

        ``new`` is refreshed (reads after the swap see every document at once). Its count is
        the documents the passes created in it (it was empty when the copy started and only
        the passes write to it), so only ``GET /<old>/_count`` is sent; when that figure is
        not exact (a pass was run again, or stale copies were replaced) or differs from the
        old count, ``new`` is counted before the ids are compared.

        ``copied``: the copy pass, given when nothing was written to ``old`` since before
        the copy's refresh (:meth:`quiet`, read under the block): nothing was removed from
        it, so ``new`` holds nothing extra (a script included) and nothing is compared; the
        copy saw every document ``old`` has (its ``total``) and the passes' created
        documents are ``new``'s, so nothing is counted either (both are counted when a pass
        was run again)."""
        client, old, new = self.client, self.old, self.new
        # ``old`` is write-blocked and was refreshed before the final pass (or is unchanged
        # since the refresh before the copy)
        client.indices.refresh(index=new)
        if copied is not None:
            if copied.exact and self.counted:
                return 0, copied.total, self.created
            return 0, count(client, old), count(client, new)
        old_count = count(client, old)
        if self.script is None and self.counted and old_count == self.created:
            return 0, old_count, self.created
        new_count = count(client, new)
        if self.script is None and old_count == new_count:
            return 0, old_count, new_count
        removed = delete_extras(client, old, new, spec=self.spec, through=self.target)
        client.indices.refresh(index=new)
        return removed, old_count, count(client, new)


def _still_ours(lock: Lock, exc: BaseException) -> bool:
    """Whether a failed run may roll back: the lock is still ours (a run whose lock was
    taken over must not delete the new index or lift the block: they are the new holder's
    now). Proved with a renewal; a renewal that fails otherwise does not forbid it."""
    try:
        lock.renew()
    except LockError as lost:
        log.error(
            "the reindex failed (%s) and its lock is lost (%s): leaving the indexes to the new "
            "holder",
            exc,
            lost,
        )
        return False
    except Exception:  # e.g. the server unreachable: the rollback will say
        return True
    return True


def run_phases(
    run: Run, *, delete_old: bool, keep_failed_index: bool, margin: _dt.timedelta
) -> ReindexResult:
    """Run every phase of ``run``; see :mod:`esmapper.indexes.reindex`."""
    client, spec, old, new, clock = run.client, run.spec, run.old, run.new, run.ctx.clock
    try:  # until the swap, any failure leaves the old index serving and drops the new one
        run.report("prepare", message=f"Reindexing {old} -> {new}")
        run.prepare()
        resume = run.resume
        run.marker = new_marker(new)  # before sending: a lost answer is undone too
        claim(client, new, run.marker)  # another run's marker on ``new`` is taken off
        if run.script is not None and spec.info.points.rebuild:  # derived values to rebuild
            owe_idx_rebuild(client, new, old)  # paid after the swap, by this run or the next
        # Every document written before the run is visible to the copy, whatever the writer's
        # clock said (an import stamped in the past, a refresh_interval of -1).
        # The primaries first: every write they count is visible to the copy, and a
        # re-added document is written after them (its ``_seq_no`` is higher).
        run.marks = write_marks(client, old)
        refreshed = client.indices.refresh(index=old)
        if refreshed.body.get("_shards", {}).get("failed"):
            # a copy the refresh failed on may not show the copy every write the marks
            # count: they prove nothing, every pass runs
            run.marks = None
        since = started = clock() - margin
        if resume is None:
            record = Record(old, source_uuid(client, old), run.fingerprint, started, run.seq_nos)
            run.record(record)  # before the pass: a run killed during it leaves what it began
            first = run.copy("copy", None)
        else:
            # what the interrupted run copied stays: its record's floors are this run's
            # (documents written, removed or added again since its copy began); no proof
            # that nothing was written spans two runs, and ``new`` was not empty
            # its floor allows for the writers' clocks as this run's catch-up passes do
            # (the record's start carries the margin of the run that wrote it, maybe less)
            record, started = resume.record, resume.started - margin
            run.marks = WriteMarks(run.marks.uuid if run.marks else None, record.seq_nos, None)
            run.counted = False
            run.update(resumed_from=resume.started)
            message = f"Resuming {old} -> {new} from {resume.describe()}"
            log.warning("%s", message)
            run.report("copy", message=message)
            first = run.copy_since(started) if resume.mode == "since" else run.copy("copy", None)
        if first.failures:
            raise run.fail("the copy reported failures; the old index still serves", first.failures)
        run.record(attrs.evolve(record, completed=True))  # a rerun copies only what changed
        # a resumed pass skipped what the interrupted run copied: a copy left stale by a
        # removal and re-add between the runs is among them (see ``recreate_stale``)
        caught_up, skipped = 0, first.skipped if resume is not None else 0
        # Nothing written since the copy's refresh: no catch-up (the final pass, if one is
        # needed after all, starts from the copy's start). A hint from the index-level
        # counters: the proof is read under the block.
        if spec.info.updated_field is not None and written_since(client, old, run.marks):
            since, previous = clock() - margin, since
            # A write made during the copy is visible by itself within the refresh interval:
            # when that is at most a quarter of the margin (the rest is for clock skew), what
            # this pass cannot see yet is younger than the final pass's ``since``, and that
            # pass always follows a refresh (under the block).
            if not refreshes_itself(client, old, margin / 4):
                client.indices.refresh(index=old)
            second = run.copy("catch_up", run.since(previous))
            if second.failures:
                raise run.fail("the catch-up reported failures", second.failures)
            caught_up, skipped = second.copied, skipped + second.skipped
        run.blocked_at = time.monotonic()  # before sending: a lost answer is undone too
        block_writes(client, old, lock=run.lock, into=new)
        # Under the block (it waits for writes in flight): nothing written since the copy's
        # refresh means nothing to catch up, no stale copy and no removed document.
        quiet = run.quiet() is not None
        run.update(copied=first.copied, caught_up=caught_up)
        if quiet:
            run.report("final_catch_up", message="nothing was written to the old index")
        else:
            client.indices.refresh(index=old)
            last = run.copy("final_catch_up", run.since(since))
            run.update(caught_up=caught_up + last.copied)
            if last.failures:
                raise run.fail("the final catch-up reported failures", last.failures)
            # A copy left stale was skipped by a catch-up pass (see ``recreate_stale``).
            recreated = run.recreate_stale(started) if skipped + last.skipped else 0
            run.update(caught_up=run.result.caught_up + recreated)
        run.report("verify")
        # Always (a script may drop documents): a document deleted from the old index after
        # it was copied must not come back in the new one.
        removed, old_count, new_count = run.reconcile(first if quiet else None)
        run.update(removed=removed, old_count=old_count, new_count=new_count)
        run.report("verify", 1, 1, f"Old Docs: {old_count:,} New Docs: {new_count:,}")
        keep = _keep_reason(delete_old, old_count, new_count, new)
        mark_replaced(client, old, new, keep=keep)  # before the swap: a crash after it is known
        run.report("swap", message=f"Updating alias {spec.alias}: remove {old}, add {new}")
        # the swap removes the old index's fence: one made before fences existed gets it
        # first, so no process can add it after the swap read the old index's aliases
        put_alias(client, old, fence_name(old))
        if not write_blocked(client, old):  # lifted by someone: writes may follow the last pass
            raise run.fail(f"{old} is no longer write-blocked; writes may have been missed", ())
        run.lock.renew()  # the lock is ours right now (else: LockError, no swap)
        _swap(run)
    except BaseException as exc:
        if run.rollback and _still_ours(run.lock, exc):
            if run.blocked_at is not None and unblock_own(client, old, run.lock):
                log.warning("writes to %s were blocked for %.2fs", old, run.blocked_for())
            if not keep_failed_index:
                drop_target(
                    client, new, run.marker, serving_aliases(spec, new), spec.write_name(new)
                )
        raise
    blocked = run.blocked_for()
    run.update(swapped=True, blocked_seconds=blocked)
    run.report(
        "swap",
        1,
        1,
        f"Updated alias {spec.alias}: removed {old}, added {new}; writes were blocked for "
        f"{blocked:.2f}s",
    )
    deleted = keep is None
    if deleted and any(a in aliases_of(client, old) for a in serving_aliases(spec, old)):
        log.error("not deleting %s: an alias of %s points at it again", old, spec.info.name)
        deleted = False
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
        log.warning("kept %s (%d documents): %s", old, run.result.old_count, keep)
    run.report("done", message=f"Reindexed {old} -> {new}")
    run.update(status="reindexed", old_deleted=deleted, seconds=time.monotonic() - run.began)
    return run.result


def _swap(run: Run) -> None:
    """The atomic alias swap, sent once; an unknown outcome is read back (on neither index:
    ``run.rollback`` is switched off, the alias may point at the new index)."""
    client, spec, old, new = run.client, run.spec, run.old, run.new
    try:
        swap = once(client).indices.update_aliases(actions=run.swap_actions())
        refused = swap.body.get("errors")  # a partial answer (noida-db); ES is atomic
        unknown: BaseException | None = None
    except NotFoundError as exc:  # a ``must_exist`` condition failed: nothing moved
        raise run.fail(
            f"the alias swap was refused ({exc.message}): the run's marker is no longer on "
            f"{new} or the alias no longer on {old}; another reindex run took over",
            (),
        ) from exc
    except TransportError as exc:
        if not is_unknown_outcome(exc):
            raise
        refused, unknown = False, exc
    if not refused and unknown is None:
        return
    # Read the alias back: never delete the index it may already point at.
    probe = run.probe or spec.alias
    target = _swap_target(client, probe, old, new)
    if target is None:
        run.rollback = False
        raise run.fail(
            f"the alias swap's outcome is unknown ({unknown or 'a partial answer'}) and "
            f"{probe!r} points neither at {old} alone nor at {new} alone; nothing "
            f"was deleted and {old} is still write-blocked: inspect the alias, point it "
            f"at the index holding the documents and remove the block by hand",
            tuple(swap.body.get("action_results", ())) if refused else (),
        )
    if target == old:
        if refused:
            raise run.fail("the alias swap was refused", tuple(swap.body.get("action_results", ())))
        raise run.fail(
            f"the alias swap's answer was lost ({unknown}) and {probe!r} still "
            f"points at {old}: the swap did not happen; the old index still serves",
            (),
        ) from unknown
    log.warning(
        "the alias swap's answer was %s; read back: %s points at %s",
        f"lost ({unknown})" if unknown is not None else "partial",
        probe,
        new,
    )


def _keep_reason(delete_old: bool, old_count: int, new_count: int, new: str) -> str | None:
    """Why the old index is kept after the swap, ``None`` when it is deleted."""
    if not delete_old:
        return "delete_old=False"
    if new_count < old_count:
        return f"{new} has {new_count} documents, fewer than its {old_count}"
    return None


def _swap_target(client: Elasticsearch, alias: str, old: str, new: str) -> str | None:
    """After a swap whose outcome is unknown: ``new`` if ``alias`` points at it alone (the
    swap happened), ``old`` if it still points at it alone (it did not), else ``None``
    (also when the alias cannot be read). Sends ``GET /_alias/<alias>``."""
    try:
        targets = sorted(client.indices.get_alias(name=alias).body)
    except NotFoundError:
        return None
    except (TransportError, ApiError) as exc:
        log.error("reading alias %s back after the swap failed: %s", alias, exc)
        return None
    return targets[0] if len(targets) == 1 and targets[0] in (old, new) else None
