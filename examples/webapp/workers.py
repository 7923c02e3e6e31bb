"""Several worker processes of the directory behind one port, sharing Redis.

``python -m examples.webapp --workers 2`` (and ``python3 dev.py demo``) serve the app this
way, as a production server would: each worker is its own Python process with its own
mapper, and the mappers share the cache and the change notifications through Redis
(``ESMAPPER_REDIS_URL``; the demo starts an embedded one). Each worker binds its own socket
to the same address with ``SO_REUSEPORT`` (Linux), and the kernel spreads new connections
over them by a hash of the client's address and port. Every response names its worker in
an ``X-Worker`` header (its process id). The workers share one ``SECRET_KEY`` (``$SECRET_KEY``,
else one made for them): the flash message set by one is shown by whichever serves the next
page. Each worker also listens on a port of its own
(:attr:`Workers.private_urls`), so a test or a demo can talk to one worker on purpose.

``python -m examples.webapp.workers HOST PORT PRIVATE_PORT`` is one worker (the environment
gives ``ESMAPPER_URL``, ``ESMAPPER_INDEX_PREFIX`` and ``ESMAPPER_REDIS_URL``).
"""

from __future__ import annotations

import html
import os
import secrets
import signal
import sys
import threading
import urllib.parse
from collections.abc import Mapping, Sequence
from http.client import HTTPConnection

import attrs
from werkzeug.serving import WSGIRequestHandler, make_server

from examples._workers import Workers as _Workers
from examples._workers import listening_socket
from examples.webapp.forms import employee_values
from examples.webapp.models import Employee

__all__ = ["Page", "Workers", "edit_name", "main", "page"]


@attrs.frozen
class Page:
    """An answer: ``status``, the HTML ``text`` (entities decoded), the ``worker`` pid, and
    for a redirect its ``location`` and the session ``cookie`` it sets (``name=value``)."""

    status: int
    text: str
    worker: str
    location: str = ""
    cookie: str = ""


class _Quiet(WSGIRequestHandler):
    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        pass  # quiet: two workers would interleave their access logs


def _stop(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


class Workers(_Workers):
    """``n`` worker processes of the directory on ``host:port`` (``port`` 0: a free one)
    (:class:`examples._workers.Workers`), sharing one session key."""

    module = "examples.webapp.workers"
    what = "web app"

    def __init__(self, n: int, host: str, port: int, env: Mapping[str, str]) -> None:
        super().__init__(n, host, port, env)
        # one key for every worker: a flash message set by one is shown by another (the
        # page after a redirect may land on either); $SECRET_KEY, when set, is that key
        if not self._env.get("SECRET_KEY"):
            self._env["SECRET_KEY"] = secrets.token_hex(32)


def page(url: str, path: str, form: Mapping[str, str] | None = None, *, cookie: str = "") -> Page:
    """``GET url+path`` (``POST`` with ``form``), sending ``cookie`` if given; redirects
    are not followed."""
    parts = urllib.parse.urlsplit(url)
    conn = HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=60)
    headers = {"Cookie": cookie} if cookie else {}
    if form is None:
        conn.request("GET", path, headers=headers)
    else:
        body = urllib.parse.urlencode(form)
        headers["Content-Type"] = "application/x-www-form-urlencoded"
        conn.request("POST", path, body=body, headers=headers)
    try:
        response = conn.getresponse()
        text = html.unescape(response.read().decode())
        set_cookie = (response.getheader("Set-Cookie") or "").split(";", 1)[0]
        return Page(
            response.status,
            text,
            response.getheader("X-Worker") or "",
            response.getheader("Location") or "",
            set_cookie,
        )
    finally:
        conn.close()


def edit_name(url: str, employee: Employee, name: str) -> Page:
    """Submit ``employee``'s edit form at ``url`` with a new ``name`` (and the version the
    employee holds)."""
    form = {**employee_values(employee), "name": name, "version": employee.version or ""}
    return page(url, f"/employees/{employee.id}/edit", form)


def main(argv: Sequence[str] | None = None) -> int:
    """One worker: serve the directory on ``HOST PORT`` (shared) and ``PRIVATE_PORT`` until
    SIGTERM."""
    host, port, private = (argv if argv is not None else sys.argv[1:])[:3]
    signal.signal(signal.SIGTERM, _stop)
    from examples.webapp.app import create_app
    from examples.webapp.models import mapper  # built from the environment

    with mapper:
        app = create_app(mapper)
        sock = listening_socket(host, int(port))
        shared = make_server(
            host, int(port), app, threaded=True, request_handler=_Quiet, fd=sock.fileno()
        )
        own = make_server(host, int(private), app, threaded=True, request_handler=_Quiet)
        threading.Thread(
            target=own.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True
        ).start()
        print(f"serving {os.getpid()}", flush=True)
        try:
            shared.serve_forever(poll_interval=0.1)
        except KeyboardInterrupt:
            pass
        finally:
            own.shutdown()
            shared.server_close()
            own.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
