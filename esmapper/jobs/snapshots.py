"""Snapshots: take one and wait for it; delete the old ones.

:class:`SnapshotJob` sends, under the lock ``snapshots:<repository>``:

- ``GET /_snapshot/<repository>``: an unknown repository fails the run with
  :class:`~esmapper.jobs.base.JobError` saying how to register one;
- ``PUT /_snapshot/<repository>/<name>?wait_for_completion=false`` with ``indices`` (by
  default every registered model's alias and the migration state index; aliases resolve
  to the indexes behind them), ``ignore_unavailable: true``, ``include_global_state:
  false`` and ``metadata: {"taken_by": "esmapper"}``. ``<name>`` is the pattern
  (``snapshot-%Y-%m-%d-%H-%M-%S`` by default, strftime fields in UTC) filled with the
  mapper's clock. The create is sent once; a lost answer is read back (``GET
  /_snapshot/<repository>/<name>``: there -> it started; missing -> sent once more);
  a name already taken fails the run (it is never overwritten);
- then, unless ``wait=False``, ``GET /_snapshot/<repository>/<name>`` every
  ``poll_interval`` seconds (and ``GET .../_status`` for the shards done, reported to
  ``progress``) until the snapshot is ``SUCCESS`` (the run succeeds) or ``PARTIAL`` /
  ``FAILED`` / ``INCOMPATIBLE`` (the run fails, with the server's reasons). Errors while
  polling are retried with backoff (1 s doubling, at most 30 s), 6 in a row fail the run.
  Past ``timeout``, or when cancelled, the run stops waiting (failed / cancelled) and says
  the snapshot goes on on the server.

:class:`CleanupSnapshotsJob` sends, under the same lock, ``GET
/_snapshot/<repository>/_all`` and ``DELETE /_snapshot/<repository>/<name>`` for every
snapshot that started more than ``max_age`` ago, except: **the newest successful snapshot
is never deleted** (nor the ``keep`` newest successful ones, whatever their age), and a
snapshot still running is left alone. Deletes are sent one at a time, once each (404:
already gone; a lost answer is read back: still there -> sent once more). With
``dry_run`` it only lists. It looks at every snapshot in the repository, whoever took it
(as the reference job does): give esmapper a repository of its own.
"""

from __future__ import annotations

import datetime as _dt
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import attrs
from elastic_transport import TransportError
from elasticsearch import ApiError, BadRequestError, Elasticsearch, NotFoundError

from esmapper._transport import once, send_or_read_back
from esmapper.indexes._ensure import reason_of
from esmapper.jobs.base import Job, JobCancelled, JobContext, JobError, JobResult
from esmapper.jobs.durations import format_duration
from esmapper.locks import DEFAULT_TTL
from esmapper.migrations.state import STATE_INDEX

if TYPE_CHECKING:
    from esmapper._context import Context, HasContext

__all__ = [
    "DEFAULT_NAME",
    "DEFAULT_REPOSITORY",
    "CleanupSnapshotsJob",
    "SnapshotCleanupReport",
    "SnapshotInfo",
    "SnapshotJob",
    "SnapshotProgress",
    "snapshot_name",
]

DEFAULT_REPOSITORY: Final = "backups"
#: strftime pattern of a snapshot's name, filled in UTC
DEFAULT_NAME: Final = "snapshot-%Y-%m-%d-%H-%M-%S"
_DONE: Final = frozenset({"SUCCESS", "PARTIAL", "FAILED", "INCOMPATIBLE"})
_RUNNING: Final = frozenset({"IN_PROGRESS", "STARTED", "INIT"})
_BAD_NAME: Final = re.compile(r'[\s,"*\\<|>?/#:]')
_POLL_ERRORS: Final = 6  # failed polls in a row before the run fails
_MAX_BACKOFF: Final = 30.0


