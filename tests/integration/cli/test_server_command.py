"""``esmapper server``: the embedded local server for a user's own scripts, in a real
subprocess (it needs the noida-db package of the test extra, like the test server)."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from pathlib import Path

from elasticsearch import Elasticsearch

from esmapper.testing.server import free_port
from tests.unit.cli.apps import subprocess_env

HANG_GUARD = 120  # seconds


def start(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "esmapper.cli", "server", *args],
        env=subprocess_env(tmp_path),
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_server_prints_its_url_serves_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    data = tmp_path / "data"
    proc = start(tmp_path, "--port", "0", "--data-dir", str(data))
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith(
            "local Elasticsearch-compatible server (noida-db) at http://127.0.0.1:"
        )
        url = first.rsplit(" ", 1)[1].strip()
        assert proc.stdout.readline().strip() == f"export ESMAPPER_URL={url}"
        assert f"kept in {data}" in proc.stdout.readline()
        with Elasticsearch(url) as client:
            client.index(index="server-check", id="1", document={"ok": True}, refresh=True)
            assert client.get(index="server-check", id="1")["_source"] == {"ok": True}
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=HANG_GUARD)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert out.strip().endswith("stopping the server") and "Traceback" not in err
    assert data.is_dir() and any(data.iterdir())  # the data stays


def test_a_busy_port_is_one_error_line_naming_the_option(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as busy:
        busy.bind(("127.0.0.1", free_port()))
        busy.listen()
        port = busy.getsockname()[1]
        proc = start(tmp_path, "--port", str(port))
        _, err = proc.communicate(timeout=HANG_GUARD)
    assert proc.returncode == 1
    assert err.splitlines() == [
        f"error: port {port} of 127.0.0.1 is already in use; choose another with --port "
        "(0: any free port)"
    ]
