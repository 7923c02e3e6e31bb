"""Short names for the esmapper plugin's fixtures, for this project's own tests.

The plugin names its fixtures ``esmapper_...`` so that it never shadows a fixture of an
application using esmapper; these tests predate that and use the short names.

pytest-django (for ``tests/integration/contrib/django``) is loaded in every session; one
of its autouse fixtures is replaced below so that it changes nothing for the other tests.
"""

from __future__ import annotations

import pytest
from elasticsearch import Elasticsearch

from esmapper.testing import ServerHandle, ServerKind


@pytest.fixture(scope="session")
def es_server_kind(esmapper_es_server_kind: ServerKind) -> ServerKind:
    return esmapper_es_server_kind


@pytest.fixture(scope="session")
def es_server(esmapper_es_server: ServerHandle) -> ServerHandle:
    return esmapper_es_server


@pytest.fixture(scope="session")
def es_url(esmapper_es_url: str) -> str:
    return esmapper_es_url


@pytest.fixture(scope="session")
def es_client(esmapper_es_client: Elasticsearch) -> Elasticsearch:
    return esmapper_es_client


@pytest.fixture(scope="session")
def redis_url(esmapper_redis_url: str) -> str:
    return esmapper_redis_url


@pytest.fixture
def index_prefix(esmapper_index_prefix: str) -> str:
    return esmapper_index_prefix


@pytest.fixture(autouse=True)
def _template_string_if_invalid_marker() -> None:
    """Replaces pytest-django's autouse fixture of this name (the ``ignore_template_errors``
    marker, which these tests never use): it takes ``monkeypatch`` in every test, so every
    test's patches would be undone last, after the teardown of the fixtures the test asked
    for (a fixture cleaning up through a patched client would meet the patch)."""
