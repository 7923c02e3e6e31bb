"""Parameter types and message helpers of the ``esmapper`` command line.

Every value a user types is checked by click before a command runs, so a bad one is a
usage error (one ``error:`` line, exit code 2) instead of an exception inside the command:
:class:`ElasticsearchUrl` (what elasticsearch-py accepts: a scheme, a host and a port),
:class:`Seconds` (a finite duration within bounds) and :class:`Rate`. :func:`cli_spelling`
turns the library's keyword spellings in messages (``retry_failed=True``) into the
command line's (``--retry-failed``).
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from typing import TYPE_CHECKING, Any

import click
from elastic_transport.client_utils import url_to_node_config

from esmapper.jobs.durations import parse_duration

__all__ = [
    "DURATION",
    "POSITIVE_DURATION",
    "Duration",
    "ElasticsearchUrl",
    "Rate",
    "Seconds",
    "cli_spelling",
]

MAX_DAYS = 366
MAX_SECONDS = MAX_DAYS * 24 * 3600.0
"""The longest duration an option takes (a year): longer ones are typing mistakes, and a
``timedelta`` or a deadline computed from them could overflow."""

if TYPE_CHECKING:  # generic in recent click only
    _UrlParam = click.ParamType[str]
    _FloatParam = click.ParamType[float]
else:
    _UrlParam = _FloatParam = click.ParamType

_HOST_PORT = re.compile(r"[\w.\-]+:\d+(/.*)?|\[[0-9a-fA-F:]+\]:\d+(/.*)?|localhost")


class ElasticsearchUrl(_UrlParam):
    """An Elasticsearch address as elasticsearch-py takes it: ``http(s)://host:port``.

    A missing scheme is refused, not guessed: ``http://`` would be wrong for a cluster
    with TLS, and elasticsearch-py itself requires one."""

    name = "url"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        text = str(value).strip()
        example = "http://127.0.0.1:9200"
        if "://" not in text:
            if _HOST_PORT.fullmatch(text):
                self.fail(
                    f"{text!r} has no scheme: write http://{text} (https:// for a cluster with "
                    "TLS); elasticsearch-py needs it",
                    param,
                    ctx,
                )
            self.fail(f"{text!r} is not a URL; expected one like {example}", param, ctx)
        scheme = text.split("://", 1)[0].lower()
        if scheme not in ("http", "https"):
            self.fail(f"{text!r}: the scheme must be http or https, not {scheme!r}", param, ctx)
        try:
            url_to_node_config(text)
        except ValueError:
            self.fail(
                f"{text!r} is not a complete Elasticsearch URL: it needs a host and a port, "
                f"like {example}",
                param,
                ctx,
            )
        return text


class _Number(_FloatParam):
    """A finite float in ``[low, high]`` (``low`` excluded when ``low_open``), described to
    the user as ``expected``."""

    expected = "a number"

    def __init__(self, low: float, high: float, *, low_open: bool = False) -> None:
        self.low, self.high, self.low_open = low, high, low_open

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, int | float) and not isinstance(value, bool):
            number = float(value)
        else:
            try:
                number = float(str(value).strip())
            except ValueError:
                number = math.nan
        too_low = number <= self.low if self.low_open else number < self.low
        if not math.isfinite(number) or too_low or number > self.high:
            self.fail(f"{str(value)!r} is not {self.expected}", param, ctx)
        return number


class Seconds(_Number):
    """A duration in seconds: finite, at least ``low`` (default 0; above it when
    ``low_open``), at most :data:`MAX_SECONDS`."""

    name = "seconds"

    def __init__(self, low: float = 0.0, *, low_open: bool = False) -> None:
        super().__init__(low, MAX_SECONDS, low_open=low_open)
        bound = "more than" if low_open else "at least"
        self.expected = f"a number of seconds ({bound} {low:g}, at most {MAX_DAYS} days)"


class Rate(_Number):
    """A rate per second: finite and positive."""

    name = "rate"
    expected = "a number of requests per second (more than 0)"

    def __init__(self) -> None:
        super().__init__(0.0, 1e9, low_open=True)


_SPELLINGS = {
    "retry_failed=True": "--retry-failed",
    "dry_run=True": "--dry-run",
    "reindex=False": "--no-reindex",
    "lock_wait=": "--lock-wait ",
    "lock_ttl=": "--lock-ttl ",
    "batch_size=": "--batch-size ",
    "requests_per_second=": "--requests-per-second ",
    "stall_timeout=": "--stall-timeout ",
}
_SPELLING = re.compile("|".join(re.escape(k) for k in _SPELLINGS))


def cli_spelling(message: str) -> str:
    """``message`` with the library's keyword arguments spelled as the CLI's options
    (``migrate with retry_failed=True`` -> ``migrate with --retry-failed``)."""
    return _SPELLING.sub(lambda m: _SPELLINGS[m.group(0)], message)


class Duration(click.ParamType):  # type: ignore[type-arg]
    """``30d``, ``1h30m``, ``90s`` (:func:`esmapper.jobs.parse_duration`)."""

    name = "duration"

    def __init__(self, *, positive: bool = False) -> None:
        self.positive = positive

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, _dt.timedelta):
            return value
        what = f"--{param.name.replace('_', '-')}" if param is not None and param.name else "value"
        try:
            return parse_duration(value, what=what, positive=self.positive)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


DURATION = Duration()
POSITIVE_DURATION = Duration(positive=True)
