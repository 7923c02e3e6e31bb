"""Runs many ``esmapper`` command lines cheaply, each in its own process.

``python -m tests.unit.cli.forking_cli`` reads a JSON list of argument lists on stdin,
imports the CLI once, then forks one child per command line: the child runs
``esmapper.cli.main`` with its stdout and stderr on files, exactly as ``python -m
esmapper.cli`` would (an exception escaping it prints its traceback and exits 1), and the
parent collects ``{"code", "stdout", "stderr"}`` per command line as JSON on stdout. A
child still running after the hang guard is killed and reported with code ``null``.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import time
import traceback
from typing import Any

HANG_GUARD = 60.0  # seconds per command line


def _child(args: list[str], out: int, err: int) -> None:
    os.dup2(out, 1)
    os.dup2(err, 2)
    code = 0
    try:
        from esmapper.cli import main

        main(args, prog_name="esmapper")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def run(args: list[str]) -> dict[str, Any]:
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            _child(args, out.fileno(), err.fileno())
        deadline = time.monotonic() + HANG_GUARD
        status: int | None = None
        while time.monotonic() < deadline:
            done, raw = os.waitpid(pid, os.WNOHANG)
            if done:
                status = os.waitstatus_to_exitcode(raw)
                break
            time.sleep(0.01)
        if status is None:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        out.seek(0)
        err.seek(0)
        return {
            "code": status,
            "stdout": out.read().decode("utf-8", "replace"),
            "stderr": err.read().decode("utf-8", "replace"),
        }


def main() -> None:
    import esmapper.cli  # noqa: F401 - once, before the forks

    cases: list[list[str]] = json.load(sys.stdin)
    json.dump([run(args) for args in cases], sys.stdout)


if __name__ == "__main__":
    main()
