#!/usr/bin/env python3
"""The project's two set-up commands (see README.md), runnable with only python3 present.

    python3 dev.py demo    # the main job: the demo (library walkthrough, CLI, web app)
    python3 dev.py test    # the whole test suite
    python3 dev.py test --real-es 9   # the whole suite against Elasticsearch 9 in Docker
    python3 dev.py check   # ruff check, ruff format --check and mypy (CI runs it too)

Each creates ./.venv on first use and installs the package with its test extras into it
(again whenever setup.cfg changes), then runs inside it. Extra arguments are passed on
(``python3 dev.py test -k ids``).

``test`` checks every request the tests send against the Elasticsearch API specification
(``--es-spec=tools/es_spec``, the pytest plugin's option; a violation fails the run;
``--es-spec=off`` turns it off).

``test --real-es 8`` / ``--real-es 9`` starts that major's single-node cluster with
``docker compose`` (``docker/docker-compose.es<N>.yml``, on 127.0.0.1:$ES_PORT, default 9200),
waits until it is healthy, runs the suite against it (``ESMAPPER_TEST_URL``: ``real_es``
tests run, ``local_only`` ones are skipped) and removes it afterwards. The elasticsearch
client must be of the cluster's major: when .venv has the other one, the right one is
installed for the run and the previous one put back after it.

``test`` also needs a browser for the web app's browser tests: when Chromium or its driver
is missing it runs ``apt-get update`` and installs the ``chromium`` and ``chromium-driver``
packages with apt-get (as root, non-interactively, saying so); without apt-get and a browser
those tests are skipped. ``ESMAPPER_SKIP_BROWSER_TESTS=1`` skips them whatever is installed,
and ``test`` then installs nothing.

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
from collections.abc import Mapping
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
#: Set (to anything but 0, false, no, off or nothing) to skip the browser tests: ``test``
#: then installs no browser, and the tests that need one are skipped, saying why.
SKIP_BROWSER = "ESMAPPER_SKIP_BROWSER_TESTS"


def browser_tests_skipped(env: Mapping[str, str] | None = None) -> bool:
    """Whether ``env`` (default: this environment) asks to skip the browser tests."""
    value = (os.environ if env is None else env).get(SKIP_BROWSER, "")
    return value.strip().lower() not in ("", "0", "false", "no", "off")


def ensure_browser() -> None:
    """Install Chromium and chromedriver with apt-get when one is missing (root only),
    unless the browser tests are skipped (:data:`SKIP_BROWSER`)."""
    if browser_tests_skipped():
        print(f"note: {SKIP_BROWSER} is set: the browser tests will be skipped", flush=True)
        return
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


#: The Elasticsearch API specification kit the tests are checked against (see its README).
SPEC_KIT = ROOT / "tools" / "es_spec"

#: ``--real-es`` majors: the compose file, and the client requirement of that major.
REAL_ES = {
    8: ("docker-compose.es8.yml", "elasticsearch>=8.18,<9"),
    9: ("docker-compose.es9.yml", "elasticsearch>=9,<10"),
}


class UsageError(Exception):
    """A bad ``dev.py`` command line (the message says what is wrong)."""


def split_real_es(args: list[str]) -> tuple[int | None, list[str]]:
    """``--real-es N`` / ``--real-es=N`` taken out of ``args``: (N or None, the rest).

    Raises UsageError for a missing or unknown major."""
    rest: list[str] = []
    major: str | None = None
    items = iter(args)
    for arg in items:
        if arg == "--real-es":
            major = next(items, "")
        elif arg.startswith("--real-es="):
            major = arg.partition("=")[2]
        else:
            rest.append(arg)
            continue
        if major not in {str(m) for m in REAL_ES}:
            known = " or ".join(str(m) for m in REAL_ES)
            raise UsageError(f"--real-es takes the Elasticsearch major version, {known}")
    return (None if major is None else int(major)), rest


def pytest_args(args: list[str]) -> list[str]:
    """The arguments ``test`` gives pytest: ``args``, with the specification check on unless
    an ``--es-spec`` option is among them."""
    if any(a == "--es-spec" or a.startswith("--es-spec=") for a in args):
        return list(args)
    return [f"--es-spec={SPEC_KIT}", *args]


def compose_command(major: int, *action: str) -> list[str]:
    """``docker compose`` for the ``--real-es`` cluster of ``major``, under its own project
    name (so it never stops a cluster started by hand from the same file)."""
    compose_file = ROOT / "docker" / REAL_ES[major][0]
    project = f"esmapper-test-es{major}"
    return ["docker", "compose", "-f", str(compose_file), "-p", project, *action]


def real_es_url(env: dict[str, str] | None = None) -> str:
    """Where the compose files publish Elasticsearch: 127.0.0.1:$ES_PORT (9200)."""
    port = (env if env is not None else os.environ).get("ES_PORT", "").strip() or "9200"
    return f"http://127.0.0.1:{port}"


def client_major() -> int:
    """The major version of the elasticsearch client installed in .venv."""
    out = subprocess.run(
        [str(PYTHON), "-c", "import elasticsearch; print(elasticsearch.VERSION[0])"],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(out.stdout.strip())


def install_client(major: int) -> bool:
    """Install the elasticsearch client of ``major`` into .venv (saying so); whether pip
    succeeded."""
    requirement = REAL_ES[major][1]
    print(f"installing {requirement} into .venv", flush=True)
    pip = [str(PYTHON), "-m", "pip", "install", "--quiet", requirement]
    if subprocess.run(pip, check=False).returncode:
        print(f"warning: pip could not install {requirement}", flush=True)
        return False
    return True


def run_real_es(major: int, args: list[str]) -> int:
    """Start the ``major`` cluster, run the tests against it, remove it (also on failures and
    Ctrl-C); the client of that major is installed for the run and the previous one put back."""
    if shutil.which("docker") is None:
        print(
            "--real-es needs Docker with the compose plugin (docker compose); without it, "
            "start a cluster yourself and run: ESMAPPER_TEST_URL=http://host:9200 "
            "python3 dev.py test",
            flush=True,
        )
        return 2
    previous = client_major()
    if previous != major and not install_client(major):
        return 2
    try:
        print("$ " + " ".join(compose_command(major, "up", "-d", "--wait")), flush=True)
        started = subprocess.run(compose_command(major, "up", "-d", "--wait"), check=False)
        try:
            if started.returncode:
                print(f"the Elasticsearch {major} cluster did not become healthy", flush=True)
                return started.returncode
            env = {**os.environ, "ESMAPPER_TEST_URL": real_es_url()}
            print(f"running the tests against {env['ESMAPPER_TEST_URL']}", flush=True)
            return run_child([str(PYTHON), "-m", "pytest", *pytest_args(args)], env=env)
        finally:
            subprocess.run(compose_command(major, "down", "-v"), check=False)
    finally:
        if previous != major:
            install_client(previous)


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("demo", "test", "check"):
        print(__doc__)
        return 2
    command, rest = argv[0], argv[1:]
    real_es: int | None = None
    if command == "test":
        try:
            real_es, rest = split_real_es(rest)
        except UsageError as exc:
            print(f"dev.py test: {exc}")
            return 2
    ensure_venv()
    if command == "check":
        return check()
    if command == "demo":
        return run_child([str(PYTHON), "-m", "examples.demo", *rest])
    ensure_browser()
    if real_es is not None:
        return run_real_es(real_es, rest)
    return run_child([str(PYTHON), "-m", "pytest", *pytest_args(rest)])


def run_child(command: list[str], env: dict[str, str] | None = None) -> int:
    """Run ``command`` (in ``env``, default this environment); Ctrl-C is left to the child
    (it stops its servers), not killed."""
    child = subprocess.Popen(command, cwd=ROOT, env=env)
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
