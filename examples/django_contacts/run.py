"""Serve the Django contacts site: ``python -m examples.django_contacts`` (from the
repository root).

It uses the cluster at ``ESMAPPER_URL``, or starts the embedded local test server (the
``noida-db`` package of the ``test`` extra) when that is not set; creates the index
(``manage.py esmapper migrate`` does the same); and serves the site with ``--workers``
processes (default 2) on http://127.0.0.1:$PORT/ (default 8000) sharing Redis
(``ESMAPPER_REDIS_URL``, else an embedded Redis is started), until Ctrl-C.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence

from examples.contacts_api.models import build_mapper
from examples.django_contacts.workers import Workers

__all__ = ["main"]


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM stops like Ctrl-C: the embedded servers are stopped too


def main(argv: Sequence[str] | None = None) -> int:
    """Serve the site until Ctrl-C or SIGTERM; returns the exit code."""
    from esmapper.testing import LocalServer, ServerStartError, redis_url

    parser = argparse.ArgumentParser(prog="python -m examples.django_contacts", description=__doc__)
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
        with Workers(args.workers, args.host, args.port, env) as workers:
            print(f"Contacts on {workers.url}/ ({args.workers} workers; Ctrl-C to stop)")
            workers.wait()
    except ServerStartError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\nstopped", flush=True)
    finally:
        if local is not None:
            local.stop()
    return 0
