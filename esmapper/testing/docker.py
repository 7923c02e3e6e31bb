"""DockerServer: a real single-node Elasticsearch in a throwaway container (docker SDK)."""

from __future__ import annotations

import atexit
import contextlib
import importlib
import os
from typing import Any

from typing_extensions import Self

from esmapper.errors import ServerStartError
from esmapper.testing._lifecycle import StartedServer
from esmapper.testing.base import ServerKind, version_mismatch, wait_for_health

IMAGES = {
    8: "docker.elastic.co/elasticsearch/elasticsearch:8.19.19",
    9: "docker.elastic.co/elasticsearch/elasticsearch:9.5.2",
}
"""The Elasticsearch image of each major version (the tags of ``docker/``'s compose files)."""


def image_for_client() -> str:
    """The image of the installed elasticsearch client's major version: a client talks only
    to a server of its own major (9.x, the default install, to Elasticsearch 9)."""
    import elasticsearch

    return IMAGES.get(int(elasticsearch.VERSION[0]), IMAGES[max(IMAGES)])


DEFAULT_IMAGE = image_for_client()
"""Image used when neither the constructor nor ``ESMAPPER_TEST_DOCKER_IMAGE`` names one:
Elasticsearch of the installed client's major version."""

CONTAINER_ENV = {
    "discovery.type": "single-node",
    "xpack.security.enabled": "false",
    "cluster.routing.allocation.disk.threshold_enabled": "false",
    "ingest.geoip.downloader.enabled": "false",
    "ES_JAVA_OPTS": "-Xms1g -Xmx1g",
}
"""Settings of the test container: single node, no security, no disk watermarks, no GeoIP
database download at start (the same as ``docker/``'s compose files)."""


def connect_docker() -> Any:
    """A ``docker.DockerClient`` for the engine of the environment, checked with a ping.

    Raises :class:`ServerStartError` saying so when the SDK is missing or no engine answers.
    """
    try:
        # Not a plain import: a checkout's docker/ folder (compose files) would shadow it for
        # mypy, and at run time it is an empty namespace package when the SDK is missing.
        docker: Any = importlib.import_module("docker")
        if not hasattr(docker, "from_env"):
            raise ImportError("'docker' is not the docker SDK")
    except ImportError as exc:
        raise ServerStartError(
            "ESMAPPER_TEST_DOCKER=1 but the docker SDK is not installed "
            f"(pip install 'esmapper[docker]'): {exc}"
        ) from exc
    client: Any = None
    try:
        client = docker.from_env()
        client.ping()
    except Exception as exc:
        if client is not None:
            client.close()
        raise ServerStartError(
            f"ESMAPPER_TEST_DOCKER=1 but no Docker engine is reachable: {exc}. Start Docker, "
            "set ESMAPPER_TEST_URL to a running cluster, or unset ESMAPPER_TEST_DOCKER to use "
            "the local noida-db server"
        ) from exc
    return client


class DockerServer(StartedServer):
    """Elasticsearch from ``image`` in a container published on a random 127.0.0.1 port.

    ``start()`` runs the container and waits until ``GET /_cluster/health`` answers;
    ``stop()`` force-removes the container (registered with atexit, safe to call twice).
    Also a context manager.
    """

    def __init__(self, image: str | None = None, *, startup_timeout: float = 180.0) -> None:
        """Configure; ``image`` defaults to ``$ESMAPPER_TEST_DOCKER_IMAGE`` or DEFAULT_IMAGE."""
        self.image = image or os.environ.get("ESMAPPER_TEST_DOCKER_IMAGE") or DEFAULT_IMAGE
        self.startup_timeout = startup_timeout
        self._client: Any = None
        self._container: Any = None

    @property
    def kind(self) -> ServerKind:
        """Always ``"docker"``."""
        return "docker"

    def start(self) -> Self:
        """Run the container (pulling the image if needed) and wait until it is healthy.

        Raises :class:`ServerStartError` (with the container's last log lines when it ran).
        """
        if self._url is not None:
            return self
        self._client = connect_docker()
        atexit.register(self.stop)
        try:
            self._container = self._client.containers.run(
                self.image,
                detach=True,
                environment=CONTAINER_ENV,
                ports={"9200/tcp": ("127.0.0.1", None)},
                labels={"esmapper.test-server": "1"},
            )
            url = f"http://127.0.0.1:{self._host_port()}"
            if not wait_for_health(url, self.startup_timeout, alive=self._running):
                logs = self._container.logs(tail=40).decode("utf-8", "replace")
                raise ServerStartError(
                    f"Elasticsearch in Docker ({self.image}) did not answer GET "
                    f"/_cluster/health within {self.startup_timeout:g} s; last log lines:\n{logs}"
                )
            mismatch = version_mismatch(url)
            if mismatch is not None:
                raise ServerStartError(f"ESMAPPER_TEST_DOCKER_IMAGE={self.image}: {mismatch}")
            self._url = url
            return self
        except Exception as exc:
            self.stop()
            if isinstance(exc, ServerStartError):
                raise
            raise ServerStartError(f"could not run {self.image} in Docker: {exc}") from exc
        except BaseException:  # Ctrl-C while pulling or waiting
            self.stop()
            raise

    def _host_port(self) -> str:
        """The host port Docker published for the container's 9200."""
        self._container.reload()
        bindings = self._container.attrs["NetworkSettings"]["Ports"].get("9200/tcp") or []
        if not bindings:
            raise ServerStartError(f"Docker published no port for 9200 of {self.image}")
        return str(bindings[0]["HostPort"])

    def _running(self) -> bool:
        """Whether the container is still running (not exited)."""
        self._container.reload()
        return bool(self._container.status in {"created", "running"})

    def stop(self) -> None:
        """Force-remove the container and close the Docker client; safe to call twice."""
        self._url = None
        container, self._container = self._container, None
        if container is not None:
            # Already gone, or the engine went away: nothing left to do then.
            with contextlib.suppress(Exception):
                container.remove(force=True)
        client, self._client = self._client, None
        if client is not None:
            client.close()
        atexit.unregister(self.stop)
