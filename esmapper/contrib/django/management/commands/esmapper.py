"""``manage.py esmapper <command> ...``: the ``esmapper`` command line (``migrate``,
``status``, ``reindex``, ... and their options, as ``esmapper --help`` lists them) with the
mapper built from ``settings.ESMAPPER`` (``--app`` is set for you; ``--url`` still points
it at another cluster)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import click
from django.core.management.base import (
    BaseCommand,
    CommandError,
    CommandParser,
    handle_default_options,
)

from esmapper.cli import main

__all__ = ["Command"]

#: What the command passes as ``--app``: the process's mapper, built from the settings.
APP = "esmapper.contrib.django._mapper:get_mapper"


class Command(BaseCommand):
    help = "Run an esmapper command (migrate, status, ...) with the mapper of settings.ESMAPPER."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("arguments", nargs="*", help="the esmapper command and its options")

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> CommandParser:
        """Django's parser (its help, ``call_command``'s keyword options), but the
        positional arguments of ``call_command("esmapper", ...)`` all go to the CLI
        untouched: Django's parser would take ``--url`` or ``--help`` as its own."""
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        django_parse = parser.parse_args

        def parse_args(args: Any = None, namespace: Any = None) -> argparse.Namespace:
            parsed: argparse.Namespace = django_parse([], namespace)
            parsed.arguments = [str(arg) for arg in args or ()]
            return parsed

        parser.parse_args = parse_args
        return parser

    def run_from_argv(self, argv: list[str]) -> None:
        """``manage.py esmapper ...``: everything after ``esmapper`` goes to the click CLI
        as is (its ``--help``, its one-line errors and exit codes), but Django's own
        ``--settings`` and ``--pythonpath`` (``django-admin esmapper status
        --settings=mysite.settings``), applied here as every Django command does."""
        django_options = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
        django_options.add_argument("--settings")
        django_options.add_argument("--pythonpath")
        options, arguments = django_options.parse_known_args(argv[2:])
        handle_default_options(options)
        prog = f"{os.path.basename(argv[0])} {argv[1]}"
        main.main(args=["--app", APP, *arguments], prog_name=prog)

    def handle(self, *args: Any, **options: Any) -> None:
        """``call_command("esmapper", "status")``: the CLI's errors become
        ``CommandError`` (with the CLI's exit code)."""
        arguments = [*options.get("arguments", ()), *args]
        try:
            main.main(args=["--app", APP, *arguments], prog_name="esmapper", standalone_mode=False)
        except click.exceptions.Exit as done:
            if done.exit_code:
                raise CommandError(f"exit {done.exit_code}", returncode=done.exit_code) from None
        except click.ClickException as exc:
            raise CommandError(exc.format_message(), returncode=exc.exit_code) from None
        finally:
            sys.stdout.flush()
