"""Choosing the test server from the environment, start failures, and the real_es skip."""

from __future__ import annotations

import os
import sys
import textwrap
import types
from pathlib import Path
from typing import Any, ClassVar

import pytest

from esmapper.testing import (
    DockerServer,
    LocalServer,
    ServerStartError,
    delete_prefixed,
    local_only_skip_reason,
    real_es_skip_reason,
    selection,
    server_kind,
    start_test_server,
)
from esmapper.testing.docker import DEFAULT_IMAGE

pytest_plugins = ["pytester"]


@pytest.mark.parametrize(
    ("env", "kind"),
    [
        ({}, "local"),
        ({"ESMAPPER_TEST_URL": "http://es:9200"}, "url"),
        ({"ESMAPPER_TEST_URL": "  "}, "local"),
        ({"ESMAPPER_TEST_DOCKER": "1"}, "docker"),
        ({"ESMAPPER_TEST_DOCKER": "true"}, "docker"),
        ({"ESMAPPER_TEST_DOCKER": "Yes"}, "docker"),
        ({"ESMAPPER_TEST_DOCKER": "0"}, "local"),
        ({"ESMAPPER_TEST_DOCKER": ""}, "local"),
        ({"ESMAPPER_TEST_URL": "http://es:9200", "ESMAPPER_TEST_DOCKER": "1"}, "url"),
    ],
)
def test_server_kind_follows_env(env: dict[str, str], kind: str) -> None:
    assert server_kind(env) == kind


def test_server_kind_defaults_to_os_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ESMAPPER_TEST_URL", raising=False)
    monkeypatch.setenv("ESMAPPER_TEST_DOCKER", "1")
    assert server_kind() == "docker"


class _Fake:
    """Stands in for a server class; records what start_test_server built."""

    built: ClassVar[list[tuple[str, Any]]] = []

    def __init__(self, name: str, arg: Any = None) -> None:
        self.name, self.arg = name, arg

    def start(self) -> _Fake:
        _Fake.built.append((self.name, self.arg))
        return self


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    _Fake.built = []
    monkeypatch.setattr(selection, "ExternalServer", lambda url: _Fake("url", url))
    monkeypatch.setattr(selection, "DockerServer", lambda image: _Fake("docker", image))
    monkeypatch.setattr(selection, "LocalServer", lambda: _Fake("local"))
    return _Fake.built


def test_start_test_server_dispatch(fakes: list[tuple[str, Any]]) -> None:
    start_test_server({"ESMAPPER_TEST_URL": " http://es:9200 ", "ESMAPPER_TEST_DOCKER": "1"})
    start_test_server({"ESMAPPER_TEST_DOCKER": "1"})
    start_test_server({"ESMAPPER_TEST_DOCKER": "1", "ESMAPPER_TEST_DOCKER_IMAGE": "es:9.1.5"})
    start_test_server({})
    assert fakes == [
        ("url", "http://es:9200"),
        ("docker", DEFAULT_IMAGE),
        ("docker", "es:9.1.5"),
        ("local", None),
    ]


def test_docker_image_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ESMAPPER_TEST_DOCKER_IMAGE", "my/es:1")
    assert DockerServer().image == "my/es:1"
    assert DockerServer("other/es:2").image == "other/es:2"
    monkeypatch.delenv("ESMAPPER_TEST_DOCKER_IMAGE")
    assert DockerServer().image == DEFAULT_IMAGE


def test_docker_engine_unreachable_fake_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    def from_env() -> Any:
        raise ConnectionError("connection refused at /var/run/docker.sock")

    fake = types.ModuleType("docker")
    fake.from_env = from_env  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "docker", fake)
    server = DockerServer()
    with pytest.raises(ServerStartError) as info:
        server.start()
    message = str(info.value)
    assert message.startswith("ESMAPPER_TEST_DOCKER=1 but no Docker engine is reachable: ")
    assert "connection refused at /var/run/docker.sock" in message
    with pytest.raises(RuntimeError, match="not running"):
        _ = server.url
    server.stop()  # harmless after a failed start


def test_docker_engine_unreachable_real_sdk(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pytest.importorskip("docker")
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    with pytest.raises(ServerStartError, match="no Docker engine is reachable"):
        DockerServer().start()


def test_docker_sdk_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "docker", None)
    with pytest.raises(ServerStartError, match=r"docker SDK is not installed.*esmapper\[docker\]"):
        DockerServer().start()


