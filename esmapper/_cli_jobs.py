"""The ``esmapper`` commands that run jobs (:mod:`esmapper.jobs`) and report health.

``maintain [--loop --interval 1h] [--max-failures N] [--snapshot-repository R
[--snapshot-max-age D --snapshot-keep N]]``: time-series upkeep, then the deletion of
expired partitions and of the leftovers of successful reindexes, then (with a repository)
a snapshot and the cleanup of old ones. ``--loop`` runs them every ``--interval`` until
SIGTERM or Ctrl-C (the run in progress finishes; exit 0; a second signal cancels it: exit
3); ``--max-failures`` failed runs in a row end it with exit 1.

``snapshot create [--repository R] [--indexes I,...] [--name PATTERN] [--no-wait]
[--timeout D]`` and ``snapshot cleanup [--repository R] --max-age D [--keep N]
[--dry-run]``. ``indexes cleanup [MODEL...] [--pattern P --max-age D] [--yes]``: a dry
run without ``--yes``. ``status --health`` prints :meth:`esmapper.Mapper.health`.

A job that failed is one ``error:`` line (exit 1), a lock held by another process exit 2,
a cancelled run exit 3 (the codes of :mod:`esmapper.cli`).
"""

from __future__ import annotations

import datetime as _dt
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

import click
from elastic_transport import TransportError
from elasticsearch import ApiError

from esmapper._cli_app import Cancelled, CliError, LockHeld, error_for, find_model, mapper_of
from esmapper._cli_types import DURATION, POSITIVE_DURATION
from esmapper.jobs import (
    DEFAULT_NAME,
    DEFAULT_REPOSITORY,
    CleanupIndexesJob,
    CleanupSnapshotsJob,
    IndexCleanupReport,
    Job,
    JobResult,
    JobRunner,
    MaintainIndexesJob,
    SnapshotCleanupReport,
    SnapshotInfo,
    SnapshotJob,
    SnapshotProgress,
    format_duration,
    snapshot_name,
    stop_on_signals,
)

if TYPE_CHECKING:
    from esmapper.health import HealthReport
    from esmapper.mapper import Mapper

__all__ = ["indexes_cleanup", "maintain", "print_health", "snapshot"]


def _message(result: JobResult, ctx: click.Context) -> str:
    """A failed result's text; an unreachable server in the CLI's words."""
    error = result.error
    if isinstance(error, TransportError) and not isinstance(error, ApiError):
        known = error_for(error, ctx)
        if known is not None:
            return f"{result.job} failed: {known.format_message()}"
    return f"{result.job} failed: {result.message}"


def _settle(result: JobResult, ctx: click.Context) -> None:
    """Raise the CLI error of a result that is not a plain success."""
    if result.skipped:
        raise LockHeld(result.message)
    if result.is_cancelled:
        raise Cancelled(f"{result.job}: {result.message}")
    if result.is_failed:
        raise CliError(_message(result, ctx))


def _run_cancellable(job: Job) -> JobResult:
    """Run ``job``; SIGTERM or Ctrl-C cancels it at its next checkpoint."""
    cancel = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        return job.run(cancel)
    with stop_on_signals(cancel, cancel):
        return job.run(cancel)


# -- maintain --------------------------------------------------------------------------


def _echo_result(result: JobResult, *, warn: bool = True) -> None:
    """What ``maintain`` prints per job (a failure only as a warning in a loop: a single
    run ends with one error line)."""
    if result.skipped:
        if warn:
            click.echo(f"warning: {result.job} skipped: {result.message}", err=True)
        return
    if not result.is_success:
        if warn:
            click.echo(f"warning: {result}", err=True)
        return
    details = result.details
    if result.job == "maintenance":
        for name in details.deleted:
            click.echo(f"deleted {name}")
        for action in details.alias_actions:
            for verb, target in dict(action).items():
                click.echo(f"alias {verb} {target.get('alias')} -> {target.get('index')}")
        click.echo(f"maintenance: {result.message}")
    elif isinstance(details, IndexCleanupReport):
        expired = {i.index for i in details.candidates if i.kind == "expired"}
        for name in details.deleted:
            if name not in expired:  # maintenance printed those
                click.echo(f"deleted {name}")
        click.echo(f"index cleanup: {result.message}")
    elif isinstance(details, SnapshotInfo):
        click.echo(_snapshot_line(details, result))
    elif isinstance(details, SnapshotCleanupReport):
        for snap in details.deleted:
            click.echo(f"deleted snapshot {snap.repository}/{snap.name}")
        click.echo(f"snapshot cleanup: {result.message}")
    else:
        click.echo(str(result))


@click.command()
@click.option("--loop", is_flag=True, help="Run again every --interval until stopped.")
@click.option("--interval", type=POSITIVE_DURATION, default="1h", show_default=True,
              help="Time between two runs (--loop), e.g. 30m, 1h, 1d.")  # fmt: skip
