"""The ``esmapper`` command line (click).

Global options name the application's mapper (``--app module:attribute`` or
``ESMAPPER_APP``; the attribute is a :class:`~esmapper.Mapper` or a zero-argument callable
returning one, imported with the current directory on ``sys.path``) and override its address
(``--url`` or ``ESMAPPER_URL``). Commands: ``migrate [--dry-run] [--retry-failed]
[--no-reindex] [--lock-wait S] [--lock-ttl S] [--parallel N] [THROTTLE]``, ``status
[--health]``, ``maintain [--loop --interval 1h]``, ``snapshot create|cleanup``, ``reindex
NAME [--lock-wait S] [--lock-ttl S] [THROTTLE]``, ``indexes configure [MODEL...] [--force]
[--lock-wait S] [--lock-ttl S] [--begin-reindexing-outdated]``, ``jobs reindex-worker
[--once | --loop]`` (:mod:`esmapper._cli_work`), ``indexes list``, ``indexes mapping MODEL
[--declared]``, ``indexes stats [MODEL...]`` (:mod:`esmapper._cli_indexes`), ``indexes
delete MODEL... [--yes]`` and ``indexes cleanup [MODEL...] [--yes]`` (dry runs without
``--yes``; the job commands: :mod:`esmapper._cli_jobs`), ``ids audit MODEL``, ``ids rekey
MODEL [--apply] [--batch-size N]``, ``fields list|add|rename|remove MODEL --tenant T``
(:mod:`esmapper.custom_fields.cli`) and ``server [--port N] [--data-dir DIR]`` (a local
Elasticsearch-compatible server for development; needs no ``--app``); a model NAME is its
class name or its index name (with or without the prefix), case-insensitive. THROTTLE is
``--batch-size N --requests-per-second N --stall-timeout S``. ``migrate`` and ``reindex``
show a progress bar per reindexed model (click's: a bar on a terminal, its label once
elsewhere).

Exit codes: 0 success; 1 failure (a failed migration or job, an unreachable server, any
esmapper error, ``status --health`` finding something that needs attention); 2 a lock is
held by another process, or a usage error (an unknown option, a bad value, a missing
argument); 3 cancelled. Every failure prints one ``error: ...`` line on stderr, never a
traceback: values are checked before a command runs (URLs need a scheme and a port,
durations are finite), and an unexpected exception is reported in one line too. ``-v``
shows the logs (INFO, one summary line per command and job, and an unexpected exception's
traceback); ``-vv``: DEBUG, every request sent.
"""

from __future__ import annotations

import logging
import time
from contextlib import ExitStack
from datetime import timedelta
from typing import Any

import click
from elasticsearch import NotFoundError

from esmapper._cli_app import (
    Cancelled,
    CliError,
    LockHeld,
    UsageLine,
    error_for,
    find_model,
    mapper_of,
)
from esmapper._cli_indexes import configure as configure_indexes
from esmapper._cli_indexes import list_indexes
from esmapper._cli_indexes import mapping as index_mapping
from esmapper._cli_indexes import stats as index_stats
from esmapper._cli_jobs import indexes_cleanup, maintain, print_health, snapshot
from esmapper._cli_reindex import ReindexBars, throttle, throttle_options
from esmapper._cli_server import server
from esmapper._cli_types import POSITIVE_DURATION, ElasticsearchUrl, Seconds, cli_spelling
from esmapper._cli_work import jobs
from esmapper._rekey_audit import audit_types
from esmapper._rekey_backup import model_indexes, recent_snapshot
from esmapper._shards import count_all
from esmapper._text import table
from esmapper._version import __version__
from esmapper.custom_fields.cli import fields
from esmapper.errors import MigrationError, PartialResultsError
from esmapper.indexes._reindex_errors import error_counts
from esmapper.indexes.blocks import block_report
from esmapper.indexes.leftovers import Leftover, find_leftovers
from esmapper.indexes.reindex import LOCK_WAIT as REINDEX_LOCK_WAIT
from esmapper.indexes.reindex import reindex as reindex_model
from esmapper.indexes.spec import index_owners
from esmapper.locks import LockProvider
from esmapper.mapper import Mapper
from esmapper.migrations import MigrationResult, plan, run_migrations
from esmapper.migrations.planning import in_progress, index_version, view_index
from esmapper.migrations.runner import LOCK_TTL
from esmapper.model.dates import format_datetime
from esmapper.rekey import audit as rekey_audit
from esmapper.rekey import rekey as rekey_model

