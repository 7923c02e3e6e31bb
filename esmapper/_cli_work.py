"""``esmapper jobs reindex-worker [--once | --loop]``: run the reindex work items that
``configure_indexes(begin_reindexing_outdated=True)`` enqueued on the mapper's
``work_queue`` (:class:`~esmapper.jobs.ReindexWorker`).

``--once`` (the default) runs at most one item: exit 0 when it is done or when none is
pending, 1 (one ``error:`` line) when it failed (the item goes back to the queue, or to
its failed items after its last attempt), 3 when cancelled. ``--loop`` runs items until
SIGTERM or Ctrl-C (the item in progress finishes first; a second signal cancels it: the
reindex rolls back, the item goes back to the queue), printing one line per item.
"""

from __future__ import annotations

import datetime as _dt
import threading

import click

from esmapper._cli_app import Cancelled, CliError, mapper_of
from esmapper._cli_types import Seconds
from esmapper.indexes.reindex import LOCK_TTL, LOCK_WAIT
from esmapper.jobs import JobResult, stop_on_signals
from esmapper.jobs._reindex_items import ReindexWorker
from esmapper.jobs._work_queue import DEFAULT_LEASE

__all__ = ["jobs"]


@click.group()
def jobs() -> None:
    """Background jobs: workers for the work queue."""


def _line(result: JobResult) -> str:
    return str(result) if not result.is_success else result.message


@jobs.command("reindex-worker")
@click.option("--once/--loop", default=True,
              help="Run one item (default), or items until SIGTERM or Ctrl-C.")  # fmt: skip
@click.option("--lease", type=Seconds(1), default=DEFAULT_LEASE.total_seconds(),
              show_default=True, metavar="SECONDS",
              help="How long an item stays this worker's between renewals (a worker "
              "dead that long loses it to another).")  # fmt: skip
@click.option("--idle", type=Seconds(low_open=True), default=5.0, show_default=True,
              metavar="SECONDS",
              help="With --loop: wait between polls of an empty queue.")  # fmt: skip
@click.option("--lock-wait", type=Seconds(), default=LOCK_WAIT.total_seconds(),
              show_default=True, metavar="SECONDS",
              help="How long to wait for a reindex of the same index running "
              "elsewhere.")  # fmt: skip
@click.option("--lock-ttl", type=Seconds(1), default=LOCK_TTL.total_seconds(),
              show_default=True, metavar="SECONDS",
              help="Expiry of the reindex lock (renewed every third of it).")  # fmt: skip
@click.option("--stall-timeout", type=Seconds(low_open=True), default=None,
              metavar="SECONDS", help="Fail a reindex pass that makes no progress this "
              "long (default: max(600, 3 * batch / rps)).")  # fmt: skip
@click.pass_context
def reindex_worker(
    ctx: click.Context,
    *,
    once: bool,
    lease: float,
    idle: float,
    lock_wait: float,
    lock_ttl: float,
    stall_timeout: float | None,
) -> None:
    """Run reindex work items from the mapper's work queue (each item carries its own
    throttle)."""
    mapper = mapper_of(ctx)
    if mapper.work_queue is None:
        raise CliError("the mapper has no work queue: give it one, Mapper(work_queue=...)")
    worker = ReindexWorker(
        mapper,
        lease=_dt.timedelta(seconds=lease),
        lock_wait=_dt.timedelta(seconds=lock_wait),
        lock_ttl=_dt.timedelta(seconds=lock_ttl),
        stall_timeout=None if stall_timeout is None else _dt.timedelta(seconds=stall_timeout),
    )
    stop, cancel = threading.Event(), threading.Event()
    if once:
        with stop_on_signals(cancel, cancel):
            result = worker.run_once(cancel)
        if result is None:
            click.echo("no reindex work item pending")
            return
        if result.is_cancelled:
            raise Cancelled(result.message)
        if not result.is_success:
            raise CliError(result.message)
        click.echo(result.message)
        return
    with stop_on_signals(stop, cancel):  # announced once a signal is handled, not before
        click.echo("reindex-worker: running items until SIGTERM or Ctrl-C", err=True)
        runs = worker.loop(
            stop,
            cancel,
            idle=_dt.timedelta(seconds=idle),
            on_result=lambda result: click.echo(_line(result)),
        )
    if cancel.is_set():
        raise Cancelled(f"reindex-worker cancelled after {runs} items")
    click.echo(f"reindex-worker: stopped after {runs} items", err=True)
