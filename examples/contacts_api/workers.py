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
import socket
import sys
import threading
from collections.abc import Sequence

import uvicorn

from examples._workers import Workers as _Workers
from examples._workers import listening_socket

__all__ = ["Workers", "main"]

#: Set by :class:`Workers` for its workers: stop when stdin ends (the parent is gone).
_WATCH_STDIN = "CONTACTS_API_WORKER_WATCH_STDIN"


class Workers(_Workers):
    """``n`` uvicorn worker processes of the API on ``host:port`` (``port`` 0: a free one),
    each stopping when this process is gone (:class:`examples._workers.Workers`)."""

    module = "examples.contacts_api.workers"
    what = "contacts API"
    watch_stdin = _WATCH_STDIN


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
    sockets = [
        listening_socket(host, int(port)),
        listening_socket(host, int(private), shared=False),
    ]
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