__all__ = ["main"]

log = logging.getLogger("esmapper.cli")


def _one_line(error: click.UsageError) -> click.UsageError | CliError:
    """``error`` as one line; a group run without a command still shows its help."""
    if isinstance(error, click.exceptions.NoArgsIsHelpError):
        return error
    return UsageLine(error)


class _Group(click.Group):
    """Turns the exceptions of any command, and click's usage errors, into one ``error:``
    line. Its sub-groups are of this class too (``@main.group()``)."""

    group_class = type

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.UsageError as exc:
            raise _one_line(exc) from None

    def invoke(self, ctx: click.Context) -> Any:
        started = time.monotonic()
        try:
            result = super().invoke(ctx)
        except click.UsageError as exc:
            if isinstance(exc, click.exceptions.NoArgsIsHelpError):
                raise
            line = UsageLine(exc)
            _summary(ctx, started, f"failed (exit {line.exit_code}): {line.format_message()}")
            raise line from None
        except click.ClickException as exc:
            _summary(ctx, started, f"failed (exit {exc.exit_code}): {exc.format_message()}")
            raise
        except (click.exceptions.Exit, click.Abort):  # a sub-command's --help, Ctrl-C
            raise
        except Exception as exc:
            error = error_for(exc, ctx)
            _summary(ctx, started, f"failed: {error.format_message() if error else exc!r}")
            if error is None:  # a bug: the traceback goes to the log (-v shows it)
                log.error("unexpected error", exc_info=exc)
                error = CliError(
                    f"unexpected {type(exc).__name__}: {exc} (run with -v for the traceback)"
                )
            raise error from exc
        _summary(ctx, started, "done")
        return result


def _summary(ctx: click.Context, started: float, outcome: str) -> None:
    """The one-line INFO summary of a command (``esmapper status: done in 0.2s``)."""
    command = ctx.invoked_subcommand
    if command is not None:
        seconds = time.monotonic() - started
        log.info("esmapper %s: %s (%.1fs)", command, outcome, seconds)


