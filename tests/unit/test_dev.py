"""``python3 dev.py check`` gates lint and types, and CI runs it before the tests."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import dev

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def this_python(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run the checks with the interpreter running the tests (it has ruff and mypy)."""
    monkeypatch.setattr(dev, "PYTHON", Path(sys.executable))


def test_ci_runs_the_checks_before_the_tests() -> None:
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    commands = [line for line in lines if line.startswith("python3 dev.py")]
    assert commands == ["python3 dev.py check", "python3 dev.py test -q -p no:cacheprovider"]


def test_check_runs_ruff_check_ruff_format_and_mypy() -> None:
    tools = [command[2:4] for command in dev.checks()]
    assert tools == [["ruff", "check"], ["ruff", "format"], ["mypy"]]
    assert "--check" in dev.checks()[1]


@pytest.mark.usefixtures("this_python")
def test_check_passes_on_this_tree() -> None:
    assert dev.check() == 0


@pytest.mark.usefixtures("this_python")
def test_check_fails_on_a_lint_error_and_stops_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import os\n")  # unused import (F401)
    monkeypatch.setattr(dev, "LINTED", (str(bad),))
    assert dev.check() != 0
    out = capsys.readouterr().out
    assert "$ ruff check" in out
    assert "$ mypy" not in out  # stopped at the first failure


def test_an_unknown_command_prints_the_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert dev.main(["lint"]) == 2
    assert "python3 dev.py check" in capsys.readouterr().out


# -- the specification check is on in ``dev.py test`` ----------------------------------------


def test_test_turns_the_specification_check_on() -> None:
    assert dev.pytest_args(["-q", "tests/unit"]) == [
        f"--es-spec={dev.SPEC_KIT}",
        "-q",
        "tests/unit",
    ]
    assert (dev.SPEC_KIT / "check_requests.py").is_file()
    assert (dev.SPEC_KIT / "es-spec" / "apis.json").is_file()


@pytest.mark.parametrize("given", [["--es-spec=off"], ["--es-spec", "/elsewhere"]])
def test_an_es_spec_option_given_wins(given: list[str]) -> None:
    assert dev.pytest_args(["-x", *given]) == ["-x", *given]


# -- ``dev.py test --real-es 8|9`` -----------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "major", "rest"),
    [
        (["-x", "--real-es", "9", "-k", "ids"], 9, ["-x", "-k", "ids"]),
        (["--real-es=8"], 8, []),
        (["tests/unit"], None, ["tests/unit"]),
    ],
)
def test_real_es_is_taken_out_of_the_pytest_arguments(
    args: list[str], major: int | None, rest: list[str]
) -> None:
    assert dev.split_real_es(args) == (major, rest)


