"""Every ``esmapper`` command, given bad input, prints one ``error:`` line on stderr and
exits non-zero: never a traceback.

The commands are read from click's command tree, so a command added later is covered
without touching this file: each leaf command is run with an unknown option, without its
required arguments, and with bad values ("nan", "inf", "-1", "x") for each of its options
that takes a value (text options: with "x" alone). Its required arguments are filled with a
name no model has, and the application's mapper points at a port where nothing listens, so
a bad value that slipped through fails too (and fast) instead of touching a real cluster.

Each command line runs in a process of its own: the many per-command cases are forked from
one process that imported the CLI once (tests/unit/cli/forking_cli.py), the global options
and a few others run as ``python -m esmapper.cli`` itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import click
import pytest

from esmapper.cli import main

from .apps import subprocess_env, write_app

ROOT = Path(__file__).resolve().parents[3]
UNREACHABLE = "http://127.0.0.1:1"
BAD_VALUES = ("nan", "inf", "-1", "x")
HANG_GUARD = 120  # seconds: a command that reads bad input must not start serving


def leaf_commands(
    group: click.Group = main, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    """``(("ids", "rekey"), command)`` for every command that is not a group."""
    ctx = click.Context(group, info_name="esmapper")
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None:
            continue
        if isinstance(command, click.Group):
            yield from leaf_commands(command, (*path, name))
        else:
            yield (*path, name), command


def value_options(command: click.Command) -> list[click.Option]:
    """The options that take a value, except paths and files: a bad path is still a path
    (``server --data-dir x`` would start a server)."""
    return [
        param
        for param in command.params
        if isinstance(param, click.Option)
        and not param.is_flag
        and not param.count
        and not isinstance(param.type, click.Path | click.File)
    ]


def required_arguments(command: click.Command) -> list[str]:
    """Placeholder values for the command's required arguments (a name no model has)."""
    return [
        "no-such-name"
        for param in command.params
        if isinstance(param, click.Argument) and param.required
    ]


def bad_invocations(command: click.Command) -> list[list[str]]:
    """The argument lists (after the command path) that must each fail with one line."""
    arguments = required_arguments(command)
    cases = [["--no-such-option", *arguments]]
    if arguments:
        cases.append([])
    for option in value_options(command):
        flag = max(option.opts, key=len)
        # any text is a valid string: one run shows the command fails in one line with it
        values = ("x",) if isinstance(option.type, click.types.StringParamType) else BAD_VALUES
        cases.extend([flag, value, *arguments] for value in values)
    return cases


LEAVES = dict(leaf_commands())


@pytest.fixture(scope="module")
def app_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    directory = tmp_path_factory.mktemp("bad-input-app")
    return directory, write_app(directory, UNREACHABLE, "bad-input-")


def run_cli(
    app_dir: tuple[Path, str], args: list[str], **env: str
) -> subprocess.CompletedProcess[str]:
    directory, module = app_dir
    environment = subprocess_env(directory, **env)
    for name in ("ESMAPPER_URL", "ESMAPPER_APP"):  # never a developer's own cluster
        if name not in env:
            environment.pop(name, None)
    return subprocess.run(
        [sys.executable, "-m", "esmapper.cli", "--app", f"{module}:mapper", *args],
        env=environment,
        cwd=directory,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
        check=False,
    )


def problems(args: list[str], done: subprocess.CompletedProcess[str]) -> list[str]:
    """What is wrong with the answer to ``args`` (nothing when it is one error line)."""
    found: list[str] = []
    shown = f"esmapper {' '.join(args)}: exit {done.returncode}, stderr {done.stderr!r}"
    if "Traceback" in done.stdout + done.stderr:
        found.append(f"{shown}: a traceback")
    if done.returncode == 0:
        found.append(f"{shown}: exit code 0")
    lines = done.stderr.strip().splitlines()
    if len(lines) != 1 or not lines[0].startswith("error: "):
        found.append(f"{shown}: not one 'error:' line")
    return found


