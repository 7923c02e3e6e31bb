"""How a test server starts and stops: :class:`StartedServer` (a ``with`` block), and the
child process of :class:`~esmapper.testing.server.LocalServer` and
:class:`~esmapper.testing.redis_server.RedisServer` (:func:`spawn`, :func:`stop_group`).
"""

from __future__ import annotations

import abc
import ctypes
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from types import TracebackType
from typing import IO

from typing_extensions import Self

__all__ = ["StartedServer", "parent_death_hook", "spawn", "stop_group"]

_PR_SET_PDEATHSIG = 1


class StartedServer(abc.ABC):
    """A server that a ``with`` block starts (:meth:`start`) and stops (:meth:`stop`)."""

    #: The server's URL while it runs (set by :meth:`start`, cleared by :meth:`stop`).
    _url: str | None = None

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``; raises RuntimeError when the server is not running."""
        if self._url is None:
            raise RuntimeError(f"{type(self).__name__} is not running; call start() first")
        return self._url

    @abc.abstractmethod
    def start(self) -> Self:
        """Start the server and wait until it is ready; no-op when already running."""

    @abc.abstractmethod
    def stop(self) -> None:
        """Stop the server; safe to call more than once."""

    def __enter__(self) -> Self:
        """Start the server (see :meth:`start`)."""
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Stop the server (see :meth:`stop`)."""
        self.stop()


def parent_death_hook() -> Callable[[], None] | None:
    """On Linux, a pre-exec hook that makes the child get SIGTERM when its parent dies.

    This covers a test run killed with SIGKILL/SIGTERM, where neither fixture teardown nor
    atexit runs. libc is loaded here, in the parent, not after the fork.
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return None

    def hook() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)

    return hook


def spawn(
    command: list[str], log: IO[bytes], *, die_with_parent: bool = True
) -> subprocess.Popen[bytes]:
    """Run ``command`` with no stdin and its stdout and stderr written to ``log``, in its own
    session and process group (pgid == pid: a Ctrl-C in the terminal does not reach it, and
    :func:`stop_group` stops what it started too). With ``die_with_parent`` (Linux) it gets
    SIGTERM when the thread that started it exits (:func:`parent_death_hook`)."""
    return subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=parent_death_hook() if die_with_parent else None,  # noqa: PLW1509
    )


def stop_group(proc: subprocess.Popen[bytes], sig: int, timeout: float) -> None:
    """Stop a process :func:`spawn` started: ``sig`` to its process group, SIGKILL when it
    has not exited ``timeout`` seconds later; then reap it (returns once it has exited)."""
    if proc.poll() is None:  # not reaped yet, so its pid cannot have been reused
        for each in (sig, signal.SIGKILL):
            try:
                os.killpg(proc.pid, each)
            except ProcessLookupError:
                break
            try:
                proc.wait(timeout)
                break
            except subprocess.TimeoutExpired:
                continue
    proc.wait()
