"""Serve the directory: ``python -m examples.webapp`` (from the repository root).

It uses the cluster at ``ESMAPPER_URL``, or starts the embedded local test server (the
``noida-db`` package of the ``test`` extra) when that is not set; runs ``mapper.migrate()``
(indexes and migrations); loads sample data into an empty directory; and serves the app on
http://127.0.0.1:$PORT/ (default 5000) until Ctrl-C. ``--workers 2`` serves it as two worker
processes on that port sharing Redis (``ESMAPPER_REDIS_URL``, else an embedded Redis is
started; see :mod:`examples.webapp.workers`).

:func:`serve_in_background` starts the app on a real socket in a thread (tests, demos).
"""

from __future__ import annotations

import argparse
import errno
import functools
import os
import signal
import socket
import sys
import threading
from collections.abc import Sequence

import attrs
from elasticsearch import ConnectionError as ESConnectionError
from flask import Flask
from werkzeug.serving import BaseWSGIServer, make_server

import esmapper as em
from esmapper.migrations import MigrationResult
from examples.webapp import sample_data
from examples.webapp.app import create_app
from examples.webapp.models import Employee, build_mapper
from examples.webapp.workers import Workers

__all__ = [
    "BackgroundServer",
    "main",
    "port_problem",
    "prepare",
    "serve",
    "serve_in_background",
    "serve_workers",
]


@attrs.define
class BackgroundServer:
    """An app served on a real socket by a thread; ``url`` is its base address."""

    server: BaseWSGIServer
    thread: threading.Thread

    @property
    def url(self) -> str:
        return f"http://{self.server.host}:{self.server.port}"

    def stop(self) -> None:
        """Stop serving and wait for the thread (idempotent)."""
        if self.thread.is_alive():
            self.server.shutdown()
            self.thread.join(timeout=10)
        self.server.server_close()

    def __enter__(self) -> BackgroundServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve_in_background(app: Flask, host: str = "127.0.0.1", port: int = 0) -> BackgroundServer:
    """Serve ``app`` on ``host:port`` (0: a free port) in a daemon thread, one thread per
    request; stop it with ``.stop()`` or a ``with`` block."""
    server = make_server(host, port, app, threaded=True)
    thread = threading.Thread(
        target=functools.partial(server.serve_forever, poll_interval=0.05),
        name="webapp-server",
        daemon=True,
    )
    thread.start()
    return BackgroundServer(server, thread)


def prepare(mapper: em.Mapper, *, sample: int = 40) -> MigrationResult:
    """Configure the indexes and run the migrations; load ``sample`` employees into an empty
    directory. Returns the migration result."""
    result = mapper.migrate()
    if sample and mapper.repository(Employee).count(soft_deletes="all") == 0:
        sample_data.load(mapper, n=sample)
    return result  # type: ignore[no-any-return]


def serve(mapper: em.Mapper, host: str = "127.0.0.1", port: int = 5000) -> None:
    """Serve the directory on ``host:port`` until Ctrl-C or SIGTERM, printing its address."""
    server = make_server(host, port, create_app(mapper), threaded=True)
    print(f"Employee directory on http://{host}:{server.port}/ (Ctrl-C to stop)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    print("\nstopped", flush=True)


def port_problem(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be served on (in use, not allowed), with how to choose
    another port; ``None`` when it is free. Checked before any start-up work."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        return f"cannot serve on {host}: {exc.strerror}"
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        if os.name != "nt":  # as the server does: a port in TIME_WAIT is free
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            reason = (
                "is already in use"
                if exc.errno == errno.EADDRINUSE
                else f"cannot be used ({exc.strerror})"
            )
            other = 8000 if port != 8000 else 8001
            return (
                f"port {port} on {host} {reason}. Choose another port with --port "
                f"(python -m examples.webapp --port {other}) or the PORT variable "
                f"(PORT={other} python -m examples.webapp)."
            )
    return None


def serve_workers(url: str, prefix: str, n: int, host: str, port: int) -> int:
    """Serve the directory as ``n`` worker processes on ``host:port`` sharing Redis
    (``ESMAPPER_REDIS_URL``, else an embedded one) until Ctrl-C or SIGTERM."""
    from esmapper.testing import redis_url

    redis = os.environ.get("ESMAPPER_REDIS_URL") or redis_url()
    env = {"ESMAPPER_URL": url, "ESMAPPER_INDEX_PREFIX": prefix, "ESMAPPER_REDIS_URL": redis}
    workers = Workers(n, host, port, env).start()
    print(
        f"Employee directory on {workers.url}/ ({n} worker processes sharing Redis at "
        f"{redis}; Ctrl-C to stop)",
        flush=True,
    )
    try:
        workers.wait()
    except KeyboardInterrupt:
        workers.stop()
    print("\nstopped", flush=True)
    return 0


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM stops like Ctrl-C: the embedded server is stopped too


def main(argv: Sequence[str] | None = None) -> int:
    """Serve the directory until Ctrl-C or SIGTERM; returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m examples.webapp", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT") or 5000))
    parser.add_argument(
        "--sample", type=int, default=40, help="employees to load into an empty directory"
    )
    parser.add_argument(
        "--workers", type=int, default=1, help="worker processes sharing Redis (default 1)"
    )
    args = parser.parse_args(argv)
    problem = port_problem(args.host, args.port)
    if problem is not None:  # before starting a server or migrating anything
        print(f"error: {problem}", file=sys.stderr)
        return 1
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even if started in background

    url = os.environ.get("ESMAPPER_URL", "").strip()
    local = None
    if not url:
        from esmapper.testing import LocalServer, ServerStartError

        print("ESMAPPER_URL is not set: starting the embedded local server", flush=True)
        try:
            local = LocalServer().start()
        except ServerStartError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        url = local.url
    try:
        with build_mapper(url) as mapper:
            print(f"using Elasticsearch at {url}", flush=True)
            try:
                result = prepare(mapper, sample=args.sample)
            except em.ServerUnreachableError as exc:  # it names the URL and what to check
                print(f"error: {exc}", file=sys.stderr)
                return 1
            except (ESConnectionError, em.EsmapperError) as exc:
                print(f"error: cannot prepare the directory at {url}: {exc}", file=sys.stderr)
                return 1
            print(f"migrations: {result.value}", flush=True)
            if result is not MigrationResult.SUCCESS:
                return 1
            if args.workers > 1:
                return serve_workers(url, mapper.index_prefix, args.workers, args.host, args.port)
            serve(mapper, args.host, args.port)
    finally:
        if local is not None:
            local.stop()
    return 0
