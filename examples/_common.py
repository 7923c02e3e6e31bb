"""Plumbing shared by the example scripts: where Elasticsearch is, and the ``__main__`` entry.

Each example has ``main(url=None, *, index_prefix="")``. Without a ``url`` it uses
``$ESMAPPER_URL``, else it starts the embedded local server (the ``noida-db`` package of the
``test`` extra) for the length of the run. ``run_main(main)`` is what ``python -m
examples.<name>`` calls: the prefix comes from ``$ESMAPPER_INDEX_PREFIX``; against a real
cluster without one, a fresh ``example-<hex>-`` prefix is used and deleted at the end, so a
script can be run again and again and never touches indexes it did not create.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Callable

from esmapper.testing import elasticsearch_url

__all__ = ["elasticsearch_url", "run_main"]


def run_main(main: Callable[..., None]) -> None:
    """Run an example's ``main`` as a script (see the module docstring)."""
    from esmapper.testing import ServerStartError, delete_prefixed

    prefix = os.environ.get("ESMAPPER_INDEX_PREFIX")
    try:
        with elasticsearch_url() as url:
            external = bool(os.environ.get("ESMAPPER_URL", "").strip())
            throwaway = prefix is None and external
            if throwaway:
                prefix = f"example-{uuid.uuid4().hex[:8]}-"
            shown = f", index prefix {prefix!r}" if prefix else ""
            print(f"using Elasticsearch at {url}{shown}", flush=True)
            try:
                main(url, index_prefix=prefix or "")
            finally:
                if throwaway and prefix:
                    from elasticsearch import Elasticsearch

                    with Elasticsearch(url) as client:
                        delete_prefixed(client, prefix)
    except ServerStartError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)
