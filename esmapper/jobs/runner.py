"""Running jobs on a schedule: ``esmapper maintain --loop --interval 1h``.

:class:`JobRunner` runs its jobs one after the other (a *run*), then waits ``interval``
and runs them again, until:

- ``stop`` is set (SIGTERM or Ctrl-C through :func:`stop_on_signals`): a run in progress
  finishes first, the wait between runs is cut short; the loop ends ``stopped`` (exit 0);
- ``cancel`` is set (a second signal): the job in progress stops at its next checkpoint
  (a result ``cancelled``), no other job starts; the loop ends ``cancelled``;
- ``max_failures`` runs in a row had a failed job: the loop gives up (a non-zero exit).
  A job *skipped* because another process holds its lock is not a failure (another
  instance does the work).

Each run is logged in one line at INFO (``maintain run 3: 3 jobs, 0 failed``); each job
logs its own summary (:mod:`esmapper.jobs.base`).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import logging
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from types import FrameType
from typing import Any

import attrs

from esmapper.jobs.base import Job, JobResult
from esmapper.jobs.durations import format_duration

__all__ = ["JobRunner", "LoopOutcome", "RunOutcome", "stop_on_signals"]

log = logging.getLogger("esmapper.jobs")


@attrs.frozen
class RunOutcome:
    """The results of one run, in job order."""

    results: tuple[JobResult, ...]

    @property
    def failed(self) -> list[JobResult]:
        return [r for r in self.results if r.is_failed]

    @property
    def cancelled(self) -> bool:
        return any(r.is_cancelled for r in self.results)


@attrs.frozen
class LoopOutcome:
    """How a loop ended: ``reason`` is ``stopped``, ``cancelled``, ``failed`` (gave up
    after ``max_failures`` failed runs in a row) or ``once`` (a single run)."""

    reason: str
    runs: int
    last: RunOutcome | None
    failures_in_a_row: int = 0

    @property
    def exit_code(self) -> int:
        """0: stopped cleanly, or a single run without failures; 3: cancelled; else 1."""
        if self.reason == "cancelled":
            return 3
        if self.reason == "stopped":
            return 0
        if self.reason == "once" and self.last is not None and not self.last.failed:
            return 0
        return 1


class JobRunner:
    """Runs ``jobs`` in order, once or in a loop (see the module docstring); ``on_result``
    is called with every job's result as it comes."""

    def __init__(
        self,
        jobs: Sequence[Job],
        *,
        interval: _dt.timedelta = _dt.timedelta(hours=1),
        max_failures: int = 3,
        name: str = "maintain",
        on_result: Callable[[JobResult], object] | None = None,
    ) -> None:
        if interval <= _dt.timedelta(0):
            raise ValueError("the interval must be longer than zero")
        if max_failures < 1:
            raise ValueError("max_failures must be 1 or more")
        self.jobs = list(jobs)
        self.interval = interval
        self.max_failures = max_failures
        self.name = name
        self.on_result = on_result
        self.runs = 0

    def run_once(self, cancel: threading.Event | None = None) -> RunOutcome:
        """One run: every job in order (none after a cancelled one)."""
        cancel = cancel or threading.Event()
        self.runs += 1
        results: list[JobResult] = []
        for job in self.jobs:
            if cancel.is_set():
                break
            result = job.run(cancel)
            results.append(result)
            if self.on_result is not None:
                self.on_result(result)
        outcome = RunOutcome(tuple(results))
        level = logging.WARNING if outcome.failed else logging.INFO
        log.log(
            level,
            "%s run %d: %d jobs, %d failed%s",
            self.name,
            self.runs,
            len(results),
            len(outcome.failed),
            ", cancelled" if outcome.cancelled or cancel.is_set() else "",
        )
        return outcome

    def loop(self, stop: threading.Event, cancel: threading.Event | None = None) -> LoopOutcome:
        """Run, wait ``interval``, run again... until stopped, cancelled or failing
        ``max_failures`` times in a row."""
        cancel = cancel or threading.Event()
        failures = 0
        while True:
            outcome = self.run_once(cancel)
            if outcome.cancelled or cancel.is_set():
                return LoopOutcome("cancelled", self.runs, outcome, failures)
            failures = failures + 1 if outcome.failed else 0
            if failures >= self.max_failures:
                log.error(
                    "%s: %d runs in a row failed; giving up (last: %s)",
                    self.name,
                    failures,
                    outcome.failed[0],
                )
                return LoopOutcome("failed", self.runs, outcome, failures)
            if stop.is_set():
                return LoopOutcome("stopped", self.runs, outcome, failures)
            log.info("%s: next run in %s", self.name, format_duration(self.interval))
            if stop.wait(self.interval.total_seconds()):
                return LoopOutcome("stopped", self.runs, outcome, failures)


@contextlib.contextmanager
def stop_on_signals(
    stop: threading.Event,
    cancel: threading.Event,
    signals: Sequence[signal.Signals] = (signal.SIGTERM, signal.SIGINT),
) -> Iterator[None]:
    """While inside: the first of ``signals`` sets ``stop`` (finish the run in progress,
    then end), the next one sets ``cancel`` (stop the job in progress at its next
    checkpoint). The previous handlers are restored on exit. Main thread only."""

    def handle(signum: int, frame: FrameType | None) -> None:
        what = signal.Signals(signum).name
        if stop.is_set():
            cancel.set()
            log.warning("%s again: cancelling the job in progress", what)
            return
        stop.set()  # before logging: a signal during the log line is a second one
        log.warning("%s: stopping after the run in progress (again: cancel it)", what)

    previous: dict[signal.Signals, Any] = {}
    try:
        for sig in signals:
            previous[sig] = signal.signal(sig, handle)
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
