"""Several uvicorn worker processes of the contacts API behind one port, sharing Redis.

``python -m examples.contacts_api --workers 2`` serves the API this way, as ``uvicorn
--workers 2`` would: each worker is its own Python process running uvicorn, with its own
mapper (built by the app's lifespan), and the mappers share the by-id cache and the change
notifications through Redis (``ESMAPPER_REDIS_URL``). Each worker binds its own socket to
the same address with ``SO_REUSEPORT`` (Linux), and the kernel spreads new connections over
them. Every response names its worker in an ``X-Worker`` header (its process id). Each
worker also listens on a port of its own (:attr:`Workers.private_urls`), so a test or a
demo can talk to one worker on purpose.

``python -m examples.contacts_api.workers HOST PORT PRIVATE_PORT`` is one worker (the
environment gives ``ESMAPPER_URL``, ``ESMAPPER_INDEX_PREFIX`` and ``ESMAPPER_REDIS_URL``).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

import uvicorn

from esmapper.testing.server import free_port

__all__ = ["Workers", "main"]

ROOT = Path(__file__).resolve().parents[2]
#: Set by :class:`Workers` for its workers: stop when stdin ends (the parent is gone).
_WATCH_STDIN = "CONTACTS_API_WORKER_WATCH_STDIN"


def _socket(host: str, port: int, *, shared: bool) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if shared:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.listen(128)
    return sock


class Workers:
    """``n`` uvicorn worker processes on ``host:port`` (``port`` 0: a free one, chosen
    here); ``env`` is added to this process's environment for them. A context manager."""

    def __init__(self, n: int, host: str, port: int, env: Mapping[str, str]) -> None:
        if port == 0:
            with _socket(host, 0, shared=True) as probe:
                port = probe.getsockname()[1]
        self.host, self.port = host, port
        self.url = f"http://{host}:{port}"
        path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
        self._env = {**os.environ, **env, "PYTHONPATH": path}
        self._n = n
        self.private_urls: list[str] = []
        self.procs: list[subprocess.Popen[str]] = []

    def start(self) -> Workers:
        """Start every worker and wait until each serves (its lifespan ran: the mapper is
        built); raises ``RuntimeError`` if one exits first."""
        for _ in range(self._n):
            private = free_port()
            command = [sys.executable, "-m", "examples.contacts_api.workers", self.host]
            command += [str(self.port), str(private)]
            self.procs.append(
                subprocess.Popen(
                    command,
                    env={**self._env, _WATCH_STDIN: "1"},
                    cwd=ROOT,
                    stdin=subprocess.PIPE,  # its end (this process exits or dies) stops it
                    stdout=subprocess.PIPE,
                    text=True,
                )
            )
            self.private_urls.append(f"http://{self.host}:{private}")
        for proc in self.procs:
            assert proc.stdout is not None
            if not proc.stdout.readline().startswith("serving"):
                self.stop()
                raise RuntimeError("a contacts API worker did not start (see its error above)")
        return self

    def wait(self) -> None:
        """Wait until every worker exited (Ctrl-C stops them all)."""
        try:
            for proc in self.procs:
                proc.wait()
        finally:
            self.stop()

    def stop(self) -> None:
        """SIGTERM every worker (uvicorn shuts down: the lifespan closes the mapper) and wait
        for them (idempotent)."""
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            for pipe in (proc.stdin, proc.stdout):
                if pipe is not None:
                    pipe.close()

    def __enter__(self) -> Workers:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _exit_with_parent(server: uvicorn.Server) -> None:
    """Stop ``server`` when stdin reaches its end: the :class:`Workers` that started this
    worker closed it, or exited without stopping it (killed: no orphan keeps serving)."""
    sys.stdin.buffer.read()
    server.should_exit = True


class _Server(uvicorn.Server):
    """A uvicorn server that says when it serves (after the lifespan's start-up)."""

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        print(f"serving {os.getpid()}", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """One worker: serve the API on ``HOST PORT`` (shared) and ``PRIVATE_PORT`` until
    SIGTERM or Ctrl-C."""
    host, port, private = (argv if argv is not None else sys.argv[1:])[:3]
    sockets = [_socket(host, int(port), shared=True), _socket(host, int(private), shared=False)]
    config = uvicorn.Config(
        "examples.contacts_api.app:app", lifespan="on", log_level="warning", access_log=False
    )
    server = _Server(config)
    if os.environ.get(_WATCH_STDIN) == "1":
        threading.Thread(target=_exit_with_parent, args=(server,), daemon=True).start()
    server.run(sockets=sockets)
    return 0


if __name__ == "__main__":
    sys.exit(main())
