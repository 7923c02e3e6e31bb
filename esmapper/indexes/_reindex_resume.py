"""Resuming an interrupted reindex: what a run records in the index it builds, and whether a
rerun may reuse that index instead of copying everything again.

A run records in ``<alias>-vN``'s mapping ``_meta`` (key :data:`RECORD`, sent through the
run's marker alias, so a run another one took over cannot write it:
:mod:`esmapper.indexes._reindex_fence`) *before* its first pass starts, and again once that
pass completed without failures, a :class:`Record`:

- ``source`` and ``source_uuid``: the old index's name and ``uuid`` (an index deleted and
  made again under the name is another index: never trusted);
- ``fingerprint``: a hash of everything that decides what a copied document looks like:
  the reindex script, the ingest pipeline (name and definition), the target's mapping and
  settings (:func:`fingerprint`);
- ``started``: the pass's updated-date floor (the mapper's clock minus the catch-up margin
  at its start: every document written to the old index after the pass began has an
  updated date at or above it) and ``seq_nos``: the old index's primaries' ``max_seq_no``
  read before the pass's refresh (every document written since has a ``_seq_no`` above the
  lowest; it is what the stale-copy comparison starts from,
  :mod:`esmapper.indexes._reindex_stale`);
- ``completed``: the pass copied every document the old index had when it began.

A run that finds ``<alias>-vN`` already there (under the lock ``reindex:<alias>``) first
stops what may still write into it: Elasticsearch runs a ``_reindex`` task to its end when
the client that started it dies, so a killed run's pass may still be copying (the
``_reindex`` tasks whose description names ``-vN`` as destination are listed, cancelled
and waited for, :func:`stop_leftover_passes`; one still running after :data:`STOP_WAIT`
refuses the run: a pass that goes on writing could bring a deleted document back after the
id reconciliation, into a resumed index or into one built again. So does a listing that
cannot prove none runs for that long: it failed, or nodes did not answer it, which
Elasticsearch reports with status 200 and ``node_failures``). When ``-vN`` is not
empty, :func:`decide` compares its record with the rerun: the same old index (name and
``uuid``), the same fingerprint. Anything else (no record, another source, a recreated
source, a changed script, pipeline, mapping or settings) is a full copy: the leftover is
deleted and built again, as before.

When the record matches, the rerun keeps ``-vN`` and its first pass copies only what is
missing or changed (:class:`Resume`):

- ``since``: the recorded pass completed and the model has an updated date: the pass
  selects the documents with an updated date at or above the recorded floor less the
  rerun's catch-up margin (the record carries the margin of the run that wrote it; the
  rerun's catch-up passes allow for the writers' clocks with their own, so does this
  pass, its first catch-up), *or* a ``_seq_no`` above the recorded ``seq_nos`` (the time
  between two runs is not a copy's: an import keeping its own dates, or a clock far
  behind, must not lose a document; :meth:`Run.copy_since
  <esmapper.indexes._reindex_run.Run.copy_since>`); those
  already copied at their current version are skipped by the external versions.
- ``compare``: the recorded pass was interrupted, or the model has no updated date: the
  pass reads every document of the old index and writes only those missing from ``-vN``
  or at a higher version there (the rest are version conflicts, written nowhere). An
  interrupted pass gives no floor: ``_reindex`` reads the source in ``_doc`` order, in
  parallel slices, not in date order, so "the newest document already copied" (what the
  reference resumes from) says nothing about which older ones were copied. Reading is
  cheap next to indexing; the writes are the delta.

What a resumed run then does is what every run does (catch-up, write block, final pass,
verify, swap, delete), with three differences: the write marks of the old index are the
recorded ``seq_nos`` (no proof that nothing was written is possible across two runs, so
the catch-up and final passes always run and the stale-copy comparison starts from the
recorded pass's start, covering documents removed and added again between the runs, by
their ``_seq_no`` alone: such a document may carry any updated date); the
new index's count is read, not taken from the passes' figures (it was not empty); and the
id reconciliation compares ids unless the counts prove there is nothing to delete, so a
document deleted from the old index between the runs does not survive in the new one.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import attrs
from elasticsearch import ApiError, Elasticsearch, NotFoundError, TransportError

from esmapper._server_tasks import cancel_task, has_tasks, running_tasks
from esmapper.errors import IndexConfigurationError
from esmapper.indexes._meta import read_meta
from esmapper.model.dates import format_datetime, parse_datetime

if TYPE_CHECKING:
    from esmapper.indexes.spec import IndexSpec

__all__ = [
    "RECORD",
    "STOP_WAIT",
    "Record",
    "Resume",
    "decide",
    "fingerprint",
    "read_record",
    "source_uuid",
    "stop_leftover_passes",
]

log = logging.getLogger("esmapper.indexes")

#: the ``_meta`` key of a reindex's record in the index it builds
RECORD: Final = "esmapper_reindex"
#: how long a rerun waits for a killed run's pass to stop once cancelled (seconds)
STOP_WAIT: Final = 60.0


@attrs.frozen(slots=True)
class Record:
    """What a run recorded in its new index before its first pass (see the module
    docstring); ``completed`` once that pass copied everything without failures."""

    source: str
    source_uuid: str | None
    fingerprint: str
    started: _dt.datetime
    seq_nos: dict[str, int] | None
    completed: bool = False

    def to_meta(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "source_uuid": self.source_uuid,
            "fingerprint": self.fingerprint,
            "started": format_datetime(self.started),
            "seq_nos": self.seq_nos,
            "completed": self.completed,
        }

    @classmethod
    def from_meta(cls, value: Any) -> Record | None:
        """The record stored as ``value``, ``None`` when it is not one (missing, another
        format: a full copy)."""
        if not isinstance(value, dict):
            return None
        try:
            seq_nos = value.get("seq_nos")
            started = parse_datetime(str(value["started"]))
            return cls(
                source=str(value["source"]),
                source_uuid=value.get("source_uuid") if value.get("source_uuid") else None,
                fingerprint=str(value["fingerprint"]),
                started=started,
                seq_nos=(
                    {str(k): int(v) for k, v in seq_nos.items()}
                    if isinstance(seq_nos, dict) and seq_nos
                    else None
                ),
                completed=value.get("completed") is True,
            )
        except (KeyError, TypeError, ValueError):
            return None


@attrs.frozen(slots=True)
class Resume:
    """How a rerun goes on from ``record``: ``mode`` ``since`` (the documents with an
    updated date at or above ``record.started``) or ``compare`` (every document read, the
    missing and changed ones written)."""

    record: Record
    mode: str

    @property
    def started(self) -> _dt.datetime:
        """The recorded pass's updated-date floor."""
        return self.record.started

    def describe(self) -> str:
        """For humans (progress messages, logs)."""
        if self.mode == "since":
            return f"documents changed since {format_datetime(self.started)}"
        why = "completed" if self.record.completed else "interrupted"
        return (
            f"the copy {why} at its start {format_datetime(self.started)}; every document "
            "compared, the missing and changed ones copied"
        )


