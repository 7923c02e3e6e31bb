"""The CLI without a server: loading the app, model lookup, error lines, result output."""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import esmapper as em
from esmapper._cli_app import find_model, load_mapper
from esmapper._rekey_audit import TypeAudit
from esmapper.cli import main
from esmapper.indexes import ReindexProgress, ReindexResult
from esmapper.rekey import RekeyPlan, RekeyReport, Status

from .apps import write_app

UNREACHABLE = "http://127.0.0.1:1"


@pytest.fixture
def app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.syspath_prepend(str(tmp_path))
    return write_app(tmp_path, UNREACHABLE, "unit-")


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, list(args), env=env)


def assert_one_error_line(result: Result, *fragments: str, code: int = 1) -> None:
    assert result.exit_code == code, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    for fragment in fragments:
        assert fragment in lines[0]
    assert "Traceback" not in result.output + result.stderr


def test_help_lists_the_commands() -> None:
    result = invoke("--help")
    assert result.exit_code == 0
    for command in ("migrate", "status", "maintain", "reindex", "ids"):
        assert command in result.output


def _command_paths(group: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for name, command in group.commands.items():
        yield (*prefix, name)
        if hasattr(command, "commands"):
            yield from _command_paths(command, (*prefix, name))


COMMAND_PATHS = sorted(_command_paths(main))


@pytest.mark.parametrize("path", COMMAND_PATHS, ids=" ".join)
def test_every_command_answers_help_with_exit_0(path: tuple[str, ...]) -> None:
    result = invoke(*path, "--help")
    assert result.exit_code == 0, result.output + result.stderr
    assert "Usage:" in result.output and path[-1] in result.output
    assert "error" not in result.stderr


def test_the_command_tree_is_walked_into_sub_groups() -> None:
    assert ("migrate",) in COMMAND_PATHS
    assert any(len(path) > 1 for path in COMMAND_PATHS)  # e.g. "indexes delete"


def test_load_mapper_accepts_an_attribute_or_a_factory(app: str) -> None:
    mapper = load_mapper(f"{app}:mapper")
    assert isinstance(mapper, em.Mapper) and mapper.index_prefix == "unit-"
    assert load_mapper(f"{app}:make_mapper") is mapper


def test_url_rebuilds_the_mapper_with_the_same_setup(app: str) -> None:
    original = load_mapper(f"{app}:mapper")
    moved = load_mapper(f"{app}:mapper", "http://127.0.0.1:9999")
    assert moved is not original
    assert (moved.models, moved.index_prefix, moved.migrations) == (
        original.models, original.index_prefix, original.migrations,
    )  # fmt: skip
    nodes = [n.base_url for n in moved.client.transport.node_pool.all()]
    assert nodes == ["http://127.0.0.1:9999"]


def test_url_keeps_the_mapper_s_work_queue(
    app: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--url`` with the reindex worker (or ``configure --begin-reindexing-outdated``)
    must still find the application's queue."""
    (tmp_path / f"{app}_queued.py").write_text(
        f"import esmapper as em\nfrom {app} import Employee\n"
        "mapper = em.Mapper('http://127.0.0.1:1', models=[Employee], index_prefix='unit-',"
        " work_queue=em.InMemoryWorkQueue())\n",
        encoding="utf-8",
    )
    original = load_mapper(f"{app}_queued:mapper")
    moved = load_mapper(f"{app}_queued:mapper", "http://127.0.0.1:9999")
    assert moved.work_queue is original.work_queue is not None
    result = invoke("--app", f"{app}_queued:mapper", "--url", UNREACHABLE, "jobs",
                    "reindex-worker", "--once")  # fmt: skip
    assert (result.exit_code, result.stdout) == (0, "no reindex work item pending\n"), result.output


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("nocolon", "must look like module:attribute"),
        ("no_such_module_xyz:mapper", "cannot import 'no_such_module_xyz'"),
        ("{app}:missing", "has no attribute 'missing'"),
        ("{app}:not_a_mapper", "is an int, not an esmapper Mapper"),
        ("{app}:explode", "RuntimeError: no configuration"),
    ],
)
def test_bad_app_is_one_error_line(app: str, spec: str, fragment: str) -> None:
    assert_one_error_line(invoke("--app", spec.format(app=app), "status"), fragment)