@pytest.mark.parametrize("args", [["--real-es"], ["--real-es", "7"], ["--real-es=latest"]])
def test_real_es_needs_a_known_major(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(
        dev.UsageError, match="--real-es takes the Elasticsearch major version, 8 or 9"
    ):
        dev.split_real_es(args)
    assert dev.main(["test", *args]) == 2  # before anything is installed
    assert "dev.py test: --real-es takes" in capsys.readouterr().out


def test_the_compose_command_runs_the_majors_file_under_its_own_project() -> None:
    command = dev.compose_command(9, "up", "-d", "--wait")
    compose_file = ROOT / "docker" / "docker-compose.es9.yml"
    project = ["-p", "esmapper-test-es9"]
    assert command == ["docker", "compose", "-f", str(compose_file), *project, "up", "-d", "--wait"]
    assert compose_file.is_file() and (ROOT / "docker" / "docker-compose.es8.yml").is_file()
    assert dev.compose_command(8, "down", "-v")[-4:] == ["-p", "esmapper-test-es8", "down", "-v"]


def test_the_cluster_url_follows_es_port() -> None:
    assert dev.real_es_url({}) == "http://127.0.0.1:9200"
    assert dev.real_es_url({"ES_PORT": "19200"}) == "http://127.0.0.1:19200"


class Machine:
    """What ``run_real_es`` runs, in order, with the answers given to it."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *, client: int = 9, up: int = 0) -> None:
        self.ran: list[str] = []
        self.env: dict[str, str] = {}
        self.up, self.tests = up, 0
        monkeypatch.setattr(shutil, "which", lambda name: f"/usr/bin/{name}")
        monkeypatch.setattr(dev, "client_major", lambda: client)
        monkeypatch.setattr(subprocess, "run", self.run)
        monkeypatch.setattr(dev, "run_child", self.run_child)
        monkeypatch.delenv("ES_PORT", raising=False)

    def run(self, command: list[str], check: bool = False, **kwargs: Any) -> Any:
        if command[:2] == ["docker", "compose"]:
            self.ran.append(" ".join(command[command.index("-p") + 2 :]))
            code = self.up if "up" in command else 0
        else:
            self.ran.append("pip " + command[-1])
            code = 0
        return subprocess.CompletedProcess(command, code)

    def run_child(self, command: list[str], env: dict[str, str] | None = None) -> int:
        self.ran.append("pytest " + " ".join(command[3:]))
        self.env = env or {}
        if self.tests == -1:
            raise KeyboardInterrupt
        return self.tests


def test_real_es_starts_the_cluster_runs_the_tests_against_it_and_removes_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    machine = Machine(monkeypatch)
    machine.tests = 1  # a failing test: still removed, and the code is the tests'
    assert dev.run_real_es(9, ["-x"]) == 1
    assert machine.ran == ["up -d --wait", f"pytest --es-spec={dev.SPEC_KIT} -x", "down -v"]
    assert machine.env["ESMAPPER_TEST_URL"] == "http://127.0.0.1:9200"


def test_real_es_removes_the_cluster_on_ctrl_c(monkeypatch: pytest.MonkeyPatch) -> None:
    machine = Machine(monkeypatch)
    machine.tests = -1
    with pytest.raises(KeyboardInterrupt):
        dev.run_real_es(9, [])
    assert machine.ran[-1] == "down -v"


def test_real_es_runs_no_test_when_the_cluster_is_not_healthy(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    machine = Machine(monkeypatch, up=1)
    assert dev.run_real_es(8, []) == 1
    assert machine.ran == ["pip elasticsearch>=8.18,<9", "up -d --wait", "down -v",
                           "pip elasticsearch>=9,<10"]  # fmt: skip
    assert "the Elasticsearch 8 cluster did not become healthy" in capsys.readouterr().out


def test_real_es_runs_with_the_client_of_the_clusters_major_then_puts_back_the_other(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    machine = Machine(monkeypatch, client=9)
    assert dev.run_real_es(8, []) == 0
    assert machine.ran[0] == "pip elasticsearch>=8.18,<9"
    assert machine.ran[-1] == "pip elasticsearch>=9,<10"
    machine = Machine(monkeypatch, client=8)
    dev.run_real_es(8, [])
    assert not any(step.startswith("pip") for step in machine.ran)


def test_real_es_without_docker_says_what_to_do_instead(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    machine = Machine(monkeypatch)
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert dev.run_real_es(9, []) == 2
    assert machine.ran == []
    assert "ESMAPPER_TEST_URL=http://host:9200 python3 dev.py test" in capsys.readouterr().out


# -- the compose files: single node, no security, healthy when the cluster answers -----------


@pytest.mark.parametrize("major", [8, 9])
def test_the_compose_file_runs_the_test_image_as_the_docker_server_does(major: int) -> None:
    yaml = pytest.importorskip("yaml")
    from esmapper.testing.docker import CONTAINER_ENV, IMAGES

    compose = yaml.safe_load((ROOT / "docker" / f"docker-compose.es{major}.yml").read_text())
    (service,) = compose["services"].values()
    image = service["image"].replace(f"${{ES{major}_VERSION:-", "").rstrip("}")
    assert image == IMAGES[major]
    assert image.rsplit(":", 1)[1].startswith(f"{major}.")
    settings = dict(item.split("=", 1) for item in service["environment"])
    assert settings == CONTAINER_ENV
    assert service["ports"] == ["127.0.0.1:${ES_PORT:-9200}:9200"]
    health = " ".join(service["healthcheck"]["test"])
    assert "_cluster/health?wait_for_status=yellow" in health


# -- the browser of the browser tests: installed with apt-get, unless skipped ----------------


class Apt:
    """A machine without Chromium, with apt-get, as root: what ``ensure_browser`` runs."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.ran: list[list[str]] = []
        monkeypatch.setattr(
            shutil, "which", lambda name: "/usr/bin/apt-get" if name == "apt-get" else None
        )
        monkeypatch.setattr(os, "geteuid", lambda: 0, raising=False)
        monkeypatch.setattr(subprocess, "run", self.run)

    def run(self, command: list[str], check: bool = False, **kwargs: Any) -> Any:
        self.ran.append(command)
        return subprocess.CompletedProcess(command, 0)


@pytest.mark.parametrize(
    ("value", "skipped"),
    [("1", True), ("yes", True), ("true", True), ("0", False), ("off", False), ("", False)],
)
def test_the_browser_switch_is_read_from_the_environment(value: str, skipped: bool) -> None:
    assert dev.browser_tests_skipped({dev.SKIP_BROWSER: value}) is skipped
    assert dev.browser_tests_skipped({}) is False


def test_test_runs_apt_get_update_then_installs_chromium_and_its_driver_as_root(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    apt = Apt(monkeypatch)
    monkeypatch.delenv(dev.SKIP_BROWSER, raising=False)
    dev.ensure_browser()
    assert apt.ran == [
        ["/usr/bin/apt-get", "update", "-q"],
        ["/usr/bin/apt-get", "install", "-y", "-q", "--no-install-recommends",
         "chromium", "chromium-driver"],
    ]  # fmt: skip
    assert "installing chromium and chromium-driver" in capsys.readouterr().out


def test_skipping_the_browser_tests_installs_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    apt = Apt(monkeypatch)
    monkeypatch.setenv(dev.SKIP_BROWSER, "1")
    dev.ensure_browser()
    assert apt.ran == []
    assert (
        f"{dev.SKIP_BROWSER} is set: the browser tests will be skipped" in capsys.readouterr().out
    )


def test_skipping_the_browser_tests_skips_them_saying_why() -> None:
    browser_tests = ROOT / "tests" / "integration" / "examples" / "test_webapp_browser.py"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "--es-spec=off",
         str(browser_tests)],
        cwd=ROOT, env={**os.environ, dev.SKIP_BROWSER: "1"}, capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"\b[1-9][0-9]* skipped", done.stdout), done.stdout
    assert "passed" not in done.stdout and "failed" not in done.stdout, done.stdout
    assert f"browser tests skipped: {dev.SKIP_BROWSER} is set" in done.stdout