def fingerprint(spec: IndexSpec, script: str | None, dest: dict[str, Any]) -> str:
    """A hash of what decides how a copied document looks in the new index: ``script``,
    the ``_reindex`` ``dest`` (its ingest pipeline's name) and the pipeline's definition,
    the new index's mapping and settings (:meth:`IndexSpec.body`). Sends nothing."""
    pipeline = spec.pipeline
    what = {
        "script": script,
        "dest": {k: v for k, v in dest.items() if k != "index"},
        "pipeline": None if pipeline is None else pipeline.definition,
        "body": spec.body(with_alias=False),
    }
    text = json.dumps(what, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def decide(
    record: Record | None,
    *,
    source: str,
    source_uuid: str | None,
    fingerprint: str,
    dated: bool,
) -> Resume | str:
    """Whether a rerun may reuse the non-empty new index ``record`` was read from: the
    :class:`Resume`, or why not (a full copy). ``source`` / ``source_uuid``: the old index
    now; ``fingerprint``: the rerun's (:func:`fingerprint`); ``dated``: whether the model
    has an updated date (every write sets it). Sends nothing."""
    if record is None:
        return "it carries no record of the run that built it"
    if record.source != source:
        return f"it was copied from {record.source}, not {source}"
    if source_uuid is None or record.source_uuid is None:
        return f"the uuid of {source} is unknown, so is whether it is the index copied"
    if record.source_uuid != source_uuid:
        return f"{source} was deleted and created again since it was copied"
    if record.fingerprint != fingerprint:
        return "the reindex script, pipeline, mapping or settings changed since it was copied"
    if record.completed and dated:
        return Resume(record, "since")
    return Resume(record, "compare")


def read_record(client: Elasticsearch, index: str) -> Record | None:
    """The record in ``index``'s ``_meta`` (``GET /<index>/_mapping``), ``None`` without
    one."""
    return Record.from_meta(read_meta(client, index).get(RECORD))


def source_uuid(client: Elasticsearch, index: str) -> str | None:
    """``index``'s ``uuid`` (``GET /<index>/_settings/index.uuid``), ``None`` when not
    answered."""
    try:
        body = client.indices.get_settings(index=index, name="index.uuid").body
    except NotFoundError:
        return None
    value = ((body.get(index) or {}).get("settings") or {}).get("index", {}).get("uuid")
    return value if isinstance(value, str) and value else None


def _passes_into(client: Elasticsearch, index: str) -> tuple[list[str], list[str]]:
    """The running ``_reindex`` tasks (not slices) whose destination is ``index`` (their
    description, ``reindex from [<source>] to [<dest>]``, names it), and what keeps the
    listing from being complete: the ``node_failures`` / ``task_failures`` of an answer
    with status 200 (Elasticsearch lists the tasks of the nodes that answered; a pass may
    run on one that did not). Raises the client's errors."""
    listing = running_tasks(client, "reindex")
    tasks = [
        task
        for task, info in listing.tasks
        if not info.get("parent_task_id") and f" to [{index}]" in str(info.get("description"))
    ]
    return tasks, [str(_reason(f)) for f in listing.failures]


def _reason(failure: Any) -> Any:
    return failure.get("reason") or failure.get("type") if isinstance(failure, dict) else failure


def stop_leftover_passes(
    client: Elasticsearch,
    index: str,
    *,
    wait: float = STOP_WAIT,
    sleep: Callable[[float], object] = time.sleep,
    monotonic: Callable[[], float] = time.monotonic,
) -> int:
    """Cancel the ``_reindex`` tasks still writing into ``index`` (a killed run's pass: the
    server runs it on after its client died) and wait until a complete listing shows none;
    returns how many were cancelled. Sends ``GET
    /_tasks?actions=indices:data/write/reindex&detailed=true`` every half second until
    then, and ``POST /_tasks/<id>/_cancel`` for each task listed until the server accepted
    it (idempotent; a refusal or a lost answer is logged and the cancel sent again with the
    next listing). A listing is complete when it did not fail and names no
    ``node_failures`` / ``task_failures`` (a node that did not answer may be running a
    pass). Raises :class:`IndexConfigurationError` when, after ``wait`` seconds, a pass
    still runs or no listing was complete (nothing was deleted or reused). A server whose
    tasks this client cannot read (:func:`~esmapper._server_tasks.has_tasks`: noida-db, a
    user without the ``monitor`` privilege) has nothing that could be listed: nothing is
    sent."""
    if not has_tasks(client):
        return 0
    deadline = monotonic() + wait
    cancelled: list[str] = []  # listed, cancel accepted or not
    accepted: set[str] = set()
    while True:
        failed: ApiError | TransportError | None = None
        try:
            running, unanswered = _passes_into(client, index)
        except (ApiError, TransportError) as exc:
            running, unanswered, failed = [], [], exc
        new = [task for task in running if task not in cancelled]
        for task in running:
            if task in accepted:
                continue
            if task in new:
                log.warning("%s: cancelling the reindex task %s a killed run left", index, task)
                cancelled.append(task)
            if cancel_task(client, task, f"the interrupted reindex into {index}"):
                accepted.add(task)
        if not (running or unanswered or failed):
            return len(cancelled)
        if new:
            continue  # listed again at once: a task may end with its cancel
        if monotonic() >= deadline:
            if running:
                why = (
                    f"the reindex task(s) {', '.join(running)} of an interrupted run still "
                    "write into it after being cancelled"
                )
            elif failed is not None:
                why = (
                    f"the running reindex tasks could not be listed ({failed}): one a killed "
                    "run left may still write into it"
                )
            else:
                why = (
                    f"nodes did not answer the listing of the running reindex tasks "
                    f"({'; '.join(unanswered)}): a pass a killed run left may still write into "
                    "it there"
                )
            raise IndexConfigurationError(
                f"{index}: {why} (waited {wait:.0f}s); run the reindex again once it ended",
                index=index,
            )
        sleep(0.5)
