"""esmapper.testing: the Elasticsearch the tests use, and a pytest plugin for users.

``redis_url()`` gives the Redis the tests and the demo share caches through
(``ESMAPPER_TEST_REDIS_URL``, else an embedded ``redis-server``, see
:mod:`esmapper.testing.redis_server`).

``start_test_server()`` picks the server from the environment: ``ESMAPPER_TEST_URL`` (use that
cluster), else ``ESMAPPER_TEST_DOCKER=1`` (:class:`DockerServer`), else :class:`LocalServer`
(the noida-db binary). The pytest plugin (:mod:`esmapper.testing.plugin`) wraps it in fixtures.
"""

from esmapper.errors import ServerStartError
from esmapper.testing.base import ExternalServer, ServerHandle, ServerKind
from esmapper.testing.cleanup import delete_prefixed
from esmapper.testing.docker import DockerServer
from esmapper.testing.redis_server import RedisServer, redis_url
from esmapper.testing.selection import (
    elasticsearch_url,
    local_only_skip_reason,
    real_es_skip_reason,
    server_kind,
    start_test_server,
)
from esmapper.testing.server import LocalServer

__all__ = [
    "DockerServer",
    "ExternalServer",
    "LocalServer",
    "RedisServer",
    "ServerHandle",
    "ServerKind",
    "ServerStartError",
    "delete_prefixed",
    "elasticsearch_url",
    "local_only_skip_reason",
    "real_es_skip_reason",
    "redis_url",
    "server_kind",
    "start_test_server",
]
