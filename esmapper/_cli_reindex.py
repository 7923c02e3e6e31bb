"""Helpers of the ``esmapper`` commands that reindex (``migrate``, ``reindex``): the
progress bars and the throttle options."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from datetime import timedelta
from typing import Any

import click

from esmapper._cli_types import Rate, Seconds
from esmapper.indexes._reindex_run import ReindexProgress

__all__ = ["ReindexBars", "throttle", "throttle_options"]


class ReindexBars:
    """The progress bars of reindexes, one per alias in turn: ``bars(progress)`` for each
    :class:`~esmapper.indexes.ReindexProgress`, ``bars.close()`` before printing a line."""

    def __init__(self, stack: ExitStack, label: Callable[[str], str]) -> None:
        self.stack, self.label = stack, label
        self.bar: Any = None
        self.alias: str | None = None
        self.closer: ExitStack | None = None

    def __call__(self, p: ReindexProgress) -> None:
        alias = p.alias
        if self.bar is not None and alias != self.alias:
            self.close()
        if self.bar is None:
            self.alias = alias
            self.closer = self.stack.enter_context(ExitStack())
            bar = click.progressbar(length=100, label=self.label(alias))
            self.bar = self.closer.enter_context(bar)
        bar = self.bar
        if p.percent > bar.pos:
            bar.update(min(p.percent, 100) - bar.pos)

    def close(self) -> None:
        if self.closer is not None:
            self.closer.close()
        self.bar = self.closer = self.alias = None


def throttle_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--batch-size``, ``--requests-per-second`` and ``--stall-timeout`` (reindex passes)."""
    options = [
        click.option("--batch-size", type=click.IntRange(1, 10_000), default=None, metavar="N",
                     help="Documents per reindex batch (source.size, at most 10000; "
                          "server default 1000)."),
        click.option("--requests-per-second", type=Rate(),
                     default=None, metavar="N",
                     help="Throttle reindex passes to N requests per second (default: none)."),
        click.option("--stall-timeout", type=Seconds(low_open=True),
                     default=None, metavar="SECONDS",
                     help="Fail a reindex pass that makes no progress this long "
                          "(default: max(600, 3 * batch / rps)).")
    ]  # fmt: skip
    for option in reversed(options):
        command = option(command)
    return command


def throttle(batch_size: int | None, rps: float | None, stall: float | None) -> dict[str, Any]:
    return {
        "batch_size": batch_size,
        "requests_per_second": rps,
        "stall_timeout": None if stall is None else timedelta(seconds=stall),
    }
