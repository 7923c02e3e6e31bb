"""Serve the Django contacts site: ``python -m examples.django_contacts`` (from the
repository root).

It uses the cluster at ``ESMAPPER_URL``, or starts the embedded local test server (the
``noida-db`` package of the ``test`` extra) when that is not set; creates the index
(``manage.py esmapper migrate`` does the same); and serves the site with ``--workers``
processes (default 2) on http://127.0.0.1:$PORT/ (default 8000) sharing Redis
(``ESMAPPER_REDIS_URL``, else an embedded Redis is started), until Ctrl-C.
"""

from __future__ import annotations

from collections.abc import Sequence

from examples._workers import serve_contacts
from examples.django_contacts.workers import Workers

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Serve the site until Ctrl-C or SIGTERM; returns the exit code."""
    return serve_contacts(
        argv,
        prog="python -m examples.django_contacts",
        description=__doc__,
        workers=Workers,
        banner=lambda url, n: f"Contacts on {url}/ ({n} workers; Ctrl-C to stop)",
    )