def test_real_es_skip_reason() -> None:
    reason = real_es_skip_reason({})
    assert reason is not None
    assert "noida-db" in reason
    assert "ESMAPPER_TEST_URL" in reason
    assert real_es_skip_reason({"ESMAPPER_TEST_DOCKER": "0"}) == reason
    assert real_es_skip_reason({"ESMAPPER_TEST_URL": "http://es:9200"}) is None
    assert real_es_skip_reason({"ESMAPPER_TEST_DOCKER": "1"}) is None


def test_local_only_skip_reason() -> None:
    assert local_only_skip_reason({}) is None
    assert local_only_skip_reason({"ESMAPPER_TEST_DOCKER": "0"}) is None
    reason = local_only_skip_reason({"ESMAPPER_TEST_URL": "http://es:9200"})
    assert (
        reason
        == "local_only: holds only on the local noida-db test server (ESMAPPER_TEST_URL is set)"
    )
    docker = local_only_skip_reason({"ESMAPPER_TEST_DOCKER": "1"})
    assert docker is not None and docker.endswith("(ESMAPPER_TEST_DOCKER=1)")


_REAL_ES_TESTS = """
import pytest

@pytest.mark.real_es
def test_needs_real_es():
    pass

@pytest.mark.local_only
def test_needs_the_local_server():
    pass

def test_plain(esmapper_es_server_kind):
    assert esmapper_es_server_kind == {kind!r}
"""


@pytest.mark.parametrize(
    ("env", "kind", "outcome"),
    [
        ({}, "local", {"passed": 2, "skipped": 1}),
        ({"ESMAPPER_TEST_URL": "http://127.0.0.1:9"}, "url", {"passed": 2, "skipped": 1}),
        ({"ESMAPPER_TEST_DOCKER": "1"}, "docker", {"passed": 2, "skipped": 1}),
    ],
)
def test_plugin_skips_real_es_on_the_local_server_and_local_only_elsewhere(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    env: dict[str, str],
    kind: str,
    outcome: dict[str, int],
) -> None:
    for name in ("ESMAPPER_TEST_URL", "ESMAPPER_TEST_DOCKER"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    pytester.makepyfile(_REAL_ES_TESTS.format(kind=kind))
    # in this process, where the Django tests configured Django: pytest-django (of the test
    # extra) would set its test environment up a second time, which it refuses
    result = pytester.runpytest("-rs", "--strict-markers", "-p", "no:django")  # the plugin
    # registers the marker
    result.assert_outcomes(**outcome)
    if kind == "local":
        result.stdout.fnmatch_lines(["*real_es: the local noida-db test server*"])
    else:
        result.stdout.fnmatch_lines(["*local_only: holds only on the local noida-db*"])


def _script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + textwrap.dedent(body))
    path.chmod(0o755)
    return path


def test_local_server_start_failure_shows_log_tail(tmp_path: Path) -> None:
    binary = _script(tmp_path / "noida-db", 'echo "fatal: cannot open data dir" >&2\nexit 3\n')
    server = LocalServer(binary=binary, startup_timeout=5)
    with pytest.raises(ServerStartError, match="fatal: cannot open data dir") as info:
        server.start()
    assert "did not answer GET /_cluster/health" in str(info.value)
    assert server.pid is None
    assert server.log_path is None  # temp dir removed
    server.stop()


def test_local_server_timeout_kills_process(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    binary = _script(tmp_path / "noida-db", f"echo $$ > {pidfile}\nexec sleep 60\n")
    server = LocalServer(binary=binary, startup_timeout=0.5, stop_timeout=2)
    with pytest.raises(ServerStartError):
        server.start()
    with pytest.raises(ProcessLookupError):
        os.kill(int(pidfile.read_text()), 0)


def test_local_server_retries_taken_port(tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    binary = _script(
        tmp_path / "noida-db",
        f'echo x >> {calls}\necho "error: elasticsearch: port 1 is already in use"\nexit 1\n',
    )
    with pytest.raises(ServerStartError, match="already in use"):
        LocalServer(binary=binary, attempts=3).start()
    assert len(calls.read_text().split()) == 3


@pytest.mark.parametrize("prefix", ["", "*", "t-*", "T-abc-", "-x", "t-a,b-"])
def test_delete_prefixed_refuses_unsafe_prefixes(prefix: str) -> None:
    with pytest.raises(ValueError, match="unsafe index prefix"):
        delete_prefixed(None, prefix)  # type: ignore[arg-type]
