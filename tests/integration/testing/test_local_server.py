"""The local noida-db server: lifecycle, port retry, index_prefix cleanup, interrupted runs."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from elasticsearch import Elasticsearch

from esmapper.testing import LocalServer, delete_prefixed
from esmapper.testing import server as server_module
from esmapper.testing.base import is_healthy


def _gone(pid: int) -> bool:
    """Whether no process has this pid any more."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def _eventually(check: Callable[[], bool], timeout: float = 15.0) -> bool:
    """Poll ``check`` until it is true (True) or ``timeout`` seconds pass (False)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_local_server_lifecycle() -> None:
    """Start, answer, index and search, stop: the process and the temp dir are gone."""
    server = LocalServer()
    with server:
        pid, url, log_path = server.pid, server.url, server.log_path
        assert pid is not None
        assert log_path is not None
        assert url.startswith("http://127.0.0.1:")
        assert is_healthy(url)
        assert server.start() is server  # already running: no second process
        assert server.pid == pid
        with Elasticsearch(url) as es:
            es.index(index="lifecycle", id="1", document={"title": "hello world"}, refresh=True)
            hits = es.search(index="lifecycle", query={"match": {"title": "hello"}})["hits"]
            assert [hit["_id"] for hit in hits["hits"]] == ["1"]
    assert _gone(pid)
    assert not log_path.parent.exists()
    assert not is_healthy(url, timeout=0.5)
    with pytest.raises(RuntimeError, match="not running"):
        _ = server.url
    server.stop()  # twice is fine


def test_local_server_retries_on_taken_port(monkeypatch: pytest.MonkeyPatch) -> None:
    """A port taken after it was chosen makes the server start again on another one."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        second = server_module.free_port()
        ports = [taken.getsockname()[1], second]
        monkeypatch.setattr(server_module, "free_port", lambda: ports.pop(0))
        with LocalServer() as server:
            assert server.url == f"http://127.0.0.1:{second}"
            assert is_healthy(server.url)


_created: list[str] = []  # prefixes of the next test, checked by the one after it


def test_index_prefix_gives_a_fresh_lowercase_prefix(
    index_prefix: str, es_client: Elasticsearch
) -> None:
    """Create one of everything under the prefix; the fixture deletes it afterwards."""
    assert index_prefix.startswith("t-")
    assert index_prefix.endswith("-")
    assert index_prefix == index_prefix.lower()
    _make_everything(es_client, index_prefix)
    _created.append(index_prefix)


def test_index_prefix_cleaned_up_after_the_previous_test(es_client: Elasticsearch) -> None:
    """Nothing the previous test created under its prefix is left."""
    if not _created:
        pytest.skip("runs after test_index_prefix_gives_a_fresh_lowercase_prefix")
    _assert_nothing_left(es_client, _created[0])
    es_client.indices.delete(index=_outside(_created[0]))


def test_delete_prefixed_deletes_only_the_prefix(es_client: Elasticsearch) -> None:
    """delete_prefixed removes the prefix's things and leaves names outside it alone."""
    prefix, neighbour = f"t-{uuid.uuid4().hex[:8]}-", f"t-{uuid.uuid4().hex[:8]}-"
    try:
        _make_everything(es_client, prefix)
        es_client.indices.create(index=f"{neighbour}keep")
        delete_prefixed(es_client, prefix)
        _assert_nothing_left(es_client, prefix)
        assert es_client.indices.exists(index=f"{neighbour}keep")
        assert es_client.indices.exists(index=_outside(prefix))
        delete_prefixed(es_client, prefix)  # nothing left: still fine
    finally:
        lenient = es_client.options(ignore_status=404)
        lenient.indices.delete(
            index=[f"{neighbour}keep", _outside(prefix)], ignore_unavailable=True
        )


def _outside(prefix: str) -> str:
    """An index outside ``prefix`` that carries an alias under it."""
    return f"zz-{prefix}outside"