def test_missing_app_is_one_error_line() -> None:
    result = invoke("status", env={"ESMAPPER_APP": ""})
    assert_one_error_line(result, "pass --app module:attribute or set ESMAPPER_APP")


def test_app_from_the_environment_and_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = write_app(tmp_path, UNREACHABLE, "unit-")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    result = invoke("status", env={"ESMAPPER_APP": f"{name}:mapper"})
    assert_one_error_line(result, "cannot reach Elasticsearch at http://127.0.0.1:1")


@pytest.mark.parametrize("command", [["status"], ["migrate"], ["migrate", "--dry-run"]])
def test_unreachable_server_is_one_error_line(app: str, command: list[str]) -> None:
    started = time.monotonic()
    result = invoke("--app", f"{app}:mapper", "--url", UNREACHABLE, *command)
    assert_one_error_line(result, "cannot reach Elasticsearch at http://127.0.0.1:1")
    assert time.monotonic() - started < 10


def test_find_model_by_class_or_index_name(app: str) -> None:
    mapper = load_mapper(f"{app}:mapper")
    (model,) = mapper.models
    for name in ("Employee", "employee", "EMPLOYEES", "unit-employees"):
        assert find_model(mapper, name) is model
    accepted = "Employee or employees (index names with or without the prefix 'unit-')"
    with pytest.raises(
        Exception, match=re.escape(f"'nope'; accepted names (any case): {accepted}")
    ):
        find_model(mapper, "nope")


def test_maintain_prints_the_report_of_each_job(app: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from esmapper import _cli_jobs
    from esmapper.indexes.maintenance import MaintenanceReport
    from esmapper.jobs import CleanupItem, IndexCleanupReport, JobResult

    report = MaintenanceReport(
        expired=("logs-v1-2020.01.01",),
        deleted=("logs-v1-2020.01.01",),
        alias_actions=({"add": {"index": "logs-v1-2030.01.01", "alias": "logs"}},),
    )
    cleaned = IndexCleanupReport(
        candidates=(CleanupItem("emp-v1", "leftover", "replaced", "Employee"),),
        deleted=("emp-v1",),
        dry_run=False,
    )

    class FakeJob:
        def __init__(self, result: JobResult) -> None:
            self.result = result

        def run(self, cancel: Any = None) -> JobResult:
            return self.result

    done = JobResult.success("maintenance", "1 expired, 1 deleted, 1 alias changes", report)
    swept = JobResult.success("index-cleanup", "deleted 1 indexes", cleaned)
    monkeypatch.setattr(_cli_jobs, "MaintainIndexesJob", lambda mapper: FakeJob(done))
    monkeypatch.setattr(_cli_jobs, "CleanupIndexesJob", lambda mapper, **kw: FakeJob(swept))
    result = invoke("--app", f"{app}:mapper", "maintain")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "deleted logs-v1-2020.01.01",
        "alias add logs -> logs-v1-2030.01.01",
        "maintenance: 1 expired, 1 deleted, 1 alias changes",
        "deleted emp-v1",
        "index cleanup: deleted 1 indexes",
    ]


def test_maintain_against_an_unreachable_server_is_one_error_line(app: str) -> None:
    result = invoke("--app", f"{app}:mapper", "--url", UNREACHABLE, "maintain")
    assert_one_error_line(result, "maintenance failed: cannot reach Elasticsearch")


def fake_reindex(
    monkeypatch: pytest.MonkeyPatch, result: ReindexResult, seen: dict[str, Any] | None = None
) -> list[type]:
    called: list[type] = []

    def reindex(
        mapper: em.Mapper,
        model: type,
        *,
        progress: Callable[[ReindexProgress], None],
        **options: Any,
    ) -> ReindexResult:
        called.append(model)
        if seen is not None:
            seen.update(options)
        for done, total, percent in ((0, 0, 0), (50, 100, 50), (100, 100, 100)):
            progress(ReindexProgress(done, total, "copy", "employees", percent))
        return result

    monkeypatch.setattr("esmapper.cli.reindex_model", reindex)
    return called