class _EchoHandler(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        click.echo(self.format(record), err=True)


def _setup_logging(ctx: click.Context, verbose: int) -> None:
    quiet = logging.NullHandler()
    for name in ("esmapper", "elastic_transport"):  # no "last resort" output on stderr
        logging.getLogger(name).addHandler(quiet)
        ctx.call_on_close(lambda name=name: logging.getLogger(name).removeHandler(quiet))
    if verbose:
        handler = _EchoHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        root, transport = logging.getLogger(), logging.getLogger("elastic_transport")
        previous = root.level, transport.level
        root.addHandler(handler)
        root.setLevel(logging.INFO if verbose == 1 else logging.DEBUG)
        transport.setLevel(logging.WARNING if verbose == 1 else logging.DEBUG)

        ctx.call_on_close(lambda: root.removeHandler(handler))
        ctx.call_on_close(lambda: root.setLevel(previous[0]))
        ctx.call_on_close(lambda: transport.setLevel(previous[1]))


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", "-V", prog_name="esmapper")
@click.option("--app", envvar="ESMAPPER_APP", show_envvar=True, metavar="MODULE:ATTR",
              help="The Mapper to use, e.g. myapp.models:mapper (its module is imported "
                   "from the current directory).")  # fmt: skip
@click.option("--url", envvar="ESMAPPER_URL", show_envvar=True, metavar="URL",
              type=ElasticsearchUrl(),
              help="Elasticsearch address with its scheme and port, e.g. "
                   "http://127.0.0.1:9200 (overrides the mapper's).")  # fmt: skip
@click.option("-v", "--verbose", count=True, help="Show logs on stderr (-vv: debug).")
@click.pass_context
def main(ctx: click.Context, app: str | None, url: str | None, verbose: int) -> None:
    """esmapper: models, migrations and index maintenance for Elasticsearch.

    The commands that work on an application's indexes need its Mapper: --app (or
    ESMAPPER_APP) names it, --url (or ESMAPPER_URL) points it at another cluster.
    `esmapper server` starts a local Elasticsearch-compatible server for development."""
    ctx.obj = {"app": app, "url": url}
    _setup_logging(ctx, verbose)


main.add_command(server)


@main.command()
@click.option("--dry-run", is_flag=True, help="Print the plan; change nothing.")
@click.option("--retry-failed", is_flag=True, help="Run failed versioned migrations again.")
@click.option("--no-reindex", is_flag=True, help="Leave outdated indexes alone.")
@click.option("--lock-wait", type=Seconds(), default=0.0, metavar="SECONDS", show_default=True,
              help="How long to wait for the migrations lock.")  # fmt: skip
@click.option(
    "--lock-ttl",
    type=Seconds(1),
    default=LOCK_TTL.total_seconds(),
    metavar="SECONDS",
    show_default=True,
    help="Expiry of the locks the run takes (renewed every third of it while it "
    "runs); a run killed on another machine blocks the next ones this long.",
)
@click.option("--parallel", type=click.IntRange(1, 64), default=1, metavar="N", show_default=True,
              help="Reindex up to N outdated models at once (each in its own thread, under "
                   "its own lock; no progress bars above 1).")  # fmt: skip
@throttle_options
@click.pass_context
def migrate(
    ctx: click.Context,
    *,
    dry_run: bool,
    retry_failed: bool,
    no_reindex: bool,
    lock_wait: float,
    lock_ttl: float,
    parallel: int,
    batch_size: int | None,
    requests_per_second: float | None,
    stall_timeout: float | None,
) -> None:
    """Configure indexes, run pending migrations, reindex outdated indexes, delete old
    indexes a killed reindex left behind (and lift the write block it left)."""
    mapper = mapper_of(ctx)
    names = {mapper.spec(m).alias: m.__name__ for m in mapper.models}
    with ExitStack() as stack:
        bars = ReindexBars(stack, lambda alias: f"reindex {names.get(alias, alias)}")

        def echo(outcome: Any) -> None:
            bars.close()
            click.echo(str(outcome))

        report = run_migrations(
            mapper,
            dry_run=dry_run,
            retry_failed=retry_failed,
            reindex=not no_reindex,
            lock_wait=timedelta(seconds=lock_wait),
            lock_ttl=timedelta(seconds=lock_ttl),
            on_outcome=None if dry_run else echo,
            progress=bars if parallel == 1 else None,  # one bar at a time
            max_parallel=parallel,
            **throttle(batch_size, requests_per_second, stall_timeout),
        )
    if dry_run:
        click.echo("plan (dry run, nothing changed):")
        for step in report.steps:
            click.echo(f"  {cli_spelling(str(step))}")
        if not report.steps:
            click.echo("  nothing to do")
    for warning in report.warnings:
        click.echo(f"warning: {warning}", err=True)
    if report.result is not MigrationResult.SUCCESS:
        kinds = {
            MigrationResult.UNABLE_TO_ACQUIRE_LOCK: LockHeld,
            MigrationResult.CANCELLED: Cancelled,
        }
        raise kinds.get(report.result, CliError)(report.error or report.result.value)
    if not dry_run:
        click.echo(f"migrations: {report.result.value}")


def _doc_count(mapper: Mapper, alias: str) -> str:
    """The document count of ``alias`` for ``status``; ``"-"`` without the index, and a
    count some shards did not answer shown as a lower bound (``"12+ (1 of 3 shards
    failed)"``)."""
    try:
        return str(count_all(mapper.client, what=f"the count of {alias}", index=alias))
    except NotFoundError:
        return "-"
    except PartialResultsError as exc:
        shards = exc.shards
        failed = f"{shards.failed} of {shards.total} shards failed" if shards.failed else ""
        return f"{exc.results}+ ({failed or 'timed out'})"


@main.command()
@click.option("--health", is_flag=True,
              help="Check health instead; exit 1 when something needs attention.")  # fmt: skip
@click.pass_context
def status(ctx: click.Context, health: bool) -> None:
    """Indexes, versions, alias targets, doc counts, old indexes left behind, documents in
    reindex error indexes, a migrate run in progress and pending migrations (read-only).
    --health: cluster status, alias -> index, pending reindexes, write blocks, mapping
    drift, field counts, pipelines."""
    mapper = mapper_of(ctx)
    if health:
        print_health(mapper)
        return
    rows = [["MODEL", "ALIAS", "INDEX", "VERSION", "DOCS", "STATE"]]
    left: list[Leftover] = []
    blocks: list[str] = []
    errors: dict[str, int] = {}
    locks = LockProvider(mapper.client, index_prefix=mapper.index_prefix, clock=mapper.clock)
    for owners, spec in index_owners(mapper.spec(model) for model in mapper.models):
        view = view_index(mapper.client, spec)
        index, version = view.current or "-", str(spec.version)
        if spec.kind == "plain":
            version = "plain"
        elif spec.kind in ("daily", "monthly"):
            index = f"{spec.physical_name()}-* ({view.partitions} partitions)"
            version = f"{spec.version} ({spec.kind})"
            if view.outdated:  # the lowest live version first
                version = f"{view.lowest_version}/{spec.version} ({spec.kind})"
        else:
            now = index_version(view.current)
            version = f"{'-' if now is None else now}/{spec.version}"
        state = "outdated" if view.outdated else "ok" if view.exists else "missing"
        if view.current is None and view.exists and spec.kind == "versioned":
            state = "no alias"
        leftovers = find_leftovers(mapper.client, spec)
        if leftovers and state == "ok":
            state = "leftover"
        left.extend(leftovers)
        if spec.kind != "plain":
            errors.update(error_counts(mapper.client, spec))
        blocked = block_report(locks, spec)
        if blocked:
            state = "write-blocked"
            blocks.extend(blocked)
        count = "-" if view.empty else _doc_count(mapper, spec.alias)
        rows.append([owners, spec.alias, index, version, count, state])
    for line in table(rows) if len(rows) > 1 else ["no models"]:
        click.echo(line)
    if left:
        click.echo(f"old indexes left behind: {len(left)}")
        for leftover in left:
            click.echo(f"  {leftover.index} ({leftover.docs} documents): {leftover.reason}")
    for index, docs in errors.items():
        click.echo(
            f"reindex errors: {index} ({docs} documents a reindex could not copy; inspect, "
            "then delete the index)"
        )
    for line in blocks:
        click.echo(f"write blocked: {line}")
    running = in_progress(mapper)
    if running is not None:
        click.echo(f"migrate in progress: the migrations lock is held by {running}")
    steps = [s for s in plan(mapper) if s.is_migration]
    click.echo(f"pending migrations: {len(steps) or 'none'}")
    for step in steps:
        click.echo(f"  {cli_spelling(str(step))}")


@main.command()
@click.argument("name")
@click.option(
    "--lock-wait",
    type=Seconds(),
    default=REINDEX_LOCK_WAIT.total_seconds(),
    metavar="SECONDS",
    show_default=True,
    help="How long to wait for a reindex of the same index running elsewhere.",
)
@click.option(
    "--lock-ttl",
    type=Seconds(1),
    default=LOCK_TTL.total_seconds(),
    metavar="SECONDS",
    show_default=True,
    help="Expiry of the reindex lock (renewed every third of it while it runs).",
)
@throttle_options
@click.pass_context
def reindex(
    ctx: click.Context,
    name: str,
    *,
    lock_wait: float,
    lock_ttl: float,
    batch_size: int | None,
    requests_per_second: float | None,
    stall_timeout: float | None,
) -> None:
    """Reindex NAME (a model or index name) to its current version; atomic alias swap.

    A write block a killed reindex left on the index is lifted first."""
    mapper = mapper_of(ctx)
    model = find_model(mapper, name)
    options: dict[str, Any] = {
        "lock_wait": timedelta(seconds=lock_wait),
        "lock_ttl": timedelta(seconds=lock_ttl),
        **throttle(batch_size, requests_per_second, stall_timeout),
    }
    with ExitStack() as stack:
        bars = ReindexBars(stack, lambda alias: f"reindex {model.__name__}")
        result = reindex_model(mapper, model, progress=bars, **options)
    cleared = result.cleared_block_seconds
    if cleared is not None:
        click.echo(f"lifted the write block a killed reindex left (on for {cleared:.0f}s)")
    if result.status == "up_to_date":
        click.echo(f"{model.__name__} is up to date ({result.new_index})")
        return
    if result.resumed_from is not None:
        began = format_datetime(result.resumed_from)
        click.echo(
            f"resumed the interrupted reindex (its copy began {began}): copied only the "
            "documents it lacked or that changed since"
        )
    partitions = result.partitions
    old = "old partitions" if partitions else "old index"
    writes = f", writes blocked {result.blocked_seconds:.2f}s"
    click.echo(
        f"reindexed {model.__name__}: {result.old_index} -> {result.new_index}"
        f"{f' ({len(partitions)} partitions)' if partitions else ''}, "
        f"{result.copied} copied, {result.caught_up} caught up, {old} "
        f"{'deleted' if result.old_deleted else 'kept'}{writes} ({result.seconds:.1f}s)"
    )


main.add_command(maintain)
main.add_command(snapshot)
main.add_command(jobs)


@main.group()
def indexes() -> None:
    """Index lifecycle: configure, list, show mappings and stats, delete a model's
    indexes, clean up old ones."""


indexes.add_command(configure_indexes)
indexes.add_command(list_indexes)
indexes.add_command(index_mapping)
indexes.add_command(index_stats)
indexes.add_command(indexes_cleanup)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 'es' if word.endswith(('s', 'x')) else 's'}"