@click.option("--max-failures", type=click.IntRange(min=1), default=3, show_default=True,
              metavar="N", help="Give up (exit 1) after N failed runs in a row.")  # fmt: skip
@click.option("--snapshot-repository", metavar="R",
              help="Also take a snapshot into R every run.")  # fmt: skip
@click.option("--snapshot-max-age", type=DURATION, metavar="DURATION",
              help="Also delete snapshots of R older than this (never the newest).")  # fmt: skip
@click.option("--snapshot-keep", type=click.IntRange(min=0), default=1, show_default=True,
              metavar="N", help="Newest successful snapshots always kept.")  # fmt: skip
@click.pass_context
def maintain(
    ctx: click.Context,
    *,
    loop: bool,
    interval: _dt.timedelta,
    max_failures: int,
    snapshot_repository: str | None,
    snapshot_max_age: _dt.timedelta | None,
    snapshot_keep: int,
) -> None:
    """Index maintenance: time-series aliases, expired partitions, old indexes left by
    successful reindexes; optionally snapshots. --loop: on a schedule, until SIGTERM or
    Ctrl-C (the run in progress finishes first)."""
    if snapshot_max_age is not None and not snapshot_repository:
        raise click.UsageError("--snapshot-max-age needs --snapshot-repository")
    mapper = mapper_of(ctx)
    jobs: list[Job] = [MaintainIndexesJob(mapper), CleanupIndexesJob(mapper, dry_run=False)]
    if snapshot_repository:
        jobs.append(SnapshotJob(mapper, snapshot_repository))
        if snapshot_max_age is not None:
            jobs.append(
                CleanupSnapshotsJob(
                    mapper, snapshot_repository, max_age=snapshot_max_age, keep=snapshot_keep
                )
            )
    runner = JobRunner(
        jobs,
        interval=interval,
        max_failures=max_failures,
        on_result=lambda result: _echo_result(result, warn=loop),
    )
    if not loop:
        outcome = runner.run_once()
        if outcome.failed:
            more = len(outcome.failed) - 1
            also = f" (and {more} more failed)" if more else ""
            raise CliError(_message(outcome.failed[0], ctx) + also)
        skipped = [r for r in outcome.results if r.skipped]
        if skipped:
            raise LockHeld(f"{skipped[0].job} skipped: {skipped[0].message}")
        return
    stop, cancel = threading.Event(), threading.Event()
    with stop_on_signals(stop, cancel):  # announced once a signal is handled, not before
        click.echo(f"maintain: every {format_duration(interval)} until SIGTERM or Ctrl-C", err=True)
        ended = runner.loop(stop, cancel)
    if ended.reason == "cancelled":
        raise Cancelled(f"maintain cancelled during run {ended.runs}")
    if ended.reason == "failed":
        assert ended.last is not None
        first = ended.last.failed[0]
        raise CliError(
            f"maintain gave up after {ended.failures_in_a_row} failed runs in a row; last: "
            f"{_message(first, ctx)}"
        )
    click.echo(f"maintain: stopped after {ended.runs} runs", err=True)


# -- snapshots -------------------------------------------------------------------------


def _snapshot_line(info: SnapshotInfo, result: JobResult) -> str:
    return (
        f"snapshot {info.repository}/{info.name}: {info.state}, {len(info.indices)} indexes, "
        f"{info.shards_total} shards ({result.seconds:.1f}s)"
    )


@click.group()
def snapshot() -> None:
    """Snapshots of the application's indexes: create, clean up."""


@snapshot.command("create")
@click.option("--repository", default=DEFAULT_REPOSITORY, show_default=True, metavar="R",
              help="A registered snapshot repository.")  # fmt: skip
@click.option("--indexes", metavar="I,...", multiple=True,
              help="Indexes or aliases (default: every model's alias and the migration "
              "state).")  # fmt: skip
@click.option("--name", "name_pattern", default=DEFAULT_NAME, show_default=True,
              metavar="PATTERN", help="strftime pattern of the name (UTC).")  # fmt: skip
@click.option("--no-wait", is_flag=True, help="Return once it started.")
@click.option("--timeout", type=POSITIVE_DURATION, metavar="DURATION",
              help="Stop waiting after this long (the snapshot goes on).")  # fmt: skip
