"""The README's main job: ``python3 dev.py demo`` (runs ``python -m examples.demo``).

1. Uses ``ESMAPPER_URL``, or starts the embedded local Elasticsearch-compatible server.
2. Walks through the library's getting-started flow (``esmapper.demo``).
3. Runs ``esmapper migrate`` and ``esmapper status`` on the web app's models, as a deploy
   pipeline would.
4. Loads sample employees through a session and serves the web app on 127.0.0.1, printing
   its address, until Ctrl-C (which stops the app and the embedded server).

``--no-serve`` stops after step 4's data load (for checks and CI).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from werkzeug.serving import make_server

from esmapper import demo as library_demo

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
    print("== the library, step by step ==", flush=True)
    library_demo.run(url)

    print("\n== the web app's indexes and migrations, through the CLI ==", flush=True)
    if _cli(url, prefix, "migrate") != 0 or _cli(url, prefix, "status") != 0:
        return 1

    os.environ["ESMAPPER_INDEX_PREFIX"] = prefix
    from examples.webapp import sample_data
    from examples.webapp.app import create_app
    from examples.webapp.models import Employee, build_mapper

    with build_mapper(url, index_prefix=prefix) as mapper:
        repo = mapper.repository(Employee)
        if repo.count(soft_deletes="all", consistency="immediate") == 0:
            sample_data.load(mapper, n=40)
        print(f"\nsample data: {repo.count(consistency='immediate')} employees", flush=True)
        if not serve:
            return 0
        server = make_server("127.0.0.1", port, create_app(mapper), threaded=True)
        print(
            f"\nEmployee directory on http://127.0.0.1:{server.port}/ (Ctrl-C to stop)", flush=True
        )
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()
        print("\nstopped", flush=True)
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
    url = os.environ.get("ESMAPPER_URL", "").strip()
    server = None
    if not url:
        from esmapper.testing import LocalServer, ServerStartError

        print("ESMAPPER_URL is not set: starting the embedded local server", flush=True)
        try:
            server = LocalServer().start()
        except ServerStartError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        url = server.url
    print(f"using Elasticsearch at {url}", flush=True)
    try:
        return run(url, serve=not args.no_serve, port=args.port, prefix=args.prefix)
    except KeyboardInterrupt:
        return 130
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    sys.exit(main())
