"""Human durations for jobs and the CLI: ``"30d"``, ``"1h30m"``, ``"90s"``, ``"2w"``.

One rule, used by every job option and CLI flag that takes a duration (``--max-age``,
``--interval``, ``--timeout``): a duration is one or more ``<number><unit>`` parts, units
``ms s m h d w`` (lower case), summed; a bare number is seconds. Anything else raises
``ValueError`` naming what was expected. (The point-in-time keep-alive of searches is an
Elasticsearch duration string with its own rule, :func:`esmapper._pit.keep_alive`.)
"""

from __future__ import annotations

import datetime as _dt
import re
from typing import Final

__all__ = ["format_duration", "parse_duration"]

_UNITS: Final = {
    "ms": _dt.timedelta(milliseconds=1),
    "s": _dt.timedelta(seconds=1),
    "m": _dt.timedelta(minutes=1),
    "h": _dt.timedelta(hours=1),
    "d": _dt.timedelta(days=1),
    "w": _dt.timedelta(weeks=1),
}
_PART: Final = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")
_WHOLE: Final = re.compile(r"(?:\d+(?:\.\d+)?(?:ms|s|m|h|d|w))+")
_NUMBER: Final = re.compile(r"\d+(?:\.\d+)?")


def parse_duration(
    value: str | _dt.timedelta | float, *, what: str = "duration", positive: bool = False
) -> _dt.timedelta:
    """``value`` as a ``timedelta``: a ``timedelta`` as is, a number as seconds, a string
    of ``<number><unit>`` parts (``"30d"``, ``"1h30m"``, ``"1.5h"``, ``"500ms"``).

    Raises ``ValueError`` (``what`` names the option in the message) for anything else, a
    negative duration, or with ``positive`` a zero one."""
    if isinstance(value, _dt.timedelta):
        result = value
    elif isinstance(value, bool):
        raise ValueError(f"{what} must be a duration like 30d, 1h or 90s, not {value!r}")
    elif isinstance(value, int | float):
        result = _dt.timedelta(seconds=value)
    elif isinstance(value, str):
        text = value.strip()
        if _NUMBER.fullmatch(text):
            result = _dt.timedelta(seconds=float(text))
        elif _WHOLE.fullmatch(text):
            result = sum(
                (float(n) * _UNITS[unit] for n, unit in _PART.findall(text)), _dt.timedelta()
            )
        else:
            raise ValueError(
                f"{what} {value!r} is not a duration: expected a number and a unit "
                "(ms, s, m, h, d, w), e.g. 30d, 1h30m, 90s"
            )
    else:
        raise ValueError(f"{what} must be a duration like 30d, 1h or 90s, not {value!r}")
    if result < _dt.timedelta(0):
        raise ValueError(f"{what} {value!r} is negative")
    if positive and result == _dt.timedelta(0):
        raise ValueError(f"{what} {value!r} must be longer than zero")
    return result


def format_duration(value: _dt.timedelta) -> str:
    """``value`` in the units :func:`parse_duration` reads, days at most: ``"30d"``,
    ``"1d2h"``, ``"90s"`` -> ``"1m30s"``, ``"250ms"``; zero is ``"0s"``."""
    millis = round(value.total_seconds() * 1000)
    if millis == 0:
        return "0s"
    parts: list[str] = []
    for unit in ("d", "h", "m", "s", "ms"):
        size = round(_UNITS[unit].total_seconds() * 1000)
        count, millis = divmod(millis, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts)