@click.pass_context
def snapshot_create(
    ctx: click.Context,
    *,
    repository: str,
    indexes: Sequence[str],
    name_pattern: str,
    no_wait: bool,
    timeout: _dt.timedelta | None,
) -> None:
    """Take a snapshot and wait for it, showing the shards done (locked per repository)."""
    mapper = mapper_of(ctx)
    targets = [i.strip() for group in indexes for i in group.split(",") if i.strip()] or None
    shown: list[tuple[int, int]] = []

    def progress(p: SnapshotProgress) -> None:
        if p.state in ("IN_PROGRESS", "STARTED") and (p.done, p.total) not in shown[-1:]:
            shown.append((p.done, p.total))
            click.echo(f"snapshot {p.name}: {p.done}/{p.total} shards ({p.percent}%)", err=True)

    try:
        snapshot_name(name_pattern, mapper.clock())
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--name") from exc
    job = SnapshotJob(
        mapper, repository, indexes=targets, name_pattern=name_pattern, wait=not no_wait,
        timeout=timeout, progress=progress,
    )  # fmt: skip
    result = _run_cancellable(job)
    _settle(result, ctx)
    if isinstance(result.details, SnapshotInfo) and not no_wait:
        click.echo(_snapshot_line(result.details, result))
    else:
        click.echo(result.message)


@snapshot.command("cleanup")
@click.option("--repository", default=DEFAULT_REPOSITORY, show_default=True, metavar="R")
@click.option("--max-age", type=DURATION, required=True, metavar="DURATION",
              help="Delete snapshots that started longer ago, e.g. 30d.")  # fmt: skip
@click.option("--keep", type=click.IntRange(min=0), default=1, show_default=True, metavar="N",
              help="The N newest successful snapshots are kept whatever their age (the "
              "newest successful one always is).")  # fmt: skip
@click.option("--dry-run", is_flag=True, help="List what would be deleted; delete nothing.")
@click.pass_context
def snapshot_cleanup(
    ctx: click.Context, *, repository: str, max_age: _dt.timedelta, keep: int, dry_run: bool
) -> None:
    """Delete old snapshots of R, never the newest successful one (locked per repository)."""
    job = CleanupSnapshotsJob(
        mapper_of(ctx), repository, max_age=max_age, keep=keep, dry_run=dry_run
    )
    result = _run_cancellable(job)
    report = result.details
    if isinstance(report, SnapshotCleanupReport):
        verb = "would delete" if dry_run else "deleted"
        for snap in report.deleted:
            click.echo(f"{verb} {snap}")
        for snap, why in report.kept:
            click.echo(f"kept {snap}: {why}")
        for snap, error in report.failed:
            click.echo(f"warning: could not delete {snap}: {error}", err=True)
    _settle(result, ctx)
    click.echo(f"snapshot cleanup: {result.message}")


# -- indexes cleanup -------------------------------------------------------------------


@click.command("cleanup")
@click.argument("model_names", metavar="[MODEL]...", nargs=-1)
@click.option("--pattern", "patterns", multiple=True, metavar="P",
              help="Also dated indexes matching P (e.g. 'logs-*'), with --max-age.")  # fmt: skip
@click.option("--max-age", type=DURATION, metavar="DURATION",
              help="Age past which a --pattern index is deleted (its name's date).")  # fmt: skip
@click.option("--yes", is_flag=True, help="Delete (default: only list what would be deleted).")
@click.pass_context
def indexes_cleanup(
    ctx: click.Context,
    model_names: tuple[str, ...],
    patterns: tuple[str, ...],
    max_age: _dt.timedelta | None,
    yes: bool,
) -> None:
    """Delete expired time-series partitions and the old indexes successful reindexes
    left (of every model, or of each MODEL). Without --yes: a dry run."""
    if patterns and max_age is None:
        raise click.UsageError("--pattern needs --max-age")
    mapper = mapper_of(ctx)
    models = [find_model(mapper, n) for n in model_names] or None
    job = CleanupIndexesJob(mapper, models, dry_run=not yes, patterns=patterns, max_age=max_age)
    result = _run_cancellable(job)
    _settle(result, ctx)
    report = result.details
    assert isinstance(report, IndexCleanupReport)
    if not yes:
        click.echo("dry run: nothing is deleted without --yes")
        for item in report.candidates:
            owner = f"{item.model}: " if item.model else ""
            click.echo(f"  {item.kind:<9} {item.index} ({owner}{item.reason})")
    else:
        for name in report.deleted:
            click.echo(f"deleted {name}")
    for item in report.kept:
        click.echo(f"kept {item.index}: {item.reason}")
    if yes:
        click.echo(f"index cleanup: {result.message}")
    else:
        click.echo(f"{result.message}; run again with --yes to delete")


# -- health ----------------------------------------------------------------------------


def print_health(mapper: Mapper) -> HealthReport:
    """Print :meth:`~esmapper.Mapper.health`; raises the CLI error (exit 1) when something
    needs attention."""
    report = mapper.health()
    for line in report.lines():
        click.echo(line)
    if not report.ok:
        count = len(report.attention)
        first = report.attention[0]
        raise CliError(f"{count} issue(s) need attention; first: {first}")
    return report
