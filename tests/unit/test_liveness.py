"""Whether a lock holder's process is gone: only "certainly dead on this machine" counts."""

from __future__ import annotations

import subprocess
import sys

import pytest

from esmapper import _liveness

pytestmark = pytest.mark.skipif(
    _liveness.identity() is None, reason="needs Linux /proc (elsewhere nothing is judged gone)"
)


def recorded(pid: int) -> dict[str, object]:
    """The identity ``pid`` would have stored in a lock document."""
    mine = _liveness.identity()
    assert mine is not None
    started = _liveness._start_time(pid)
    assert started is not None
    return {**mine, "pid": pid, "start": started[0]}


def test_this_process_is_not_gone() -> None:
    me = _liveness.identity()
    assert me is not None and set(me) == {"machine", "uid", "pid", "start"}
    assert not _liveness.gone(me)


def test_a_process_that_exited_is_gone_and_a_reused_pid_too() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        holder = recorded(child.pid)
        assert not _liveness.gone(holder)  # alive
        assert _liveness.gone({**holder, "start": holder["start"] + 1})  # type: ignore[operator]  # another process
    finally:
        child.kill()
        child.wait()
    assert _liveness.gone(holder)


@pytest.mark.parametrize(
    "change",
    [
        {"machine": "another-boot/pid:[1]"},  # another machine or container
        {"uid": -1},  # another user (hidepid may hide their processes)
        {"pid": "not a pid"},
        {"start": None},
    ],
)
def test_what_cannot_be_known_is_not_gone(change: dict[str, object]) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    holder = recorded(child.pid)
    child.communicate(b"")  # exits: gone, but the changed record cannot be judged from here
    assert _liveness.gone(holder)
    assert not _liveness.gone({**holder, **change})


def test_no_record_is_not_gone() -> None:
    assert not _liveness.gone(None)
    assert not _liveness.gone({})