def snapshot_name(pattern: str, now: _dt.datetime) -> str:
    """``pattern`` filled with ``now`` in UTC (``strftime``); raises ``ValueError`` when
    the result is not a valid snapshot name (lower case, no spaces, no ``, " * \\ < | > ?
    / # :``, not starting with ``_`` or ``-``)."""
    name = now.astimezone(_dt.timezone.utc).strftime(pattern)
    if not name or name != name.lower() or _BAD_NAME.search(name) or name[0] in "_-":
        raise ValueError(
            f"snapshot name {name!r} (from {pattern!r}) is invalid: lower case, no spaces "
            'or any of , " * \\ < | > ? / # :, not starting with _ or -'
        )
    return name


def _millis(value: Any) -> _dt.datetime | None:
    if value is None:
        return None
    return _dt.datetime.fromtimestamp(int(value) / 1000, tz=_dt.timezone.utc)


@attrs.frozen
class SnapshotInfo:
    """One snapshot as the server lists it (``GET /_snapshot/<repository>/<name>``)."""

    repository: str
    name: str
    state: str
    indices: tuple[str, ...] = ()
    start: _dt.datetime | None = None
    end: _dt.datetime | None = None
    shards_total: int = 0
    shards_failed: int = 0
    failures: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = attrs.field(factory=dict)

    @classmethod
    def from_body(cls, repository: str, body: Mapping[str, Any]) -> SnapshotInfo:
        shards = body.get("shards") or {}
        failures = tuple(
            f"{f.get('index')}[{f.get('shard_id')}]: {f.get('reason')}"
            for f in body.get("failures") or ()
            if isinstance(f, Mapping)
        )
        return cls(
            repository=str(body.get("repository") or repository),
            name=str(body["snapshot"]),
            state=str(body.get("state") or "UNKNOWN"),
            indices=tuple(body.get("indices") or ()),
            start=_millis(body.get("start_time_in_millis")),
            end=_millis(body.get("end_time_in_millis")),
            shards_total=int(shards.get("total") or 0),
            shards_failed=int(shards.get("failed") or 0),
            failures=failures,
            metadata=dict(body.get("metadata") or {}),
        )

    @property
    def successful(self) -> bool:
        return self.state == "SUCCESS"

    @property
    def running(self) -> bool:
        return self.state in _RUNNING

    def __str__(self) -> str:
        start = "-" if self.start is None else self.start.strftime("%Y-%m-%d %H:%M:%S")
        return f"{self.repository}/{self.name} ({self.state}, started {start} UTC)"


@attrs.frozen
class SnapshotProgress:
    """A progress report while a snapshot runs: shards ``done`` of ``total``."""

    repository: str
    name: str
    state: str
    done: int
    total: int

    @property
    def percent(self) -> int:
        return 100 * self.done // self.total if self.total else 0


def _check_repository(ctx: JobContext, client: Elasticsearch, repository: str) -> None:
    ctx.sends("GET", f"/_snapshot/{repository}")
    try:
        client.snapshot.get_repository(name=repository)
    except NotFoundError as exc:
        raise JobError(
            f"unknown snapshot repository {repository!r}: register it first, e.g. PUT "
            f'/_snapshot/{repository} {{"type": "fs", "settings": {{"location": "..."}}}} '
            "(the location must be listed in the server's path.repo)",
            error_type="repository_missing_exception",
        ) from exc


def read_snapshot(client: Elasticsearch, repository: str, name: str) -> SnapshotInfo | None:
    """The snapshot ``name`` (``GET /_snapshot/<repository>/<name>``), ``None`` when it
    does not exist. Raises the client's errors (a missing repository included)."""
    try:
        body = client.snapshot.get(repository=repository, snapshot=name).body
    except NotFoundError as exc:
        if exc.error == "snapshot_missing_exception":
            return None
        raise
    found = [s for s in body.get("snapshots") or () if s.get("snapshot") == name]
    return SnapshotInfo.from_body(repository, found[0]) if found else None


def _name_taken(exc: ApiError) -> bool:
    """Whether a refused create says the name is taken (a finished snapshot, or one in
    progress). Elasticsearch answers ``snapshot_name_already_in_use_exception``; other
    versions answer ``invalid_snapshot_name_exception`` for that too, and for a name it
    refuses (``must be lowercase`` ...): the reason tells them apart (``exc.message`` is
    only the type)."""
    if exc.error == "snapshot_name_already_in_use_exception":
        return True
    return exc.error == "invalid_snapshot_name_exception" and "with the same name" in (
        reason_of(exc)
    )


