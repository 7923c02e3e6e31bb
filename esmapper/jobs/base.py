"""What every job has in common: its :class:`JobResult`, its lock, cancellation and logs.

A job is an object with ``run(cancel=None) -> JobResult``. :class:`Job`
implements ``run`` once for all of them:

- it takes the job's lock (a short lease renewed by a heartbeat, :mod:`esmapper.locks`)
  with one attempt, or waiting up to ``lock_wait``; a lock held by another process makes
  the run a *skipped* success (``JobResult.skipped``, the holder in ``message``): another
  instance is doing the work, which is what a scheduled job wants (the CLI turns it into
  exit code 2 for a command run by hand);
- it runs the job's :meth:`Job.execute` with a :class:`JobContext` (the cancel event, the
  lock, a logger ``esmapper.jobs.<name>`` that logs every request the job sends at DEBUG);
- every outcome becomes a :class:`JobResult`: ``success``, ``failed`` (the exception in
  ``error``: an Elasticsearch error, a lost lock, a bug: the job never raises) or
  ``cancelled`` (the cancel event was set and the job stopped at its next checkpoint,
  :meth:`JobContext.checkpoint`);
- one line at INFO sums the run up (``snapshot-create: success in 2.1s: ...``).
"""

from __future__ import annotations

import abc
import datetime as _dt
import enum
import logging
import re
import threading
import time
from typing import TYPE_CHECKING, Any, ClassVar, Final

import attrs
from elastic_transport import TransportError
from elasticsearch import ApiError

from esmapper._context import context_of
from esmapper._json import dumps
from esmapper.errors import EsmapperError, JobCancelled, JobError, LockError
from esmapper.indexes._ensure import answer_of
from esmapper.locks import DEFAULT_TTL, Lock, LockProvider, check_duration

if TYPE_CHECKING:
    from esmapper._context import Context, HasContext

__all__ = ["Job", "JobCancelled", "JobContext", "JobError", "JobResult", "JobStatus"]

log = logging.getLogger("esmapper.jobs")

#: Exceptions a job reports as an expected failure (logged without a traceback).
_EXPECTED: Final = (EsmapperError, ApiError, TransportError, ValueError)


class JobStatus(enum.Enum):
    """How a job run ended."""

    SUCCESS = "success"
    FAILED = "failed"
    CANCELLED = "cancelled"


@attrs.frozen
class JobResult:
    """The outcome of one job run.

    ``status`` (``success`` / ``failed`` / ``cancelled``), ``message`` (one line for
    humans), ``error`` (the exception of a failed run, else ``None``), ``details`` (the
    job's own report, e.g. :class:`~esmapper.jobs.snapshots.SnapshotInfo`), ``skipped``
    (a success that did nothing because another process held the job's lock) and
    ``seconds`` (how long the run took)."""

    job: str
    status: JobStatus
    message: str = ""
    error: BaseException | None = None
    details: Any = None
    skipped: bool = False
    seconds: float = 0.0

    @property
    def is_success(self) -> bool:
        return self.status is JobStatus.SUCCESS

    @property
    def is_failed(self) -> bool:
        return self.status is JobStatus.FAILED

    @property
    def is_cancelled(self) -> bool:
        return self.status is JobStatus.CANCELLED

    @classmethod
    def success(cls, job: str, message: str = "", details: Any = None) -> JobResult:
        return cls(job, JobStatus.SUCCESS, message, details=details)

    @classmethod
    def failed(
        cls, job: str, message: str, error: BaseException | None = None, details: Any = None
    ) -> JobResult:
        return cls(job, JobStatus.FAILED, message, error=error, details=details)

    @classmethod
    def from_exception(cls, job: str, exc: BaseException, message: str | None = None) -> JobResult:
        """A failed result for ``exc`` (``message`` defaults to the exception's text)."""
        return cls.failed(job, message or describe_error(exc), exc)

    @classmethod
    def cancelled(cls, job: str, message: str = "cancelled", details: Any = None) -> JobResult:
        return cls(job, JobStatus.CANCELLED, message, details=details)

    def __str__(self) -> str:
        state = "skipped" if self.skipped else self.status.value
        text = f"{self.job}: {state}"
        return f"{text}: {self.message}" if self.message else text


