"""pytest plugin (entry point ``esmapper``): fixtures for an Elasticsearch test server.

Every fixture is named ``esmapper_...``, so installing esmapper never shadows a fixture of
your own (an ``es_url`` or ``redis_url`` in your conftest keeps its meaning). Session
fixtures ``esmapper_es_server`` / ``esmapper_es_url`` / ``esmapper_es_client`` start the
server lazily, the first time a test asks for one, and stop it at the end of the session
(also on failures and Ctrl-C; the servers register themselves with atexit too).
``esmapper_index_prefix`` gives each test its own name prefix and deletes what the test
created under it. Tests marked ``real_es`` are skipped when the server is the local
noida-db one, tests marked ``local_only`` when it is not. ``esmapper_redis_url`` is a Redis
for the session (``ESMAPPER_TEST_REDIS_URL``, else an embedded ``redis-server`` stopped at
exit).

``--es-spec=DIR`` records every Elasticsearch request the run sends (Python subprocesses
included) and checks them against the API specification in DIR at the end, failing the run
on a violation (see :mod:`esmapper.testing._spec_check`).

Shorter names are one conftest away::

    @pytest.fixture
    def index_prefix(esmapper_index_prefix: str) -> str:
        return esmapper_index_prefix
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from elasticsearch import Elasticsearch

from esmapper.testing import _spec_check
from esmapper.testing.base import ServerHandle, ServerKind
from esmapper.testing.cleanup import delete_prefixed
from esmapper.testing.redis_server import redis_url as _redis_url
from esmapper.testing.selection import (
    local_only_skip_reason,
    real_es_skip_reason,
    server_kind,
    start_test_server,
)

_MARKERS = {
    "real_es": "real_es: behaviour the local test server does not reproduce (skipped there)",
    "local_only": "local_only: holds only on the local test server (skipped against a real "
    "cluster)",
}


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--es-spec``, ``--es-spec-branches``, ``--es-spec-log`` (the specification check)."""
    _spec_check.add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``real_es`` and ``local_only`` markers (unless the project's ini already
    does); start the specification check when ``--es-spec`` asks for it."""
    for name, line in _MARKERS.items():
        if not any(known.startswith(name) for known in config.getini("markers")):
            config.addinivalue_line("markers", line)
    _spec_check.configure(config)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip ``real_es`` tests on the local noida-db server and ``local_only`` tests on any
    other, with the reason."""
    reasons = {"real_es": real_es_skip_reason(), "local_only": local_only_skip_reason()}
    for marker, reason in reasons.items():
        if reason is None:
            continue
        for item in items:
            if item.get_closest_marker(marker) is not None:
                item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session")
def esmapper_es_server_kind() -> ServerKind:
    """``"local"``, ``"url"`` or ``"docker"``: which server the session uses (starts nothing)."""
    return server_kind()


@pytest.fixture(scope="session")
def esmapper_es_server() -> Iterator[ServerHandle]:
    """The started test server (see ``esmapper.testing.start_test_server``); stopped at the end."""
    server = start_test_server()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def esmapper_es_url(esmapper_es_server: ServerHandle) -> str:
    """Base URL of the test server, e.g. ``http://127.0.0.1:40123``."""
    return esmapper_es_server.url


@pytest.fixture(scope="session")
def esmapper_es_client(esmapper_es_url: str) -> Iterator[Elasticsearch]:
    """An ``elasticsearch.Elasticsearch`` client for ``esmapper_es_url``, closed at the end."""
    client = Elasticsearch(esmapper_es_url, request_timeout=60)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture(scope="session")
def esmapper_redis_url() -> str:
    """A Redis URL for the session (see :func:`esmapper.testing.redis_url`)."""
    return _redis_url()


@pytest.fixture
def esmapper_index_prefix(esmapper_es_client: Elasticsearch) -> Iterator[str]:
    """A unique lowercase prefix (``t-<8 hex>-``) for this test's indexes, aliases and
    templates; everything named with it is deleted after the test.
    """
    prefix = f"t-{uuid.uuid4().hex[:8]}-"
    yield prefix
    delete_prefixed(esmapper_es_client, prefix)