class SnapshotJob(Job):
    """Take a snapshot and wait for it (see the module docstring); the result's
    ``details`` is the :class:`SnapshotInfo` (``None`` if it never started)."""

    name = "snapshot-create"

    def __init__(
        self,
        mapper: Context | HasContext,
        repository: str = DEFAULT_REPOSITORY,
        *,
        indexes: Sequence[str] | None = None,
        name_pattern: str = DEFAULT_NAME,
        wait: bool = True,
        timeout: _dt.timedelta | None = None,
        poll_interval: float = 2.0,
        progress: Callable[[SnapshotProgress], object] | None = None,
        lock_wait: _dt.timedelta = _dt.timedelta(0),
        lock_ttl: _dt.timedelta = DEFAULT_TTL,
        sleep: Callable[[float], object] | None = None,
    ) -> None:
        super().__init__(mapper, lock_wait=lock_wait, lock_ttl=lock_ttl)
        self.repository = repository
        self.indexes = list(indexes) if indexes is not None else None
        self.name_pattern = name_pattern
        self.wait = wait
        self.timeout = timeout
        self.poll_interval = poll_interval
        self.progress = progress
        self._sleep = sleep

    @property
    def lock_name(self) -> str:
        return f"snapshots:{self.repository}"

    def targets(self) -> list[str]:
        """What the snapshot holds: ``indexes``, else every model's alias and the
        migration state index."""
        if self.indexes is not None:
            return self.indexes
        mapper = self.services
        names = list(dict.fromkeys(mapper.spec(model).alias for model in mapper.models))
        return [*names, f"{mapper.index_prefix}{STATE_INDEX}"]

    def execute(self, ctx: JobContext) -> JobResult:
        client = self.services.client
        name = snapshot_name(self.name_pattern, self.services.clock())
        _check_repository(ctx, client, self.repository)
        body: dict[str, Any] = {
            "indices": ",".join(self.targets()),
            "ignore_unavailable": True,
            "include_global_state": False,
            "metadata": {"taken_by": "esmapper"},
        }
        self._start(ctx, client, name, body)
        where = f"{self.repository}/{name}"
        if not self.wait:
            info = read_snapshot(client, self.repository, name)
            return JobResult.success(self.name, f"started snapshot {where}", info)
        info = self._wait(ctx, client, name)
        if info is None:
            return JobResult.failed(self.name, f"snapshot {where} vanished while running")
        if info.successful:
            message = f"snapshot {where}: {len(info.indices)} indexes, {info.shards_total} shards"
            return JobResult.success(self.name, message, info)
        reasons = "; ".join(info.failures[:3]) or "no reason given"
        error = JobError(f"snapshot {where} ended {info.state}: {reasons}", error_type=info.state)
        return JobResult.failed(self.name, str(error), error, info)

    def _start(
        self, ctx: JobContext, client: Elasticsearch, name: str, body: dict[str, Any]
    ) -> None:
        """Send the create once; a lost answer is read back (see the module docstring)."""
        path = f"/_snapshot/{self.repository}/{name}?wait_for_completion=false"
        lost = False

        def send() -> None:
            ctx.sends("PUT", path, body)
            try:
                once(client).snapshot.create(
                    repository=self.repository, snapshot=name, wait_for_completion=False, **body
                )
            except BadRequestError as exc:
                if not _name_taken(exc):
                    raise
                if not lost:  # else our first create was applied after all
                    raise JobError(
                        f"a snapshot named {name!r} already exists in {self.repository!r} "
                        "(it is never overwritten): wait a second, or use another name pattern",
                        error_type=str(exc.error),
                    ) from exc

        def started() -> bool:
            nonlocal lost
            lost = True
            ctx.sends("GET", f"/_snapshot/{self.repository}/{name}")
            return read_snapshot(client, self.repository, name) is not None

        send_or_read_back(send, started, what=f"PUT {path}", logger=ctx.log)

    def _wait(self, ctx: JobContext, client: Elasticsearch, name: str) -> SnapshotInfo | None:
        """Poll until the snapshot ends; ``None`` when it disappeared."""
        deadline = None if self.timeout is None else time.monotonic() + self.timeout.total_seconds()
        errors = 0
        while True:
            try:
                ctx.sends("GET", f"/_snapshot/{self.repository}/{name}")
                info = read_snapshot(client, self.repository, name)
                if info is None or info.state in _DONE:
                    if info is not None:
                        self._report(SnapshotProgress(
                            self.repository, name, info.state, info.shards_total,
                            info.shards_total,
                        ))  # fmt: skip
                    return info
                self._report(self._progress(ctx, client, name, info.state))
                errors = 0
                delay = self.poll_interval
            except (ApiError, TransportError) as exc:
                errors += 1
                if errors >= _POLL_ERRORS:
                    raise JobError(
                        f"checking snapshot {self.repository}/{name} failed {errors} times in a "
                        f"row ({exc}); it may still be running on the server"
                    ) from exc
                delay = min(_MAX_BACKOFF, 2.0 ** (errors - 1))
                ctx.log.warning(
                    "checking snapshot %s failed (%s); retrying in %.0fs", name, exc, delay
                )
            if deadline is not None and time.monotonic() + delay > deadline:
                assert self.timeout is not None
                raise JobError(
                    f"snapshot {self.repository}/{name} still runs after "
                    f"{format_duration(self.timeout)}; it goes on on the server (GET "
                    f"/_snapshot/{self.repository}/{name})"
                )
            try:
                if self._sleep is not None:
                    self._sleep(delay)
                    ctx.checkpoint()
                else:
                    ctx.sleep(delay)
            except JobCancelled:
                raise JobCancelled(
                    f"stopped waiting; snapshot {self.repository}/{name} goes on on the server"
                ) from None

    def _progress(
        self, ctx: JobContext, client: Elasticsearch, name: str, state: str
    ) -> SnapshotProgress:
        """Shards done so far (``GET /_snapshot/<repository>/<name>/_status``)."""
        ctx.sends("GET", f"/_snapshot/{self.repository}/{name}/_status")
        body = client.snapshot.status(repository=self.repository, snapshot=name).body
        entries = body.get("snapshots") or [{}]
        stats = entries[0].get("shards_stats") or {}
        done, total = int(stats.get("done") or 0), int(stats.get("total") or 0)
        return SnapshotProgress(self.repository, name, state, done, total)

    def _report(self, progress: SnapshotProgress) -> None:
        if self.progress is not None:
            self.progress(progress)