def describe_error(exc: BaseException) -> str:
    """One line for an exception: an Elasticsearch answer as ``status type: reason``."""
    if isinstance(exc, ApiError):
        return f"Elasticsearch answered {answer_of(exc)}"
    if isinstance(exc, EsmapperError | ValueError):
        return " ".join(str(exc).split())
    if isinstance(exc, TransportError):  # no answer: say why in a few words
        errno = re.search(r"\[Errno -?\d+\] ([^)\]]+)", str(exc))
        why = errno.group(1).strip() if errno else type(exc).__name__
        return f"no answer from Elasticsearch ({why})"
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"


@attrs.define
class JobContext:
    """What a running job gets: ``cancel`` (set: stop at the next checkpoint), ``lock``
    (the job's lock while it runs, ``None`` for jobs without one), ``log``."""

    job: str
    cancel: threading.Event
    log: logging.Logger
    lock: Lock | None = None

    def checkpoint(self) -> None:
        """Raise :class:`JobCancelled` when the run was cancelled and
        :class:`~esmapper.errors.LockError` when its lock is known to be lost (no
        request)."""
        if self.cancel.is_set():
            raise JobCancelled("cancelled before it finished")
        if self.lock is not None:
            self.lock.check()

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` or until cancelled (then :class:`JobCancelled`)."""
        if self.cancel.wait(seconds):
            raise JobCancelled("cancelled before it finished")
        self.checkpoint()

    def sends(self, method: str, path: str, body: Any = None) -> None:
        """Log a request about to be sent, at DEBUG (``PUT /_snapshot/r/s {...}``)."""
        if self.log.isEnabledFor(logging.DEBUG):
            text = "" if body is None else " " + dumps(body).decode()
            self.log.debug("%s %s%s", method, path, text)


class Job(abc.ABC):
    """Base of esmapper's jobs: subclasses set :attr:`name`, :attr:`lock_name` and
    implement :meth:`execute`; callers use :meth:`run` (see the module docstring)."""

    name: ClassVar[str] = "job"

    def __init__(
        self,
        mapper: Context | HasContext,
        *,
        lock_wait: _dt.timedelta = _dt.timedelta(0),
        lock_ttl: _dt.timedelta = DEFAULT_TTL,
    ) -> None:
        #: what the job was given (the :class:`~esmapper.mapper.Mapper`, whose public face a
        #: subclass may use: ``self.mapper.repository(Model)``)
        self.mapper: Any = mapper
        #: what the job runs with: the mapper's services
        self.services: Context = context_of(mapper)
        self.lock_wait = check_duration("lock_wait", lock_wait, zero=True)
        self.lock_ttl = check_duration("lock_ttl", lock_ttl)

    @property
    def lock_name(self) -> str | None:
        """The lock the run takes (``None``: none, e.g. a dry run that only reads)."""
        return self.name

    @abc.abstractmethod
    def execute(self, ctx: JobContext) -> JobResult:
        """The job's work; may raise (the exception becomes a failed result)."""

    def run(self, cancel: threading.Event | None = None) -> JobResult:
        """Run the job once; never raises (see the module docstring). ``cancel``: set it
        (from another thread or a signal handler) to stop the run at its next checkpoint."""
        started = time.monotonic()
        ctx = JobContext(self.name, cancel or threading.Event(), log.getChild(self.name))
        try:
            result = self._locked(ctx)
        except JobCancelled as exc:
            result = JobResult.cancelled(self.name, str(exc) or "cancelled before it finished")
        except _EXPECTED as exc:  # a LockError too: the lock was lost while running
            result = JobResult.from_exception(self.name, exc)
        except Exception as exc:  # a bug: reported, with its traceback in the log
            ctx.log.exception("%s failed unexpectedly", self.name)
            result = JobResult.from_exception(self.name, exc)
        result = attrs.evolve(result, seconds=time.monotonic() - started)
        level = logging.INFO if result.is_success else logging.WARNING
        log.log(level, "%s (%.1fs)", result, result.seconds)
        return result

    def _locked(self, ctx: JobContext) -> JobResult:
        name = self.lock_name
        if name is None:
            return self.execute(ctx)
        mapper = self.services
        provider = LockProvider(mapper.client, index_prefix=mapper.index_prefix, clock=mapper.clock)
        ctx.sends("PUT", f"/{provider.index}/_doc/{name}?op_type=create")
        try:
            lock = provider.acquire(name, self.lock_ttl, wait=self.lock_wait)
        except LockError as exc:
            return JobResult(
                self.name, JobStatus.SUCCESS, describe_error(exc), error=exc, skipped=True
            )
        with lock:
            ctx.lock = lock
            try:
                return self.execute(ctx)
            finally:
                ctx.lock = None
