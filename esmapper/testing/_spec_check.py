"""The pytest plugin's ``--es-spec``: record every Elasticsearch request the test run sends
(this process, pytest-xdist workers and Python subprocesses) and check them against the
Elasticsearch API specification at the end; a request the specification rejects fails the run.

The specification and its checker are a directory (``tools/es_spec`` in esmapper's repository:
``check_requests.py`` and ``es-spec/apis.json``, standard library only). Requests are recorded
by :mod:`esmapper.testing._spec_recorder`, one distinct shape each, into a log directory named
by ``ESMAPPER_SPEC_LOG``, which subprocesses inherit with the recorder's ``sitecustomize``
directory first on their ``PYTHONPATH``.

A request recorded with a ``version`` (sent to a server that answers as that version: a
test's ``ClusterProxy(version=...)``) is checked on that version's branch only
(:func:`version_branch`), the others on the run's branches.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from esmapper.testing import _spec_recorder as recorder

__all__ = [
    "DEFAULT_BRANCHES",
    "SpecCheck",
    "add_options",
    "configure",
    "load_checker",
    "version_branch",
]

DEFAULT_BRANCHES = "8.18,8.19,9.x"
"""The specification branches checked: both 8 minors the client supports, the newest 9."""

_OFF = frozenset({"", "off", "no", "0", "false"})
_PLUGIN_NAME = "esmapper-spec-check"


def add_options(parser: pytest.Parser) -> None:
    """Register ``--es-spec``, ``--es-spec-branches`` and ``--es-spec-log``."""
    group = parser.getgroup("esmapper", "esmapper test server and checks")
    group.addoption(
        "--es-spec",
        metavar="DIR",
        default=None,
        help="record every Elasticsearch request the tests send and check them against the "
        "API specification in DIR (check_requests.py and es-spec/apis.json, e.g. esmapper's "
        "tools/es_spec) at the end; a violation fails the run ('off': no check)",
    )
    group.addoption(
        "--es-spec-branches",
        metavar="LIST",
        default=DEFAULT_BRANCHES,
        help=f"specification branches to check (default {DEFAULT_BRANCHES}; 8.x/9.x: the "
        "newest of that major, 9.*: all of it, default: 8.18 to the newest)",
    )
    group.addoption(
        "--es-spec-log",
        metavar="DIR",
        default=None,
        help="record into DIR and keep it (default: a temporary directory, kept only when "
        "the check finds violations)",
    )


def load_checker(kit: Path) -> ModuleType:
    """``check_requests`` from the directory ``kit``, loaded by path.

    Raises :class:`pytest.UsageError` naming what is missing."""
    script, data = kit / "check_requests.py", kit / "es-spec" / "apis.json"
    missing = [str(p) for p in (script, data) if not p.is_file()]
    if missing:
        raise pytest.UsageError(
            f"--es-spec={kit}: not a specification kit directory ({', '.join(missing)} missing)"
        )
    spec = importlib.util.spec_from_file_location("esmapper_es_spec_check_requests", script)
    if spec is None or spec.loader is None:
        raise pytest.UsageError(f"--es-spec={kit}: cannot load {script}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _records(directory: Path) -> Iterator[dict[str, Any]]:
    """The recorded requests, file by file; a line a killed process left half-written is
    skipped."""
    for path in sorted(directory.glob("requests-*.jsonl")):
        with path.open(encoding="utf-8") as log:
            for line in log:
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if isinstance(record, dict):
                    yield record


def version_branch(version: str, branches: list[str]) -> str | None:
    """The specification branch of a server ``version`` (``"9.1.3"`` -> ``"9.1"``): its
    minor's, else the newest of its major before it, else the oldest of its major (the
    kit starts at 8.18); ``None`` for a major the kit does not have."""
    parts = version.split(".")
    try:
        wanted = (int(parts[0]), int(parts[1]))
    except (IndexError, ValueError):
        return None
    same: list[tuple[tuple[int, int], str]] = []
    for branch in branches:
        major, _, minor = branch.partition(".")
        if major.isdigit() and minor.isdigit() and int(major) == wanted[0]:
            same.append(((int(major), int(minor)), branch))
    if not same:
        return None
    earlier = [b for b in sorted(same) if b[0] <= wanted]
    return (earlier[-1] if earlier else sorted(same)[0])[1]


class SpecCheck:
    """The run's recording and, at the end of the session, its check (a pytest plugin)."""

    def __init__(
        self, config: pytest.Config, kit: Path, checker: ModuleType, log: Path, *, keep: bool
    ) -> None:
        self.config = config
        self.kit = kit
        self.checker = checker
        self.log = log
        self.keep = keep
        self.branches: str = config.getoption("es_spec_branches")
        self.lines: list[str] = []
        self.failed = False
        self._environ: dict[str, str | None] = {}

    def start(self) -> None:
        """Record here, and in the subprocesses this run starts (via the environment)."""
        for name in (recorder.ENV_LOG, "PYTHONPATH"):
            self._environ[name] = os.environ.get(name)
        os.environ[recorder.ENV_LOG] = str(self.log)
        site = recorder.site_directory()
        paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        os.environ["PYTHONPATH"] = os.pathsep.join([site, *(p for p in paths if p != site)])
        recorder.install(str(self.log))

    def check(self) -> None:
        """Check the log on the branches; fills :attr:`lines` and :attr:`failed`."""
        started = time.monotonic()
        records = list(_records(self.log))
        stats: dict[str, Any] = {"shapes": 0, "branches": []}
        found: list[tuple[Any, list[dict[str, Any]]]] = []
        try:
            for branches, group in self._groups(records):
                part: dict[str, Any] = {}
                violations = self.checker.check(
                    group, spec_dir=str(self.kit / "es-spec"), branches=branches, stats=part
                )
                found += [(violation, group) for violation in violations]
                stats["shapes"] += part.get("shapes", 0)
                stats["branches"] += [
                    b for b in part.get("branches", []) if b not in stats["branches"]
                ]
        except (ValueError, KeyError) as exc:  # e.g. an unknown branch name
            self.failed = True
            self.lines = [f"spec check could not run: {exc!r}"]
            return
        live = recorder.installed()
        sent = recorder.read_counts(str(self.log))[0]  # written at exit: not by killed ones
        sent += live.requests if live is not None else 0
        processes = len(list(self.log.glob("requests-*.jsonl")))
        branches = ", ".join(stats.get("branches", []))
        self.lines = [
            f"{sent} requests sent, {len(records)} distinct recorded by {processes} "
            f"processes, {stats.get('shapes', 0)} shapes checked on {branches}: "
            f"{len(found)} violations ({time.monotonic() - started:.1f}s)"
        ]
        for violation, group in found:
            self.lines.append(f"VIOLATION {violation}")
            first = violation.first
            if isinstance(first, int) and 0 <= first < len(group):
                self.lines.append(f"    e.g. {json.dumps(group[first], default=str)[:600]}")
        if found:
            self.failed = True
            self.keep = True
            self.lines.append(
                f"the recorded requests are kept in {self.log} "
                f"(python3 {self.kit / 'check_requests.py'} {self.log} --branches {self.branches})"
            )

    def _groups(self, records: list[dict[str, Any]]) -> Iterator[tuple[str, list[dict[str, Any]]]]:
        """``(branches, records)``: the records without a ``version`` on the run's branches,
        each pinned version's on its branch (:func:`version_branch`; one the kit does not
        have: on the run's branches)."""
        spec = self.checker.load_spec(str(self.kit / "es-spec"))
        by_branches: dict[str, list[dict[str, Any]]] = {}
        for record in records:
            version = record.get("version")
            branch = version_branch(str(version), spec.branches) if version else None
            by_branches.setdefault(branch or self.branches, []).append(record)
        for branches in sorted(by_branches, key=lambda b: b != self.branches):
            yield branches, by_branches[branches]

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Check after the last test (not on Ctrl-C or usage errors); violations fail the run."""
        skipped = (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.USAGE_ERROR)
        if exitstatus in skipped or self.config.option.collectonly:
            return
        self.check()
        if self.failed and session.exitstatus in (
            pytest.ExitCode.OK,
            pytest.ExitCode.NO_TESTS_COLLECTED,
        ):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """The summary line, and each violation with an example request."""
        if not self.lines:
            return
        terminalreporter.section("Elasticsearch API specification check", red=self.failed)
        for line in self.lines:
            terminalreporter.write_line(line, red=self.failed and line.startswith("VIOLATION"))

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        """Restore the environment; drop the temporary log unless it is kept."""
        for name, value in self._environ.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        live = recorder.installed()
        if live is not None and live.directory == str(self.log):
            live.requests = 0  # counted above; nothing to write at exit
        if not self.keep:
            shutil.rmtree(self.log, ignore_errors=True)


def _fresh_log(given: str | None) -> tuple[Path, bool]:
    """The log directory (given: emptied of earlier logs, kept), else a temporary one."""
    if not given:
        return Path(tempfile.mkdtemp(prefix="esmapper-spec-")), False
    log = Path(given).resolve()
    log.mkdir(parents=True, exist_ok=True)
    for old in [*log.glob("requests-*.jsonl"), *log.glob("counts-*.json")]:
        old.unlink()
    return log, True


def configure(config: pytest.Config) -> None:
    """Start recording when ``--es-spec`` names a kit (a pytest-xdist worker records into
    the directory its controller set up, and leaves the check to it)."""
    value = config.getoption("es_spec", None)
    if value is None or str(value).strip().lower() in _OFF:
        return
    if hasattr(config, "workerinput"):
        if os.environ.get(recorder.ENV_LOG):
            recorder.install(os.environ[recorder.ENV_LOG])
        return
    kit = Path(str(value)).resolve()
    checker = load_checker(kit)
    branches = config.getoption("es_spec_branches")
    try:  # a bad branch list fails now, not after the run
        checker.load_spec(str(kit / "es-spec")).resolve_branches(branches)
    except ValueError as exc:
        raise pytest.UsageError(f"--es-spec-branches={branches}: {exc}") from exc
    log, keep = _fresh_log(config.getoption("es_spec_log", None))
    check = SpecCheck(config, kit, checker, log, keep=keep)
    check.start()
    config.pluginmanager.register(check, _PLUGIN_NAME)