def reindexed(**values: Any) -> ReindexResult:
    """A ``reindexed`` result of Employee (e-v1 -> e-v2) with ``values``."""
    defaults: dict[str, Any] = {
        "model": "Employee", "alias": "employees", "old_index": "e-v1", "new_index": "e-v2",
        "status": "reindexed", "copied": 5, "caught_up": 1, "old_deleted": True,
    }  # fmt: skip
    return ReindexResult(**{**defaults, **values})


def test_reindex_shows_progress_and_finds_the_model(
    app: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    called = fake_reindex(monkeypatch, reindexed(seconds=0.25, blocked_seconds=0.5))
    done = invoke("--app", f"{app}:mapper", "reindex", "employees")
    assert done.exit_code == 0, done.output
    assert [m.__name__ for m in called] == ["Employee"]
    assert "reindex Employee" in done.stdout  # the progress bar's label
    assert done.stdout.splitlines()[-1] == (
        "reindexed Employee: e-v1 -> e-v2, 5 copied, 1 caught up, old index deleted, writes "
        "blocked 0.50s (0.2s)"
    )

    unknown = invoke("--app", f"{app}:mapper", "reindex", "nope")
    assert_one_error_line(unknown, "unknown model 'nope'")


def test_reindex_passes_the_lock_and_throttle_options(
    app: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from datetime import timedelta

    result = reindexed(seconds=2.5, blocked_seconds=0.125, cleared_block_seconds=75.0)
    seen: dict[str, Any] = {}
    fake_reindex(monkeypatch, result, seen)
    done = invoke(
        "--app", f"{app}:mapper", "reindex", "Employee", "--batch-size", "200",
        "--requests-per-second", "2.5", "--stall-timeout", "30", "--lock-wait", "5",
        "--lock-ttl", "9",
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    assert seen == {
        "batch_size": 200,
        "requests_per_second": 2.5,
        "stall_timeout": timedelta(seconds=30),
        "lock_wait": timedelta(seconds=5),
        "lock_ttl": timedelta(seconds=9),
    }
    assert done.stdout.splitlines()[-2:] == [
        "lifted the write block a killed reindex left (on for 75s)",
        "reindexed Employee: e-v1 -> e-v2, 5 copied, 1 caught up, old index deleted, writes "
        "blocked 0.12s (2.5s)",
    ]
    assert invoke("--app", f"{app}:mapper", "reindex", "Employee").exit_code == 0
    assert seen["batch_size"] is None and seen["requests_per_second"] is None
    assert seen["lock_wait"] == timedelta(minutes=30) and seen["lock_ttl"] == timedelta(seconds=90)
    for bad in (["--batch-size", "0"], ["--requests-per-second", "0"], ["--stall-timeout", "-1"]):
        refused = invoke("--app", f"{app}:mapper", "reindex", "Employee", *bad)
        assert refused.exit_code == 2 and bad[0] in refused.stderr, refused.output


def test_reindex_says_when_it_resumed_an_interrupted_run(
    app: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from datetime import datetime, timezone

    began = datetime(2026, 12, 5, 3, 0, tzinfo=timezone.utc)
    fake_reindex(monkeypatch, reindexed(seconds=1.0, resumed_from=began))
    done = invoke("--app", f"{app}:mapper", "reindex", "Employee")
    assert done.exit_code == 0, done.output
    assert done.stdout.splitlines()[-2] == (
        "resumed the interrupted reindex (its copy began 2026-12-05T03:00:00Z): copied only "
        "the documents it lacked or that changed since"
    )


def test_reindex_up_to_date(app: str, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_reindex(monkeypatch, reindexed(status="up_to_date", old_index="e-v1", new_index="e-v1"))
    done = invoke("--app", f"{app}:mapper", "reindex", "Employee")
    assert done.stdout.splitlines()[-1] == "Employee is up to date (e-v1)"


def test_reindex_errors_are_one_line(app: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def reindex(mapper: em.Mapper, model: type, *, progress: Any, **options: Any) -> None:
        raise em.LockError("lock 'reindex:employees' is held by another process")

    monkeypatch.setattr("esmapper.cli.reindex_model", reindex)
    result = invoke("--app", f"{app}:mapper", "reindex", "Employee")
    assert_one_error_line(result, "is held by another process", code=2)


def test_ids_commands_call_the_rekey_module(app: str, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[str, Any]] = []

    def plan(status: Status, old: str, new: str | None, reason: str | None = None) -> RekeyPlan:
        return RekeyPlan(old, new, status, "employees-v1", 1, 1, reason=reason)

    def audit(mapper: em.Mapper, model: type) -> Iterator[RekeyPlan]:
        seen.append(("audit", model.__name__))
        yield plan("ok", "a:b", "a:b")
        yield plan("rewrite", "a/b", "a%2Fb")
        yield plan("blocked", "x", None, "too long")

    def rekey(
        mapper: em.Mapper, model: type, *, apply: bool, echo: Any, batch_size: int
    ) -> RekeyReport:
        seen.append(("rekey", apply, batch_size))  # type: ignore[arg-type]
        echo("REWRITE a/b -> a%2Fb" if apply else "DRY RUN a/b -> a%2Fb")
        return RekeyReport(apply, to_rewrite=1, rewritten=0, failed=1 if apply else 0)

    monkeypatch.setattr("esmapper.cli.rekey_audit", audit)
    monkeypatch.setattr("esmapper.cli.rekey_model", rekey)
    base = ["--app", f"{app}:mapper", "ids"]
    assert invoke(*base, "audit", "Employee").stdout.splitlines() == [
        "REWRITE a/b -> a%2Fb",
        "BLOCKED x -> - (too long)",
        "1 ok, 1 rewrite, 1 blocked",
    ]
    assert invoke(*base, "rekey", "Employee").stdout == (
        "DRY RUN a/b -> a%2Fb\ndry run: 1 to rewrite, 0 blocked, 0 ok; nothing was changed\n"
    )
    unguarded = invoke(*base, "rekey", "Employee", "--apply")
    assert_one_error_line(unguarded, "take a snapshot first")
    assert "--i-have-a-backup" in unguarded.stderr
    applied = invoke(
        *base, "rekey", "Employee", "--apply", "--i-have-a-backup", "--batch-size", "50"
    )
    assert applied.stdout == "REWRITE a/b -> a%2Fb\n0 rewritten, 1 failed, 0 blocked, 0 ok\n"
    assert_one_error_line(applied, "1 document(s) could not be re-keyed")
    assert seen == [("audit", "Employee"), ("rekey", False, 500), ("rekey", True, 50)]
    too_big = invoke(*base, "rekey", "Employee", "--batch-size", "0")
    assert too_big.exit_code == 2 and "--batch-size" in too_big.stderr


def test_ids_audit_without_a_model_prints_one_line_per_type(
    app: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[list[str]] = []

    def audit_types(mapper: em.Mapper, models: list[type]) -> Iterator[TypeAudit]:
        seen.append([m.__name__ for m in models])
        yield TypeAudit("Inbox", "inbox", 3, True, "3 terms", ok=5, rewrite=2, blocked=0)
        yield TypeAudit("Employee", "employees", 0, False, "generated ids: nothing to re-key")

    monkeypatch.setattr("esmapper.cli.audit_types", audit_types)
    result = invoke("--app", f"{app}:mapper", "ids", "audit")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "Inbox  index=inbox  id parts=3 -> AFFECTED (2 to rewrite, 0 blocked, 5 ok)",
        "Employee  index=employees  id parts=0 -> not affected (generated ids: nothing to re-key)",
    ]
    assert seen == [["Employee"]]


def test_migrate_passes_the_lock_options(app: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from datetime import timedelta

    seen: dict[str, Any] = {}

    def run(mapper: em.Mapper, **options: Any) -> em.migrations.MigrationRun:
        seen.update(options)
        return em.migrations.MigrationRun(em.MigrationResult.SUCCESS)

    monkeypatch.setattr("esmapper.cli.run_migrations", run)
    result = invoke("--app", f"{app}:mapper", "migrate", "--lock-wait", "5", "--lock-ttl", "2")
    assert result.exit_code == 0, result.output
    assert (seen["lock_wait"], seen["lock_ttl"]) == (timedelta(seconds=5), timedelta(seconds=2))
    assert invoke("--app", f"{app}:mapper", "migrate").exit_code == 0
    assert seen["lock_ttl"] == timedelta(seconds=90)
    refused = invoke("--app", f"{app}:mapper", "migrate", "--lock-ttl", "0")
    assert refused.exit_code == 2 and "--lock-ttl" in refused.stderr
    assert (seen["batch_size"], seen["requests_per_second"], seen["stall_timeout"]) == (
        None, None, None,
    )  # fmt: skip
    throttled = invoke(
        "--app", f"{app}:mapper", "migrate", "--batch-size", "10", "--requests-per-second", "4",
        "--stall-timeout", "120",
    )  # fmt: skip
    assert throttled.exit_code == 0, throttled.output
    assert (seen["batch_size"], seen["requests_per_second"], seen["stall_timeout"]) == (
        10, 4.0, timedelta(seconds=120),
    )  # fmt: skip
    assert callable(seen["progress"])  # the progress bars


def test_help_names_the_environment_variables() -> None:
    result = invoke("--help")
    assert "[env var: ESMAPPER_APP]" in " ".join(result.output.split())
    assert "[env var: ESMAPPER_URL]" in " ".join(result.output.split())


def test_messages_use_the_cli_spelling() -> None:
    from esmapper._cli_types import cli_spelling

    assert cli_spelling("fix it, then migrate again with retry_failed=True") == (
        "fix it, then migrate again with --retry-failed"
    )
    assert cli_spelling("raise lock_wait=30") == "raise --lock-wait 30"


def test_the_article_matches_the_name() -> None:
    from esmapper._text import article

    assert [article(w) for w in ("Employee", "int", "Team", "User", "object")] == [
        "an Employee", "an int", "a Team", "a User", "an object",
    ]  # fmt: skip


def test_a_major_version_mismatch_names_the_remedy() -> None:
    from elastic_transport import ApiResponseMeta, HttpHeaders, NodeConfig
    from elasticsearch import BadRequestError

    from esmapper._cli_app import error_for

    meta = ApiResponseMeta(400, "1.1", HttpHeaders(), 0.0, NodeConfig("http", "h", 9200))
    body = {"error": {"type": "media_type_header_exception", "reason": "Invalid media-type"}}
    exc = BadRequestError("media_type_header_exception", meta, body)
    error = error_for(exc, click_context())
    assert error is not None and "pip install 'elasticsearch>=" in error.format_message()


def click_context() -> Any:
    import click

    return click.Context(main)


def test_maintain_loop_announces_itself_only_once_its_signal_handlers_are_in_place(
    app: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A supervisor that sends SIGTERM as soon as it reads the line must find the handler
    installed (the default action would kill the process mid-run)."""
    import contextlib

    import click

    from esmapper import _cli_jobs
    from esmapper.jobs import JobRunner

    @contextlib.contextmanager
    def handlers(stop: Any, cancel: Any) -> Iterator[None]:
        click.echo("<handlers installed>", err=True)
        yield

    def stopped(self: Any, stop: Any, cancel: Any = None) -> Any:
        raise click.exceptions.Exit(0)

    monkeypatch.setattr(_cli_jobs, "stop_on_signals", handlers)
    monkeypatch.setattr(JobRunner, "loop", stopped)
    result = invoke("--app", f"{app}:mapper", "maintain", "--loop")
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    assert lines[0] == "<handlers installed>", lines
    assert lines[1].startswith("maintain: every 1h until SIGTERM"), lines


def test_reindex_worker_loop_announces_itself_only_once_its_signal_handlers_are_in_place(
    app: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import contextlib

    import click

    from esmapper import _cli_work
    from esmapper.jobs import ReindexWorker

    (tmp_path / f"{app}_worker.py").write_text(
        f"import esmapper as em\nfrom {app} import Employee\n"
        "mapper = em.Mapper('http://127.0.0.1:1', models=[Employee], index_prefix='unit-',"
        " work_queue=em.InMemoryWorkQueue())\n",
        encoding="utf-8",
    )

    @contextlib.contextmanager
    def handlers(stop: Any, cancel: Any) -> Iterator[None]:
        click.echo("<handlers installed>", err=True)
        yield

    monkeypatch.setattr(_cli_work, "stop_on_signals", handlers)
    monkeypatch.setattr(ReindexWorker, "loop", lambda self, stop, cancel, **kw: 0)
    result = invoke("--app", f"{app}_worker:mapper", "jobs", "reindex-worker", "--loop")
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    assert lines[:2] == [
        "<handlers installed>",
        "reindex-worker: running items until SIGTERM or Ctrl-C",
    ], lines