@indexes.command("delete")
@click.argument("model_names", metavar="MODEL...", nargs=-1, required=True)
@click.option("--yes", is_flag=True, help="Delete (default: only list what would be deleted).")
@click.pass_context
def delete_indexes(ctx: click.Context, model_names: tuple[str, ...], yes: bool) -> None:
    """Delete every index (all versions, partitions, leftovers), alias and index template
    of each MODEL (a class or index name), by exact name. Without --yes: a dry run."""
    mapper = mapper_of(ctx)
    models = list(dict.fromkeys(find_model(mapper, name) for name in model_names))
    reports = mapper.delete_indexes(models, dry_run=not yes)
    if not yes:
        click.echo("dry run: nothing is deleted without --yes")
    for report in reports:
        head = f"{report.model} ({report.alias})"
        if report.empty:
            click.echo(f"{head}: nothing to delete")
            continue
        click.echo(f"{head}:" if not yes else f"{head}: deleted")
        for name in report.indexes:
            click.echo(f"  index     {name}")
        for name in report.aliases:
            kept = [index for alias, index in report.detached if alias == name]
            extra = f" (removed from {', '.join(kept)}, not the model's: kept)" if kept else ""
            click.echo(f"  alias     {name}{extra}")
        for name in report.templates:
            click.echo(f"  template  {name}")
    totals = (
        f"{_plural(sum(len(r.indexes) for r in reports), 'index')}, "
        f"{_plural(sum(len(r.aliases) for r in reports), 'alias')}, "
        f"{_plural(sum(len(r.templates) for r in reports), 'template')}"
    )
    if yes:
        click.echo(f"deleted: {totals}")
    else:
        click.echo(f"would delete: {totals}; run again with --yes to delete")


