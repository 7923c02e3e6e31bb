"""Several worker processes of the Django site behind one port, sharing Redis.

``python -m examples.django_contacts`` serves the site this way, as ``gunicorn --workers 2``
would: each worker is its own Python process (the WSGI application of :mod:`.settings`,
with its own mapper, built from ``settings.ESMAPPER`` on the first request), and the mappers
share the by-id cache and the change notifications through Redis (``ESMAPPER_REDIS_URL``),
so an edit through one worker is read through the other at once. The workers share one
``SECRET_KEY`` (``$SECRET_KEY``, else one made for them): the flash message set by one is
shown by whichever serves the next page. Every answer names its worker in an ``X-Worker``
header; each worker also listens on a port of its own (:attr:`Workers.private_urls`).

``python -m examples.django_contacts.workers HOST PORT PRIVATE_PORT`` is one worker (the
environment gives ``ESMAPPER_URL``, ``ESMAPPER_INDEX_PREFIX`` and ``ESMAPPER_REDIS_URL``).
"""

from __future__ import annotations

import os
import secrets
import signal
import sys
import threading
from collections.abc import Mapping, Sequence

from examples._workers import Workers as _Workers
from examples._workers import serve_wsgi

__all__ = ["Workers", "main"]

#: Set by :class:`Workers` for its workers: stop when stdin ends (the parent is gone).
_WATCH_STDIN = "DJANGO_CONTACTS_WORKER_WATCH_STDIN"


class Workers(_Workers):
    """``n`` worker processes of the site on ``host:port`` (``port`` 0: a free one), sharing
    one secret key, each stopping when this process is gone
    (:class:`examples._workers.Workers`)."""

    module = "examples.django_contacts.workers"
    what = "Django contacts"
    watch_stdin = _WATCH_STDIN

    def __init__(self, n: int, host: str, port: int, env: Mapping[str, str]) -> None:
        super().__init__(n, host, port, env)
        self._env.setdefault("DJANGO_SETTINGS_MODULE", "examples.django_contacts.settings")
        if not self._env.get("SECRET_KEY"):
            self._env["SECRET_KEY"] = secrets.token_hex(32)


def _stop(signum: int, frame: object) -> None:
    # once: the parent's SIGTERM and the end of stdin both stop the worker, and a second
    # KeyboardInterrupt would land in the middle of the servers' shutdown
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise KeyboardInterrupt


def _exit_with_parent() -> None:
    """SIGTERM this worker when stdin reaches its end (its :class:`Workers` closed it, or
    exited without stopping it: no orphan keeps serving). Read from the file descriptor,
    not ``sys.stdin``'s buffer: a daemon thread holding that buffer's lock at interpreter
    shutdown is a fatal error."""
    while os.read(sys.stdin.fileno(), 65536):
        pass
    os.kill(os.getpid(), signal.SIGTERM)


def main(argv: Sequence[str] | None = None) -> int:
    """One worker: serve the site on ``HOST PORT`` (shared) and ``PRIVATE_PORT`` until
    SIGTERM or Ctrl-C; its mapper is closed on the way out."""
    host, port, private = (argv if argv is not None else sys.argv[1:])[:3]
    signal.signal(signal.SIGTERM, _stop)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "examples.django_contacts.settings")
    from django.core.wsgi import get_wsgi_application

    from esmapper.contrib.django import close_mapper

    application = get_wsgi_application()
    if os.environ.get(_WATCH_STDIN) == "1":
        threading.Thread(target=_exit_with_parent, daemon=True).start()
    try:
        serve_wsgi(application, host, int(port), int(private))
    finally:
        close_mapper()
    return 0


if __name__ == "__main__":
    sys.exit(main())
