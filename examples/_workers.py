"""Worker processes of an example web app behind one port, shared by the Flask directory
(:mod:`examples.webapp.workers`), the FastAPI contacts API
(:mod:`examples.contacts_api.workers`) and the Django contacts site
(:mod:`examples.django_contacts.workers`); :func:`serve_contacts` is the ``main`` of the
last two.

Each worker is its own Python process (``python -m <module> HOST PORT PRIVATE_PORT``) with
its own mapper; the mappers share the by-id cache and the change notifications through
Redis (``ESMAPPER_REDIS_URL``). Each worker binds its own socket to the same address with
``SO_REUSEPORT`` (Linux), and the kernel spreads new connections over them; each also
listens on a port of its own (:attr:`Workers.private_urls`), so a test or a demo can talk to
one worker on purpose. A worker prints ``serving <pid>`` once it serves.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import socketserver
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

from typing_extensions import Self

from esmapper.testing.server import free_port

if TYPE_CHECKING:
    from _typeshed.wsgi import WSGIApplication

__all__ = ["ROOT", "Workers", "listening_socket", "serve_contacts", "serve_wsgi"]

ROOT = Path(__file__).resolve().parents[1]


def listening_socket(host: str, port: int, *, shared: bool = True) -> socket.socket:
    """A socket listening on ``host:port``; ``shared``: other processes may bind the same
    address (``SO_REUSEPORT``)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if shared:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.listen(128)
    return sock


class _ThreadedServer(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        pass  # quiet: two workers would interleave their access logs


def serve_wsgi(app: WSGIApplication, host: str, port: int, private: int) -> None:
    """Serve the WSGI ``app`` (a thread per request, standard library only) on
    ``host:port`` (shared with the other workers) and ``host:private`` (this worker's own),
    print ``serving <pid>``, and serve until ``KeyboardInterrupt`` (SIGTERM, by the
    worker's handler)."""
    servers = []
    for sock in (listening_socket(host, port), listening_socket(host, private, shared=False)):
        server = _ThreadedServer(sock.getsockname(), _QuietHandler, bind_and_activate=False)
        server.socket.close()
        server.socket = sock  # already bound and listening
        server.server_name, server.server_port = host, sock.getsockname()[1]
        server.setup_environ()
        server.set_app(app)
        servers.append(server)
    shared, own = servers
    threading.Thread(target=own.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
    print(f"serving {os.getpid()}", flush=True)
    try:
        shared.serve_forever(poll_interval=0.1)
    except KeyboardInterrupt:
        pass
    finally:
        own.shutdown()
        for server in servers:
            server.server_close()


class Workers:
    """``n`` worker processes on ``host:port`` (``port`` 0: a free one, chosen here);
    ``env`` is added to this process's environment for them. A context manager.

    Subclasses name the worker's ``module`` and what it is (``what``, for errors); with a
    ``watch_stdin`` variable, each worker gets it set to ``"1"`` and a pipe as stdin, whose
    end (this process exits or dies) tells it to stop."""

    module: ClassVar[str]
    what: ClassVar[str]
    watch_stdin: ClassVar[str | None] = None

    def __init__(self, n: int, host: str, port: int, env: Mapping[str, str]) -> None:
        if port == 0:
            with listening_socket(host, 0) as probe:
                port = probe.getsockname()[1]
        self.host, self.port = host, port
        self.url = f"http://{host}:{port}"
        path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
        self._env = {**os.environ, **env, "PYTHONPATH": path}
        self._n = n
        self.private_urls: list[str] = []
        self.procs: list[subprocess.Popen[str]] = []

    def start(self) -> Self:
        """Start every worker and wait until each serves; raises ``RuntimeError`` if one
        exits first."""
        watch = self.watch_stdin
        env = self._env if watch is None else {**self._env, watch: "1"}
        for _ in range(self._n):
            private = free_port()
            command = [sys.executable, "-m", self.module, self.host]
            command += [str(self.port), str(private)]
            self.procs.append(
                subprocess.Popen(
                    command,
                    env=env,
                    cwd=ROOT,
                    stdin=None if watch is None else subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    text=True,
                )
            )
            self.private_urls.append(f"http://{self.host}:{private}")
        for proc in self.procs:
            assert proc.stdout is not None
            if not proc.stdout.readline().startswith("serving"):
                self.stop()
                raise RuntimeError(f"a {self.what} worker did not start (see its error above)")
        return self

    def wait(self) -> None:
        """Wait until every worker exited (Ctrl-C stops them all)."""
        try:
            for proc in self.procs:
                proc.wait()
        finally:
            self.stop()

    def stop(self) -> None:
        """SIGTERM every worker and wait for them (idempotent)."""
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

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM stops like Ctrl-C: the embedded servers are stopped too


def serve_contacts(
    argv: Sequence[str] | None,
    *,
    prog: str,
    description: str | None,
    workers: type[Workers],
    banner: Callable[[str, int], str],
) -> int:
    """The ``main`` of the two contacts examples (the FastAPI API and the Django site, one
    model): the cluster at ``ESMAPPER_URL`` or the embedded local server, the index
    configured, then ``--workers`` processes of ``workers`` on ``--host``/``--port``
    sharing Redis (``ESMAPPER_REDIS_URL``, else an embedded one) until Ctrl-C or SIGTERM;
    ``banner(url, workers)`` is printed once they serve. Returns the exit code."""
    from esmapper.testing import LocalServer, ServerStartError, redis_url
    from examples.contacts_api.models import build_mapper

    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT") or 8000))
    parser.add_argument("--workers", type=int, default=2, help="worker processes")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupt)
    url = os.environ.get("ESMAPPER_URL", "").strip()
    local = None
    try:
        if not url:
            print("ESMAPPER_URL is not set: starting the embedded local server", flush=True)
            local = LocalServer().start()
            url = local.url
        prefix = os.environ.get("ESMAPPER_INDEX_PREFIX", "")
        with build_mapper(url, index_prefix=prefix) as mapper:
            mapper.configure_indexes()
        redis = os.environ.get("ESMAPPER_REDIS_URL") or redis_url()
        env = {"ESMAPPER_URL": url, "ESMAPPER_INDEX_PREFIX": prefix, "ESMAPPER_REDIS_URL": redis}
        with workers(args.workers, args.host, args.port, env) as running:
            print(banner(running.url, args.workers), flush=True)
            running.wait()
    except ServerStartError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\nstopped", flush=True)
    finally:
        if local is not None:
            local.stop()
    return 0
