"""Whether the process that wrote a lock document is gone, when it ran on this machine.

A lock holder that was killed (``kill -9``, the OOM killer) cannot release its lock, which
then blocks others until it expires (:mod:`esmapper.locks`). On one machine that wait is
unnecessary: the kernel knows whether the holder still runs. The lock document records
:func:`identity` of its holder::

    "process": {"machine": "<boot id>/<pid namespace>", "uid": 1000, "pid": 4242,
                "start": 1234567}

and :func:`gone` answers "certainly dead" only when all of these hold: this process has
the same ``machine`` (the same kernel boot *and* the same pid namespace, so two containers
with the same host name never judge each other) and the same ``uid`` (``/proc`` mounted
with ``hidepid`` hides other users' processes), and ``/proc/<pid>`` is missing, is a
zombie, or started at another time than recorded (the pid was reused). Anything else, an
identity missing or unreadable, another machine, a platform without ``/proc``, is "not
known to be gone": the lock is then left to expire. Linux only; elsewhere :func:`identity`
is ``None`` and nothing is ever judged gone.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["gone", "identity"]

_BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
_cache: dict[int, dict[str, Any] | None] = {}  # by pid: a forked child has its own


def _start_time(pid: int) -> tuple[int, str] | None:
    """``(start time in clock ticks since boot, state letter)`` of ``pid``, or ``None``
    when it does not exist (``/proc/<pid>/stat``, fields 22 and 3)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = stat[stat.rindex(")") + 2 :].split()  # the name in (...) may hold spaces
    return int(fields[19]), fields[0]


def identity() -> dict[str, Any] | None:
    """This process as recorded in a lock document (see the module docstring), or ``None``
    where it cannot be told (not Linux, ``/proc`` unreadable)."""
    pid = os.getpid()
    if pid not in _cache:
        try:
            machine = f"{_BOOT_ID.read_text().strip()}/{os.readlink('/proc/self/ns/pid')}"
            started = _start_time(pid)
        except (OSError, ValueError, IndexError):
            started = None
        _cache[pid] = (
            None
            if started is None
            else {"machine": machine, "uid": os.getuid(), "pid": pid, "start": started[0]}
        )
    found = _cache[pid]
    return None if found is None else dict(found)


def gone(process: Mapping[str, Any] | None) -> bool:
    """Whether the process ``process`` (a recorded :func:`identity`) certainly no longer
    runs; ``False`` whenever that cannot be known."""
    mine = identity()
    if not isinstance(process, Mapping) or mine is None:
        return False
    if (process.get("machine"), process.get("uid")) != (mine["machine"], mine["uid"]):
        return False
    try:
        pid, start = int(process["pid"]), int(process["start"])
    except (KeyError, TypeError, ValueError):
        return False
    try:
        now = _start_time(pid)
    except (OSError, ValueError, IndexError):
        return False
    return now is None or now[0] != start or now[1] == "Z"
