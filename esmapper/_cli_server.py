"""``esmapper server``: the embedded local Elasticsearch-compatible server, for your own
scripts and experiments (the same noida-db server the tests and the demo start)."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from types import FrameType

import click

from esmapper.errors import ServerStartError

__all__ = ["server"]

DEFAULT_PORT = 9200
"""Elasticsearch's own port, so that ``http://127.0.0.1:9200`` (the usual default, and the
README's) reaches it."""


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


@click.command()
@click.option("--port", type=click.IntRange(0, 65535), default=DEFAULT_PORT, show_default=True,
              help="Port on 127.0.0.1 (0: any free port).")  # fmt: skip
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, writable=True, path_type=Path),
    default=None,
    help="Keep the data in this directory, across runs (default: a temporary directory, "
    "deleted when the server stops).",
)
def server(port: int, data_dir: Path | None) -> None:
    """Run a local Elasticsearch-compatible server (noida-db) on 127.0.0.1 and print its
    URL; Ctrl-C stops it.

    For development, tests and your own scripts: it speaks the Elasticsearch API that
    esmapper uses, without security, and is not meant for production. It comes with the
    test extra (pip install -e '.[test]')."""
    # here, not at the top: noida-db is an optional dependency (the test extra), and the
    # CLI loads without it
    from esmapper.testing.server import LocalServer

    local = LocalServer(port=port or None, data_dir=data_dir)
    previous = signal.signal(signal.SIGTERM, _interrupt)
    previous_int = signal.signal(signal.SIGINT, signal.default_int_handler)  # also in background
    try:
        try:
            local.start()
        except ServerStartError as exc:
            first = str(exc).splitlines()[0]
            if "already in use" in first:
                first += "; choose another with --port (0: any free port)"
            raise ServerStartError(first) from None
        kept = f"kept in {data_dir}" if data_dir else "deleted when it stops"
        click.echo(f"local Elasticsearch-compatible server (noida-db) at {local.url}")
        click.echo(f"  export ESMAPPER_URL={local.url}")
        click.echo(f"its data is {kept}; Ctrl-C stops it", nl=True)
        while local.alive():
            time.sleep(0.5)
        tail = local.log_tail(1) or "no log"
        raise ServerStartError(f"the server stopped on its own: {tail}")
    except KeyboardInterrupt:
        click.echo("stopping the server")
    finally:
        local.stop()
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)
