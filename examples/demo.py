"""The README's main job: ``python3 dev.py demo`` (runs ``python -m examples.demo``).

1. Uses ``ESMAPPER_URL``, or starts the embedded local Elasticsearch-compatible server.
2. Runs the quick start and the safe-ids examples (``examples/quickstart.py``,
   ``examples/ids.py``): the library step by step.
3. Runs ``esmapper migrate`` and ``esmapper status`` on the web app's models, as a deploy
   pipeline would.
4. Loads sample employees through a session and serves the web app on 127.0.0.1, printing
   its address, until Ctrl-C (which stops the app and the embedded server).

``--no-serve`` stops after loading the sample data (for checks and CI).
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

    from examples.webapp import run as webapp
    from examples.webapp import sample_data
    from examples.webapp.models import Employee, build_mapper

    with build_mapper(url, index_prefix=prefix) as mapper:
        repo = mapper.repository(Employee)
        if repo.count(soft_deletes="all", consistency="immediate") == 0:
            sample_data.load(mapper, n=40)
        print(f"\nsample data: {repo.count(consistency='immediate')} employees", flush=True)
        if serve:
            webapp.serve(mapper, "127.0.0.1", port)
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
