"""JSON encoding for request bodies: orjson when installed, else the standard library.

:func:`dumps` returns compact UTF-8 ``bytes``; :func:`loads` accepts ``bytes`` or ``str``.
Both backends write the same text for the types documents hold: ``datetime``/``date``/
``time`` as ISO 8601 (``2026-01-02T03:04:05.123456+00:00``), ``UUID`` as its string, an
``Enum`` as its value, and any ``Mapping`` as an object. Non-ASCII text is written as UTF-8,
not as ``\\u`` escapes. Anything else raises ``TypeError``. Differences that remain: orjson
writes ``NaN``/``Infinity`` as ``null`` where the fallback raises ``ValueError``, and orjson
also serializes dataclasses and numpy arrays natively.
"""

from __future__ import annotations

import datetime as _dt
import enum
import functools
import json
import uuid
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["BACKEND", "dumps", "loads"]


def _default(obj: Any) -> Any:
    """Convert the types neither backend handles on its own (``Mapping`` subclasses)."""
    if isinstance(obj, Mapping):
        return dict(obj)
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


def _std_default(obj: Any) -> Any:
    """The stdlib fallback's ``default``: what orjson serializes natively, plus Mapping."""
    if isinstance(obj, (_dt.datetime, _dt.date, _dt.time)):
        return obj.isoformat()
    if isinstance(obj, uuid.UUID):
        return str(obj)
    if isinstance(obj, enum.Enum):
        return obj.value
    return _default(obj)


dumps: Callable[[Any], bytes]
loads: Callable[[bytes | str], Any]

try:
    import orjson
except ImportError:  # pragma: no cover - exercised only without orjson
    BACKEND = "json"
    _encoder = json.JSONEncoder(
        separators=(",", ":"), ensure_ascii=False, default=_std_default, allow_nan=False
    )

    def dumps(obj: Any) -> bytes:
        """Serialize ``obj`` to compact JSON ``bytes``."""
        return _encoder.encode(obj).encode("utf-8")

    def loads(b: bytes | str) -> Any:
        """Parse JSON from ``bytes`` or ``str``."""
        return json.loads(b)

else:
    BACKEND = "orjson"
    # a partial, not a wrapper function: no Python frame per call (hot in the bulk writer)
    dumps = functools.partial(orjson.dumps, default=_default)

    loads = orjson.loads
