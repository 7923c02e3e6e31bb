"""Checking and converting filter values against the type of the field they target.

``coerce_value`` is called for every value of a term, phrase or range bound before a query is
built, so that ``age:abc``, ``flag:maybe`` or ``created_utc:2026-13-45`` fail in the client
with a :class:`~esmapper.errors.QueryValidationError` naming the field and the position,
instead of a ``400`` from the server (or, worse, a silent empty result).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import math
import re
from typing import Any

from esmapper.errors import QueryValidationError
from esmapper.model.catalog import INTEGER_TYPES, NUMERIC_TYPES, FieldInfo

__all__ = ["coerce_value", "date_span", "is_date_value"]

_INTEGER = re.compile(r"[+-]?\d+")
_FLOAT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_INTEGER_BOUNDS = {
    "byte": (-(2**7), 2**7 - 1),
    "short": (-(2**15), 2**15 - 1),
    "integer": (-(2**31), 2**31 - 1),
    "long": (-(2**63), 2**63 - 1),
    "unsigned_long": (0, 2**64 - 1),
}
_BOOLEANS = {"true": True, "false": False}

# strict_date_optional_time: yyyy[-MM[-dd[THH[:mm[:ss[.fraction]]]][zone]]]
_ISO_DATE = re.compile(
    r"""
    (?P<year>\d{4})
    (?:-(?P<month>\d{2})
      (?:-(?P<day>\d{2})
        (?:T(?P<hour>\d{2})
          (?::(?P<minute>\d{2})
            (?::(?P<second>\d{2})(?P<fraction>[.,]\d{1,9})?)?
          )?
          (?P<zone>Z|[+-]\d{2}(?::?\d{2})?)?
        )?
      )?
    )?
    """,
    re.VERBOSE,
)
_EPOCH_MILLIS = re.compile(r"-?\d+")
_DATE_MATH_OPS = re.compile(r"(?:[+-]\d+[yMwdhHms]|/[yMwdhHms])*")


def is_date_value(text: str) -> bool:
    """True when ``text`` is a date Elasticsearch's default date format accepts.

    Accepted: ISO 8601 (``strict_date_optional_time``: ``2026``, ``2026-01``, ``2026-01-31``,
    ``2026-01-31T10:00:00.123Z``, with an offset), epoch milliseconds, and date math
    (``now``, ``now-1d/d``, ``2026-01-01||+1M/M``).
    """
    anchor, ops = text, ""
    if text.startswith("now"):
        anchor, ops = "", text[3:]
    elif "||" in text:
        anchor, ops = text.split("||", 1)
        if not _valid_anchor(anchor):
            return False
        anchor = ""
    if ops and not _DATE_MATH_OPS.fullmatch(ops):
        return False
    return not anchor or _valid_anchor(anchor)


_UNITS = ("year", "month", "day", "hour", "minute", "second")


def date_span(text: str) -> tuple[dt.datetime, dt.datetime] | None:
    """The first and last instant (aware, UTC when ``text`` names no zone, as Elasticsearch
    reads it without ``time_zone``) that the absolute date ``text`` covers: ``2026`` spans the
    year, ``2026-01-31`` the day, ``2026-01-31T10:00:00.5Z`` one instant, epoch milliseconds
    one instant. ``None`` for date math (``now-1d``, ``2026-01-01||+1M``), for anything
    :func:`is_date_value` refuses and for epoch milliseconds beyond year 9999: those are
    not compared. A span reaching past year 9999 (``9999-12-31``) ends at ``datetime.max``."""
    match = _ISO_DATE.fullmatch(text)  # first, as the default format does: 2026 is a year
    if match is None and _EPOCH_MILLIS.fullmatch(text):
        try:
            instant = _EPOCH + dt.timedelta(milliseconds=int(text))
        except OverflowError:  # beyond what a datetime holds: not compared
            return None
        return instant, instant
    if match is None or not _valid_anchor(text):
        return None
    groups = match.groupdict()
    parts = {k: int(groups[k]) for k in _UNITS if groups[k] is not None}
    zone = groups["zone"]
    if zone is None or zone == "Z":
        tz = dt.timezone.utc
    else:
        digits = zone[1:].replace(":", "")
        offset = dt.timedelta(hours=int(digits[:2]), minutes=int(digits[2:] or 0))
        tz = dt.timezone(offset if zone[0] == "+" else -offset)
    first = dt.datetime(
        parts["year"],
        parts.get("month", 1),
        parts.get("day", 1),
        parts.get("hour", 0),
        parts.get("minute", 0),
        parts.get("second", 0),
        tzinfo=tz,
    )
    if groups["fraction"] is not None:
        digits = groups["fraction"][1:]  # after "." or ","; beyond microseconds: dropped
        first += dt.timedelta(microseconds=int((digits + "00000")[:6]))
        return first, first
    unit = next(k for k in reversed(_UNITS) if k in parts)
    try:
        if unit == "year":
            after = first.replace(year=first.year + 1)
        elif unit == "month":
            after = first.replace(year=first.year + first.month // 12, month=first.month % 12 + 1)
        else:
            after = first + dt.timedelta(**{f"{unit}s": 1})
    except (OverflowError, ValueError):  # the span of 9999-12-31 (or 9999) runs to the end
        return first, _LAST
    return first, after - dt.timedelta(microseconds=1)


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
#: the last instant a datetime holds: the end of a span reaching past year 9999
_LAST = dt.datetime.max.replace(tzinfo=dt.timezone.utc)


def _valid_anchor(text: str) -> bool:
    if _EPOCH_MILLIS.fullmatch(text):
        return True
    match = _ISO_DATE.fullmatch(text)
    if match is None:
        return False
    parts = {k: int(v) for k, v in match.groupdict().items() if v is not None and k in _UNITS}
    try:
        dt.datetime(
            parts["year"],
            parts.get("month", 1),
            parts.get("day", 1),
            parts.get("hour", 0),
            parts.get("minute", 0),
            parts.get("second", 0),
        )
    except ValueError:
        return False
    return True


def coerce_value(
    info: FieldInfo,
    value: str,
    *,
    field: str,
    position: int | None,
    expression: str | None,
) -> Any:
    """The JSON value to send for ``value`` on the field ``info``; raise if it does not fit.

    Integers become ``int`` (checked against the type's bounds), other numbers finite
    ``float``, booleans ``bool`` (``true``/``false``, any case); dates are checked (see
    :func:`is_date_value`) and kept as strings for the server to parse, ip addresses are
    checked (CIDR allowed); any other type keeps the string. ``field`` is the name as written,
    for the message.
    """
    ftype = info.type

    def fail(expected: str) -> QueryValidationError:
        return QueryValidationError(
            f"Invalid value {value!r} for field {field!r} ({ftype}): expected {expected}",
            field=field,
            position=position,
            expression=expression,
        )

    if ftype in INTEGER_TYPES:
        if not _INTEGER.fullmatch(value):
            raise fail("an integer")
        number = int(value)
        low, high = _INTEGER_BOUNDS[ftype]
        if not low <= number <= high:
            raise fail(f"an integer between {low} and {high}")
        return number
    if ftype in NUMERIC_TYPES:
        if not _FLOAT.fullmatch(value):
            raise fail("a number")
        result = float(value)
        if not math.isfinite(result):
            raise fail("a finite number")
        return result
    if ftype == "boolean":
        flag = _BOOLEANS.get(value.lower())
        if flag is None:
            raise fail("true or false")
        return flag
    if info.is_date:
        if not is_date_value(value):
            raise fail(
                "a date (ISO 8601 such as 2026-01-31 or 2026-01-31T10:00:00Z, epoch"
                " milliseconds, or date math such as now-1d/d)"
            )
        return value
    if ftype == "ip":
        try:
            if "/" in value:
                ipaddress.ip_network(value, strict=False)
            else:
                ipaddress.ip_address(value)
        except ValueError:
            raise fail("an IP address or CIDR block") from None
    return value