@main.group()
def ids() -> None:
    """Document id checks and re-keying (id_fields)."""


@ids.command()
@click.argument("model_name", metavar="[MODEL]", required=False)
@click.pass_context
def audit(ctx: click.Context, model_name: str | None) -> None:
    """Report documents whose id no longer matches the model's id_fields (read-only).

    Without MODEL: one line per model, whether re-keying concerns it (its id terms) and how
    many stored documents each status counts."""
    mapper = mapper_of(ctx)
    if model_name is None:
        for kind in audit_types(mapper, mapper.models):
            click.echo(kind.line)
        return
    counts = {"ok": 0, "rewrite": 0, "blocked": 0}
    for item in rekey_audit(mapper, find_model(mapper, model_name)):
        counts[item.status] = counts.get(item.status, 0) + 1
        if item.status == "rewrite":
            click.echo(f"REWRITE {item.old_id} -> {item.new_id}")
        elif item.status != "ok":
            click.echo(f"{item.status.upper()} {item.old_id} -> {item.new_id or '-'} "
                       f"({item.reason})")  # fmt: skip
    click.echo(", ".join(f"{n} {status}" for status, n in counts.items()))


@ids.command()
@click.argument("model_name", metavar="MODEL")
@click.option("--apply", is_flag=True, help="Write the changes (default: report only).")
@click.option("--batch-size", type=click.IntRange(1, 10_000), default=500, show_default=True,
              metavar="N", help="Documents read per page of the scan.")  # fmt: skip
