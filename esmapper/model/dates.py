"""Dates as ``_source`` stores them: ISO-8601 in UTC, written and read back."""

from __future__ import annotations

import datetime as _dt
from typing import Any

__all__ = ["UTC", "format_datetime", "parse_datetime"]

UTC = _dt.timezone.utc
_fromisoformat = _dt.datetime.fromisoformat

try:  # orjson formats datetimes about 3x faster than isoformat() + replace()
    from orjson import OPT_UTC_Z as _OPT_UTC_Z
    from orjson import dumps as _orjson_dumps
except ImportError:  # pragma: no cover - orjson is optional
    _orjson_dumps = None  # type: ignore[assignment]
    _OPT_UTC_Z = 0
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=UTC)


def format_datetime(value: _dt.datetime) -> str:
    """ISO-8601 in UTC, as stored in ``_source`` (``2026-12-02T16:55:43.123456Z``)."""
    if value.tzinfo is not UTC:
        value = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    if _orjson_dumps is not None:
        return _orjson_dumps(value, option=_OPT_UTC_Z)[1:-1].decode()
    return value.isoformat().replace("+00:00", "Z")


def parse_datetime(value: Any) -> _dt.datetime:
    """An aware UTC datetime from an ISO string, epoch milliseconds, a date or a datetime."""
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value if value.tzinfo is UTC else value.astimezone(UTC)
    if isinstance(value, str):
        try:
            parsed = _fromisoformat(value)  # Python 3.11+ reads a trailing Z as UTC
        except ValueError:
            if not value.endswith(("Z", "z")):
                raise
            parsed = _fromisoformat(value[:-1] + "+00:00")
        tz = parsed.tzinfo
        if tz is UTC:
            return parsed
        return parsed.replace(tzinfo=UTC) if tz is None else parsed.astimezone(UTC)
    if isinstance(value, _dt.date):
        return _dt.datetime(value.year, value.month, value.day, tzinfo=UTC)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _EPOCH + _dt.timedelta(milliseconds=value)
    raise TypeError(f"not a date: {value!r}")