@attrs.frozen
class SnapshotCleanupReport:
    """What :class:`CleanupSnapshotsJob` found: ``deleted`` (or, in a dry run, to be
    deleted), ``kept`` (``(snapshot, why)``) and ``failed`` (``(snapshot, error)``)."""

    deleted: tuple[SnapshotInfo, ...] = ()
    kept: tuple[tuple[SnapshotInfo, str], ...] = ()
    failed: tuple[tuple[SnapshotInfo, str], ...] = ()
    dry_run: bool = False


def plan_cleanup(
    snapshots: Iterable[SnapshotInfo], *, cutoff: _dt.datetime, keep: int
) -> tuple[list[SnapshotInfo], list[tuple[SnapshotInfo, str]]]:
    """``(to delete, kept with why)``, oldest first: started before ``cutoff``, except the
    ``max(keep, 1)`` newest successful snapshots and running ones (pure)."""
    ordered = sorted(
        snapshots, key=lambda s: s.start or _dt.datetime.max.replace(tzinfo=_dt.timezone.utc)
    )
    newest = [s for s in reversed(ordered) if s.successful][: max(keep, 1)]
    delete: list[SnapshotInfo] = []
    kept: list[tuple[SnapshotInfo, str]] = []
    for snap in ordered:
        if snap in newest:
            why = "the newest successful snapshot" if snap is newest[0] else (
                f"one of the {len(newest)} newest successful snapshots"
            )  # fmt: skip
            kept.append((snap, why))
        elif snap.running:
            kept.append((snap, "still running"))
        elif snap.start is None:
            kept.append((snap, "its start time is unknown"))
        elif snap.start >= cutoff:
            kept.append((snap, "younger than the maximum age"))
        else:
            delete.append(snap)
    return delete, kept


