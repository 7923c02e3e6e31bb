"""Real pauses for lease tests: a child process stopped with SIGSTOP at a chosen point and
resumed with SIGCONT, its lock heartbeat thread stopped with it (what lets its lease lapse).

The child calls :func:`hold_here` at the point: it creates ``<control>/<name>.paused`` and
waits for a line on its stdin. The parent waits for the file (:meth:`Child.wait_paused`),
then :meth:`Child.stop` sends SIGSTOP and waits until the kernel reports the process
stopped; :meth:`Child.resume` writes the line (kept in the pipe while the child is stopped)
and sends SIGCONT. Every child is killed when the :func:`children` block ends.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.unit.cli.apps import subprocess_env

ROOT = Path(__file__).resolve().parents[2]
DEADLINE = 45.0  # seconds any single wait may take

#: SIGSTOP/SIGCONT, and /proc to see the stop: Linux only.
linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="needs SIGSTOP and /proc"
)


def hold_here(control: str, name: str) -> None:
    """In the child: announce the pause point and wait for the parent's go (a stdin line)."""
    (Path(control) / f"{name}.paused").touch()
    sys.stdin.readline()


def _state(pid: int) -> str:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2]  # the field after the command name


class Child:
    """A worker process: ``python -m <module> <args>`` from the repository root."""

    def __init__(self, module: str, control: Path, name: str, *args: str) -> None:
        self.control, self.name = control, name
        self.proc = subprocess.Popen(
            [sys.executable, "-m", module, str(control), name, *args],
            cwd=ROOT,
            env=subprocess_env(ROOT),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def _failed(self, what: str) -> AssertionError:
        out, err = self.proc.communicate()
        return AssertionError(
            f"{self.name} exited ({self.proc.returncode}) before {what}:\n{out}\n{err}"
        )

    def wait_paused(self) -> None:
        """Until the child reached its pause point (it waits there for :meth:`resume`)."""
        flag = self.control / f"{self.name}.paused"
        deadline = time.monotonic() + DEADLINE
        while not flag.exists():
            if self.proc.poll() is not None:
                raise self._failed("its pause point")
            assert time.monotonic() < deadline, f"{self.name} never reached its pause point"
            time.sleep(0.01)

    def stop(self) -> None:
        """SIGSTOP, and wait until the kernel reports the process stopped."""
        os.kill(self.proc.pid, signal.SIGSTOP)
        deadline = time.monotonic() + DEADLINE
        while _state(self.proc.pid) != "T":
            assert time.monotonic() < deadline, f"{self.name} did not stop"
            time.sleep(0.005)

    def resume(self) -> None:
        """Let the child go on past its pause point (SIGCONT when it was stopped)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        os.kill(self.proc.pid, signal.SIGCONT)

    def outcome(self) -> dict[str, Any]:
        """The JSON line the child printed last, once it exited 0."""
        try:
            out, err = self.proc.communicate(timeout=DEADLINE)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{self.name} did not finish") from None
        assert self.proc.returncode == 0, (
            f"{self.name} exited {self.proc.returncode}:\n{out}\n{err}"
        )
        result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
        return result


@contextmanager
def children() -> Iterator[list[Child]]:
    """The started children are added to the yielded list; all are killed (SIGKILL ends a
    stopped process too) and reaped when the block ends."""
    started: list[Child] = []
    try:
        yield started
    finally:
        for child in started:
            if child.proc.poll() is None:
                child.proc.kill()
            child.proc.communicate()
