"""LocalServer: the noida-db binary as a throwaway Elasticsearch on 127.0.0.1."""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import socket
import subprocess
import tempfile
from pathlib import Path
from typing import IO

from typing_extensions import Self

from esmapper.errors import ServerStartError
from esmapper.testing._lifecycle import StartedServer, spawn, stop_group
from esmapper.testing.base import ServerKind, wait_for_health

_PORT_IN_USE = "already in use"


def noida_binary() -> Path:
    """Path of the ``noida-db`` binary shipped inside the installed ``noida_db`` package.

    The binary is used directly: the package's Python wrapper does not stop the server when it
    is itself killed.
    """
    try:
        import noida_db
    except ImportError as exc:
        raise ServerStartError(
            "the local test server needs the noida-db package (pip install 'esmapper[test]'); "
            "or set ESMAPPER_TEST_URL, or ESMAPPER_TEST_DOCKER=1"
        ) from exc
    path = Path(noida_db.__file__).parent / "noida-db"
    if not path.is_file():
        raise ServerStartError(f"noida-db binary not found at {path}")
    if not os.access(path, os.X_OK):  # wheels may lose the bit; the wrapper sets it too
        path.chmod(path.stat().st_mode | 0o111)
    return path


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (bind to port 0, read it, close)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def port_is_free(port: int) -> bool:
    """Whether a TCP server could listen on ``port`` of 127.0.0.1 right now (connections
    of a server that stopped, still in TIME_WAIT, do not count)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


class LocalServer(StartedServer):
    """A noida-db server (Elasticsearch API only) on a free port with its own temp data dir.

    ``start()`` launches ``noida-db start`` in its own process group (so a Ctrl-C in the
    terminal does not reach it), logs to ``<tmpdir>/noida-db.log`` and waits until
    ``GET /_cluster/health`` answers. ``stop()`` sends SIGTERM, then SIGKILL after
    ``stop_timeout``, and removes the temp dir; it is registered with atexit and may be called
    any number of times. Also a context manager. With ``die_with_parent`` (Linux), the server
    also gets SIGTERM when the thread that started it exits, so start it from a thread that
    lives as long as the server should.

    ``port`` fixes the port (``None``: a free one); a port already taken raises
    :class:`ServerStartError` before anything starts. ``data_dir`` keeps the data there,
    across runs (``None``: a temp dir removed by ``stop()``).
    """

    def __init__(
        self,
        *,
        startup_timeout: float = 30.0,
        stop_timeout: float = 10.0,
        attempts: int = 3,
        binary: Path | None = None,
        die_with_parent: bool = True,
        port: int | None = None,
        data_dir: Path | None = None,
    ) -> None:
        """Configure the server; nothing starts until :meth:`start`."""
        self.port = port
        self.data_dir = data_dir
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self.attempts = max(1, attempts)
        self._binary = binary
        self._die_with_parent = die_with_parent
        self._tmpdir: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def kind(self) -> ServerKind:
        """Always ``"local"``."""
        return "local"

    @property
    def pid(self) -> int | None:
        """PID of the noida-db process, or None when not running."""
        return None if self._proc is None else self._proc.pid

    def alive(self) -> bool:
        """Whether the server process runs (started and not exited)."""
        return self._proc is not None and self._proc.poll() is None

    @property
    def log_path(self) -> Path | None:
        """Where the server writes stdout and stderr (inside the temp dir), if started."""
        return None if self._tmpdir is None else self._tmpdir / "noida-db.log"

    def log_tail(self, lines: int = 40) -> str:
        """The last ``lines`` lines of the server log ("" when there is none)."""
        path = self.log_path
        if path is None or not path.is_file():
            return ""
        text = path.read_text(encoding="utf-8", errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def start(self) -> Self:
        """Start the server and wait until it is healthy; no-op when already running.

        A port taken between choosing it and the server binding it is retried on a new port
        (``attempts`` times in all). Raises :class:`ServerStartError`, with the tail of the
        server log, when the server exits or does not answer within ``startup_timeout``.
        """
        if self._url is not None:
            return self
        binary = self._binary or noida_binary()
        if self.port is not None and not port_is_free(self.port):
            raise ServerStartError(f"port {self.port} of 127.0.0.1 is already in use")
        if self.data_dir is not None:
            self.data_dir.mkdir(parents=True, exist_ok=True)
        self._tmpdir = Path(tempfile.mkdtemp(prefix="esmapper-noida-"))
        atexit.register(self.stop)
        try:
            for attempt in range(1 if self.port is not None else self.attempts):
                port = free_port() if self.port is None else self.port
                data_dir = self.data_dir or self._tmpdir / f"data{attempt}"
                if self._launch(binary, data_dir, port):
                    self._url = f"http://127.0.0.1:{port}"
                    return self
                if _PORT_IN_USE not in self.log_tail():
                    break
            raise ServerStartError(
                f"noida-db ({binary}) did not answer GET /_cluster/health within "
                f"{self.startup_timeout:g} s; last lines of its log:\n{self.log_tail()}"
            )
        except BaseException:
            self.stop()
            raise

    def _launch(self, binary: Path, data_dir: Path, port: int) -> bool:
        """Run one start attempt on ``port``; True when healthy, else the process is reaped."""
        assert self._tmpdir is not None
        self._close_log()
        self._log = (self._tmpdir / "noida-db.log").open("wb")
        command = [str(binary), "start", "--data-dir", str(data_dir), "--host", "127.0.0.1"]
        command += ["--only", "elasticsearch", "--elasticsearch-port", str(port)]
        proc = spawn(command, self._log, die_with_parent=self._die_with_parent)
        self._proc = proc
        url = f"http://127.0.0.1:{port}"
        if wait_for_health(url, self.startup_timeout, alive=lambda: proc.poll() is None):
            return True
        self._terminate()
        return False

    def _terminate(self) -> None:
        """Stop the process: SIGTERM to its group, SIGKILL after ``stop_timeout``; reap it."""
        proc, self._proc = self._proc, None
        if proc is not None:
            stop_group(proc, signal.SIGTERM, self.stop_timeout)

    def _close_log(self) -> None:
        """Close the log file handle if open."""
        log, self._log = self._log, None
        if log is not None:
            log.close()

    def stop(self) -> None:
        """Kill the server, remove its temp dir; safe to call twice (also runs at exit)."""
        self._url = None
        self._terminate()
        self._close_log()
        tmpdir, self._tmpdir = self._tmpdir, None
        if tmpdir is not None:
            shutil.rmtree(tmpdir, ignore_errors=True)
        atexit.unregister(self.stop)
