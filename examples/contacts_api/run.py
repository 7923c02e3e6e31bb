"""Serve the contacts API: ``python -m examples.contacts_api`` (from the repository root).

It uses the cluster at ``ESMAPPER_URL``, or starts the embedded local test server (the
``noida-db`` package of the ``test`` extra) when that is not set; configures the index;
and serves the API with ``--workers`` uvicorn processes (default 2) on
http://127.0.0.1:$PORT/ (default 8000; the OpenAPI page is ``/docs``) sharing Redis
(``ESMAPPER_REDIS_URL``, else an embedded Redis is started), until Ctrl-C.
"""

from __future__ import annotations

from collections.abc import Sequence

from examples._workers import serve_contacts
from examples.contacts_api.workers import Workers

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Serve the API until Ctrl-C or SIGTERM; returns the exit code."""
    return serve_contacts(
        argv,
        prog="python -m examples.contacts_api",
        description=__doc__,
        workers=Workers,
        banner=lambda url, n: f"Contacts API on {url}/docs ({n} workers; Ctrl-C to stop)",
    )
