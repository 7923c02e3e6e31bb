"""The ``esmapper`` command line (click).

``esmapper --version`` prints the version. Global options name the application's mapper
(``--app module:attribute`` or ``ESMAPPER_APP``) and override its address (``--url`` or
``ESMAPPER_URL``); the commands that use them (``migrate``, ``status``, ``reindex``,
``ids``) arrive with the index-lifecycle work.
"""

from __future__ import annotations

import click

from esmapper._version import __version__

__all__ = ["main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", "-V", prog_name="esmapper")
@click.option(
    "--app",
    envvar="ESMAPPER_APP",
    metavar="MODULE:ATTR",
    help="The Mapper to use, e.g. myapp.models:mapper.",
)
@click.option(
    "--url",
    envvar="ESMAPPER_URL",
    metavar="URL",
    help="Elasticsearch address (overrides the mapper's).",
)
@click.pass_context
def main(ctx: click.Context, app: str | None, url: str | None) -> None:
    """esmapper: models, migrations and index maintenance for Elasticsearch."""
    ctx.obj = {"app": app, "url": url}
