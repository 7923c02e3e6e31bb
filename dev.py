#!/usr/bin/env python3
"""The project's two set-up commands (see README.md), runnable with only python3 present.

    python3 dev.py demo    # the main job: the demo (library walkthrough, CLI, web app)
    python3 dev.py test    # the whole test suite
    python3 dev.py check   # ruff check, ruff format --check and mypy (CI runs it too)

Each creates ./.venv on first use and installs the package with its test extras into it
(again whenever setup.cfg changes), then runs inside it. Extra arguments are passed on
(``python3 dev.py test -k ids``).

``test`` also needs a browser for the web app's browser tests: when Chromium or its driver
is missing it installs the ``chromium`` and ``chromium-driver`` packages with apt-get (as
root, non-interactively, saying so); without apt-get and a browser those tests are skipped.

``check`` runs the linters CI gates on (ruff and mypy come with the ``dev`` extra installed
into ./.venv); it stops at the first that fails.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PYTHON = BIN / ("python.exe" if os.name == "nt" else "python")
STAMP = VENV / ".esmapper-installed"


def _requirements_digest() -> str:
    digest = hashlib.sha256()
    for name in ("setup.cfg", "pyproject.toml"):
        digest.update((ROOT / name).read_bytes())
    return digest.hexdigest()


def ensure_venv() -> None:
    if not PYTHON.exists():
        print(f"creating {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    wanted = _requirements_digest()
    if STAMP.exists() and STAMP.read_text() == wanted:
        return
    print("installing esmapper[test] into .venv (first run only)", flush=True)
    subprocess.run([str(PYTHON), "-m", "pip", "install", "--quiet", "--upgrade", "pip"], check=True)
    subprocess.run(
        [str(PYTHON), "-m", "pip", "install", "--quiet", "-e", f"{ROOT}[test,dev]"],
        check=True,
    )
    STAMP.write_text(wanted)


CHROMEDRIVER = Path("/usr/bin/chromedriver")  # where the tests look for it (Debian's)
BROWSERS = ("chromium", "chromium-browser", "google-chrome")
BROWSER_PACKAGES = ("chromium", "chromium-driver")


def ensure_browser() -> None:
    """Install Chromium and chromedriver with apt-get when one is missing (root only)."""
    has_browser = any(shutil.which(name) for name in BROWSERS)
    if has_browser and CHROMEDRIVER.exists():
        return
    apt = shutil.which("apt-get")
    is_root = hasattr(os, "geteuid") and os.geteuid() == 0
    if apt is None or not is_root:
        why = "apt-get is not available" if apt is None else "not running as root"
        print(
            f"note: no Chromium with chromedriver and {why}: the browser tests will be skipped "
            f"(install them with: sudo apt-get install {' '.join(BROWSER_PACKAGES)})",
            flush=True,
        )
        return
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = [apt, "install", "-y", "-q", "--no-install-recommends", *BROWSER_PACKAGES]
    print(f"installing {' and '.join(BROWSER_PACKAGES)} for the browser tests:", flush=True)
    print(f"  {apt} update -q", flush=True)
    updated = subprocess.run([apt, "update", "-q"], check=False, env=env)
    print("  " + " ".join(install), flush=True)
    if updated.returncode != 0 or subprocess.run(install, check=False, env=env).returncode:
        print("warning: apt-get failed: the browser tests will be skipped", flush=True)


#: The sources the linters check (``dev.py`` itself included).
LINTED = ("esmapper", "tests", "bench", "examples", "dev.py")


def checks() -> list[list[str]]:
    """The lint commands ``check`` runs, in order (mypy's file list is in setup.cfg)."""
    ruff = [str(PYTHON), "-m", "ruff"]
    return [
        [*ruff, "check", *LINTED],
        [*ruff, "format", "--check", *LINTED],
        [str(PYTHON), "-m", "mypy"],
    ]


def check() -> int:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for command in checks():
        print("$ " + " ".join(command[2:] if command[1] == "-m" else command), flush=True)
        code = subprocess.run(command, cwd=ROOT, env=env, check=False).returncode
        if code:
            return code
    return 0


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("demo", "test", "check"):
        print(__doc__)
        return 2
    ensure_venv()
    command, rest = argv[0], argv[1:]
    if command == "check":
        return check()
    if command == "test":
        ensure_browser()
    module = "examples.demo" if command == "demo" else "pytest"
    return run_child([str(PYTHON), "-m", module, *rest])


def run_child(command: list[str]) -> int:
    """Run ``command``; Ctrl-C is left to the child (it stops its servers), not killed."""
    child = subprocess.Popen(command, cwd=ROOT)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        return child.wait()
    finally:
        signal.signal(signal.SIGINT, previous)


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit(130)