class CleanupSnapshotsJob(Job):
    """Delete snapshots older than ``max_age`` (see the module docstring); ``details``
    is a :class:`SnapshotCleanupReport`."""

    name = "snapshot-cleanup"

    def __init__(
        self,
        mapper: Context | HasContext,
        repository: str = DEFAULT_REPOSITORY,
        *,
        max_age: _dt.timedelta,
        keep: int = 1,
        dry_run: bool = False,
        lock_wait: _dt.timedelta = _dt.timedelta(0),
        lock_ttl: _dt.timedelta = DEFAULT_TTL,
    ) -> None:
        if keep < 0:
            raise ValueError(f"keep must be 0 or more, not {keep}")
        if max_age < _dt.timedelta(0):
            raise ValueError("max_age must not be negative")
        super().__init__(mapper, lock_wait=lock_wait, lock_ttl=lock_ttl)
        self.repository = repository
        self.max_age = max_age
        self.keep = keep
        self.dry_run = dry_run

    @property
    def lock_name(self) -> str | None:
        return None if self.dry_run else f"snapshots:{self.repository}"

    def execute(self, ctx: JobContext) -> JobResult:
        client = self.services.client
        _check_repository(ctx, client, self.repository)
        ctx.sends("GET", f"/_snapshot/{self.repository}/_all")
        body = client.snapshot.get(repository=self.repository, snapshot="_all").body
        snapshots = [
            SnapshotInfo.from_body(self.repository, s) for s in body.get("snapshots") or ()
        ]
        cutoff = self.services.clock() - self.max_age
        delete, kept = plan_cleanup(snapshots, cutoff=cutoff, keep=self.keep)
        if self.dry_run:
            report = SnapshotCleanupReport(tuple(delete), tuple(kept), dry_run=True)
            message = (
                f"would delete {len(delete)} of {len(snapshots)} snapshots in {self.repository}"
            )
            return JobResult.success(self.name, message, report)
        deleted: list[SnapshotInfo] = []
        failed: list[tuple[SnapshotInfo, str]] = []
        try:
            for snap in delete:
                ctx.checkpoint()
                try:
                    self._delete(ctx, client, snap.name)
                except (ApiError, TransportError) as exc:
                    failed.append((snap, str(exc)))
                    continue
                deleted.append(snap)
        except JobCancelled:
            report = SnapshotCleanupReport(tuple(deleted), tuple(kept), tuple(failed))
            return JobResult.cancelled(self.name, f"cancelled after {len(deleted)} deleted", report)
        report = SnapshotCleanupReport(tuple(deleted), tuple(kept), tuple(failed))
        message = f"deleted {len(deleted)} of {len(snapshots)} snapshots in {self.repository}"
        if failed:
            first = f"{failed[0][0].name}: {failed[0][1]}"
            return JobResult.failed(
                self.name,
                f"{message}; {len(failed)} could not be deleted ({first})",
                JobError(first),
                report,
            )
        return JobResult.success(self.name, message, report)

    def _delete(self, ctx: JobContext, client: Elasticsearch, name: str) -> None:
        path = f"/_snapshot/{self.repository}/{name}"

        def send() -> None:
            ctx.sends("DELETE", path)
            try:
                once(client).snapshot.delete(repository=self.repository, snapshot=name)
            except NotFoundError as exc:
                if exc.error != "snapshot_missing_exception":
                    raise  # already gone is fine; a missing repository is not

        def gone() -> bool:
            ctx.sends("GET", path)
            return read_snapshot(client, self.repository, name) is None

        send_or_read_back(send, gone, what=f"DELETE {path}", logger=ctx.log)
        ctx.log.info("deleted snapshot %s/%s", self.repository, name)