@click.option("--snapshot-repository", metavar="R", default=None,
              help="With --apply: run only if R holds a successful snapshot of the model's "
                   "indexes, taken within --snapshot-max-age.")  # fmt: skip
@click.option("--snapshot-max-age", type=POSITIVE_DURATION, default="24h", show_default=True,
              metavar="AGE", help="How old that snapshot may be (30m, 24h, 7d).")  # fmt: skip
@click.option("--i-have-a-backup", "backup", is_flag=True,
              help="With --apply: run without checking for a snapshot (you restore from "
                   "your own backup if needed).")  # fmt: skip
@click.pass_context
def rekey(
    ctx: click.Context,
    *,
    model_name: str,
    apply: bool,
    batch_size: int,
    snapshot_repository: str | None,
    snapshot_max_age: timedelta,
    backup: bool,
) -> None:
    """Re-key documents whose id no longer matches id_fields (dry run unless --apply).

    Re-keying cannot be undone by redeploying: --apply needs a recent snapshot
    (--snapshot-repository) or --i-have-a-backup. An interrupted run (killed,
    disconnected) is completed by running it again."""
    mapper = mapper_of(ctx)
    model = find_model(mapper, model_name)
    if apply and not backup:
        _require_snapshot(mapper, model, snapshot_repository, snapshot_max_age)
    report = rekey_model(mapper, model, apply=apply, echo=click.echo, batch_size=batch_size)
    click.echo(report.summary)
    if report.failed:
        raise CliError(f"{report.failed} document(s) could not be re-keyed")


def _require_snapshot(
    mapper: Mapper, model: type, repository: str | None, max_age: timedelta
) -> None:
    """Refuse ``rekey --apply`` (CliError) unless ``repository`` holds a successful snapshot
    of every index of ``model`` taken within ``max_age``; echo the one found."""
    advice = (
        "rekey --apply rewrites document ids, which redeploying cannot undo: take a snapshot"
        " first (esmapper snapshot create --repository R) and pass --snapshot-repository R,"
        " or pass --i-have-a-backup"
    )
    if repository is None:
        raise CliError(advice)
    try:
        found = recent_snapshot(mapper, model, repository, max_age=max_age)
    except MigrationError as exc:
        raise CliError(f"{exc}; {advice}") from None
    if found is None:
        indexes = ", ".join(model_indexes(mapper, model)) or "-"
        raise CliError(
            f"no successful snapshot in {repository!r} of {indexes} ended within "
            f"{max_age}; {advice}"
        )
    click.echo(f"backup: {found}")


main.add_command(fields)

if __name__ == "__main__":
    main(prog_name="esmapper")