def _make_everything(es: Elasticsearch, prefix: str) -> None:
    """Indexes (one closed), an alias, templates of all three kinds, an alias pointing out."""
    es.indices.create(index=f"{prefix}plain")
    es.indices.create(index=f"{prefix}items-v1", aliases={f"{prefix}items": {}})
    es.indices.create(index=f"{prefix}closed")
    es.indices.close(index=f"{prefix}closed")
    es.indices.create(index=_outside(prefix))
    es.indices.put_alias(index=_outside(prefix), name=f"{prefix}pointing-out")
    es.cluster.put_component_template(
        name=f"{prefix}component", template={"settings": {"number_of_shards": 1}}
    )
    es.indices.put_index_template(
        name=f"{prefix}template",
        index_patterns=[f"{prefix}logs-*"],
        composed_of=[f"{prefix}component"],
    )
    es.indices.put_template(name=f"{prefix}legacy", index_patterns=[f"{prefix}old-*"])


def _assert_nothing_left(es: Elasticsearch, prefix: str) -> None:
    """No index, alias or template named with ``prefix`` exists."""
    listed = es.cat.indices(format="json", expand_wildcards="all").body
    assert isinstance(listed, list)
    assert [row["index"] for row in listed if row["index"].startswith(prefix)] == []
    aliases = es.indices.get_alias(name=f"{prefix}*", expand_wildcards="all").body
    assert aliases == {}
    lenient = es.options(ignore_status=404)
    templates = lenient.indices.get_index_template(name=f"{prefix}*").body
    assert templates.get("index_templates", []) == []
    assert lenient.indices.get_template(name=f"{prefix}*").body == {}
    components = lenient.cluster.get_component_template(name=f"{prefix}*").body
    assert components.get("component_templates", []) == []


_HANGING_TEST = """
import os, time
from pathlib import Path

def test_hang(esmapper_es_server):
    server = esmapper_es_server
    pidfile = Path(os.environ["ESMAPPER_PIDFILE"])
    pidfile.with_suffix(".tmp").write_text(f"{server.pid} {server.log_path}")
    pidfile.with_suffix(".tmp").rename(pidfile)
    time.sleep(120)
"""


def _default_sigint() -> None:
    """Undo an inherited SIG_IGN (background jobs of a shell), so Python gets Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize(
    "sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name
)
def test_interrupted_run_leaves_no_server(tmp_path: Path, sig: signal.Signals) -> None:
    """A pytest run stopped by Ctrl-C, SIGTERM or SIGKILL takes its noida-db server along."""
    (tmp_path / "test_hanging.py").write_text(_HANGING_TEST)
    pidfile = tmp_path / "server.pid"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ESMAPPER_TEST_")}
    env["ESMAPPER_PIDFILE"] = str(pidfile)
    env["TMPDIR"] = str(tmp_path)  # whatever leaks stays in pytest's own temp dirs
    run = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_hanging.py"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        preexec_fn=_default_sigint,  # noqa: PLW1509
    )
    data_dir: Path | None = None
    try:
        assert _eventually(pidfile.exists, timeout=60), "the inner test never started"
        pid_text, log_path = pidfile.read_text().split()
        pid, data_dir = int(pid_text), Path(log_path).parent
        assert not _gone(pid)
        run.send_signal(sig)
        output = run.communicate(timeout=30)[0].decode(errors="replace")
        assert _eventually(lambda: _gone(pid)), output
        if sig == signal.SIGINT:  # teardown ran: the temp dir is gone too
            assert "KeyboardInterrupt" in output
            assert not data_dir.exists()
    finally:
        if run.poll() is None:  # interrupted ourselves: let the inner run clean up first
            run.send_signal(signal.SIGINT)
            try:
                run.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                run.kill()
                run.communicate()
        if data_dir is not None:  # SIGTERM/SIGKILL: no Python cleanup ran in there
            shutil.rmtree(data_dir, ignore_errors=True)
    assert data_dir is not None
    assert data_dir.parent == tmp_path
