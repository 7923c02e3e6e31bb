"""The server the benchmarks run against (shared by the bench scripts that need one)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def server_url() -> Iterator[str]:
    """``ESMAPPER_URL`` if set, else a server from ``esmapper.testing.start_test_server()``
    (which honours ``ESMAPPER_TEST_URL`` / ``ESMAPPER_TEST_DOCKER`` and otherwise starts the
    local noida-db server), stopped again on exit."""
    url = os.environ.get("ESMAPPER_URL")
    if url:
        yield url
        return
    from esmapper.testing import start_test_server

    server = start_test_server()
    try:
        yield server.url
    finally:
        server.stop()
