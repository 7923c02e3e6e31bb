"""Which Elasticsearch the tests use, chosen from environment variables."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from esmapper.testing.base import ExternalServer, ServerHandle, ServerKind
from esmapper.testing.docker import DEFAULT_IMAGE, DockerServer
from esmapper.testing.server import LocalServer

ENV_URL = "ESMAPPER_TEST_URL"
"""Use the cluster at this URL; nothing is started."""
ENV_DOCKER = "ESMAPPER_TEST_DOCKER"
"""``1`` (or true/yes/on): start Elasticsearch in Docker."""
ENV_DOCKER_IMAGE = "ESMAPPER_TEST_DOCKER_IMAGE"
"""The image DockerServer runs instead of its default."""

_TRUE = frozenset({"1", "true", "yes", "on"})


def server_kind(env: Mapping[str, str] | None = None) -> ServerKind:
    """``"url"`` if ESMAPPER_TEST_URL is set, else ``"docker"`` if ESMAPPER_TEST_DOCKER is
    true, else ``"local"`` (the noida-db binary). ``env`` defaults to ``os.environ``.
    """
    env = os.environ if env is None else env
    if env.get(ENV_URL, "").strip():
        return "url"
    if env.get(ENV_DOCKER, "").strip().lower() in _TRUE:
        return "docker"
    return "local"


def real_es_skip_reason(env: Mapping[str, str] | None = None) -> str | None:
    """Why ``real_es`` tests are skipped, or None when they run (a real cluster is used)."""
    if server_kind(env) != "local":
        return None
    return (
        "real_es: the local noida-db test server does not reproduce this; run against "
        f"Elasticsearch with {ENV_URL}=http://... or {ENV_DOCKER}=1"
    )


def local_only_skip_reason(env: Mapping[str, str] | None = None) -> str | None:
    """Why ``local_only`` tests are skipped (a real cluster is used), or None when they run."""
    kind = server_kind(env)
    if kind == "local":
        return None
    where = f"{ENV_URL} is set" if kind == "url" else f"{ENV_DOCKER}=1"
    return f"local_only: holds only on the local noida-db test server ({where})"


def start_test_server(env: Mapping[str, str] | None = None) -> ServerHandle:
    """Start (or, for ESMAPPER_TEST_URL, check) the server :func:`server_kind` picks.

    Returns a started handle; the caller stops it. Raises ServerStartError on failure.
    """
    env = os.environ if env is None else env
    kind = server_kind(env)
    if kind == "url":
        return ExternalServer(env[ENV_URL].strip()).start()
    if kind == "docker":
        return DockerServer(env.get(ENV_DOCKER_IMAGE) or DEFAULT_IMAGE).start()
    return LocalServer().start()


@contextmanager
def elasticsearch_url(url: str | None = None, *, announce: bool = True) -> Iterator[str]:
    """``url``, else ``$ESMAPPER_URL``, else the URL of an embedded local server started
    here and stopped when the block ends (demos, examples, benchmarks).

    Raises :class:`ServerStartError` when the embedded server cannot start.
    """
    url = (url or os.environ.get("ESMAPPER_URL", "")).strip()
    if url:
        yield url
        return
    if announce:
        print("ESMAPPER_URL is not set: starting the embedded local server", flush=True)
    server = LocalServer().start()
    try:
        yield server.url
    finally:
        server.stop()