def check_all(app_dir: tuple[Path, str], cases: list[list[str]]) -> None:
    """Each of ``cases`` in a real process of its own (``python -m esmapper.cli``)."""
    with ThreadPoolExecutor(max_workers=3) as pool:
        answers = list(pool.map(lambda args: run_cli(app_dir, args), cases))
    found = [p for args, done in zip(cases, answers, strict=True) for p in problems(args, done)]
    assert not found, "\n".join(found)


def check_forked(app_dir: tuple[Path, str], cases: list[list[str]]) -> None:
    """Each of ``cases`` in a process of its own, forked from one that imported the CLI
    once (see :mod:`tests.unit.cli.forking_cli`): the same ``main``, much cheaper."""
    directory, module = app_dir
    environment = subprocess_env(directory)
    for name in ("ESMAPPER_URL", "ESMAPPER_APP"):
        environment.pop(name, None)
    environment["PYTHONPATH"] += os.pathsep + str(ROOT)
    full = [["--app", f"{module}:mapper", *args] for args in cases]
    batch = subprocess.run(
        [sys.executable, "-m", "tests.unit.cli.forking_cli"],
        input=json.dumps(full),
        env=environment,
        cwd=directory,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD * len(cases),
        check=False,
    )
    assert batch.returncode == 0, batch.stderr
    found: list[str] = []
    for args, answer in zip(cases, json.loads(batch.stdout), strict=True):
        if answer["code"] is None:
            found.append(f"esmapper {' '.join(args)}: still running after the hang guard")
            continue
        done = subprocess.CompletedProcess(args, answer["code"], answer["stdout"], answer["stderr"])
        found.extend(problems(args, done))
    assert not found, "\n".join(found)


def test_the_tree_has_the_known_commands() -> None:
    """The enumeration works (a broken one would make the test below check nothing)."""
    names = {" ".join(path) for path in LEAVES}
    assert {"migrate", "status", "reindex", "indexes delete", "ids rekey", "server"} <= names


@pytest.mark.parametrize("path", sorted(LEAVES), ids=" ".join)
def test_bad_input_is_one_error_line(app_dir: tuple[Path, str], path: tuple[str, ...]) -> None:
    cases = [[*path, *case] for case in bad_invocations(LEAVES[path])]
    check_forked(app_dir, cases)


def test_bad_global_options_are_one_error_line(app_dir: tuple[Path, str]) -> None:
    check_all(
        app_dir,
        [
            ["--url", "notaurl", "status"],
            ["--url", "127.0.0.1:9200", "status"],
            ["--url", "http://127.0.0.1", "status"],
            ["--url", "ftp://127.0.0.1:9200", "status"],
            ["--app", "nocolon", "status"],
            ["--no-such-option", "status"],
            ["no-such-command"],
        ],
    )
    from_env = run_cli(app_dir, ["status"], ESMAPPER_URL="127.0.0.1:9200")
    assert problems(["status"], from_env) == []
    assert "ESMAPPER_URL" in from_env.stderr and "http://127.0.0.1:9200" in from_env.stderr


@pytest.mark.parametrize("value", ["nan", "inf", "-1"])
def test_lock_wait_is_refused_before_anything_runs(app_dir: tuple[Path, str], value: str) -> None:
    """A usage error (exit code 2), not a failure inside the command."""
    for command in (["migrate"], ["reindex", "Employee"]):
        done = run_cli(app_dir, [*command, "--lock-wait", value])
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith("error: Invalid value for '--lock-wait'")
        assert f"(see: esmapper {command[0]} --help)" in done.stderr


def test_a_url_without_a_scheme_says_what_to_write(app_dir: tuple[Path, str]) -> None:
    done = run_cli(app_dir, ["--url", "127.0.0.1:9200", "status"])
    assert done.returncode == 2
    assert "has no scheme: write http://127.0.0.1:9200" in done.stderr
