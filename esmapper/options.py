"""Per-call options (API.md §5), shared by repository and session calls."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any, Final, Literal

import attrs

from esmapper._limits import check_retries, check_timeout

__all__ = ["TRACE", "Options", "check_keywords", "log_level", "refresh_param"]

Consistency = Literal["eventual", "immediate", "wait"]
SoftDeleteMode = Literal["active", "deleted", "all"]

_CONSISTENCY = ("eventual", "immediate", "wait")
_SOFT_DELETES = ("active", "deleted", "all")

#: The level below DEBUG that the reference library's default query log level maps to
#: (Python has no TRACE; FEATURES QY-30). Named "TRACE" in log output.
TRACE: Final = 5
if logging.getLevelName(TRACE) == f"Level {TRACE}":
    logging.addLevelName(TRACE, "TRACE")


def log_level(value: int | str | None) -> int | None:
    """A logging level from an int or a level name (``"debug"``, ``"INFO"``, ``"trace"``);
    ``None`` stays ``None``. Anything else raises ``ValueError``."""
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
        return value
    if isinstance(value, str):
        name = value.strip().upper()
        level = TRACE if name == "TRACE" else logging.getLevelName(name)
        if isinstance(level, int):
            return level
    raise ValueError(
        f"query_log_level={value!r} is not a logging level (an int, or a name such as "
        "'debug', 'info', 'trace')"
    )


def _one_of(allowed: tuple[str, ...]) -> Any:
    def check(instance: Any, attribute: attrs.Attribute, value: Any) -> None:  # type: ignore[type-arg]
        if value not in allowed:
            raise ValueError(
                f"{attribute.name}={value!r} is not one of {', '.join(map(repr, allowed))}"
            )

    return check


def _tenant(instance: Any, attribute: attrs.Attribute, value: Any) -> None:  # type: ignore[type-arg]
    if value is not None and (not isinstance(value, str) or not value):
        raise ValueError(f"tenant={value!r} must be a non-empty string (a tenant key)")


@attrs.frozen(slots=True)
class Options:
    """Options of one operation.

    ``consistency``: ``eventual`` (no refresh), ``immediate`` (``refresh=true``), ``wait``
    (``refresh=wait_for``; by-query APIs take only a bool, so ``wait`` means ``true`` there).
    ``soft_deletes``: which documents reads and by-query writes see. ``cache``: ``True`` /
    ``False`` / a cache key (``None``: the model's default). ``notifications``: publish
    ``entity_changed``. ``validate``: run ``Document.validate`` on writes of documents, and
    check a ``PartialPatch`` against the model (unknown fields, types); type checks of
    whole documents and the refusal of ``NaN`` always run. ``version_check``: send the
    version precondition on saves of ``Versioned`` models. ``timeout`` (seconds or a
    ``timedelta``: the client-side timeout of each request the call sends) and ``retries``
    (429/503 retries of bulk items, conflict rounds of ``patch_all``/``remove_all``): the
    call's limits, see :mod:`esmapper._limits`. ``tenant``: the tenant whose custom
    fields a search's filter, sort and aggregations may name, and whose documents it keeps
    to (API.md §11; :mod:`esmapper.custom_fields.search`). ``query_log_level`` (an int or a
    level name, ``"trace"`` included): the level at which the call's search requests are
    logged with their target and body on ``esmapper.query`` (FEATURES QY-30, TS-2;
    ``None``: DEBUG).
    """

    consistency: str = attrs.field(default="eventual", validator=_one_of(_CONSISTENCY))
    soft_deletes: str = attrs.field(default="active", validator=_one_of(_SOFT_DELETES))
    cache: bool | str | None = None
    notifications: bool = True
    validate: bool = True
    version_check: bool = True
    timeout: float | None = attrs.field(default=None, converter=check_timeout)
    retries: int | None = attrs.field(default=None, converter=check_retries)
    tenant: str | None = attrs.field(default=None, validator=_tenant)
    query_log_level: int | None = attrs.field(default=None, converter=log_level)

    def merge(self, **overrides: Any) -> Options:
        """A copy with ``overrides`` applied; an unknown option raises ``TypeError``."""
        if not overrides:
            return self
        unknown = set(overrides) - set(attrs.fields_dict(Options))
        if unknown:
            raise TypeError(
                f"unknown option(s): {', '.join(sorted(unknown))}; known: "
                f"{', '.join(attrs.fields_dict(Options))}"
            )
        return attrs.evolve(self, **overrides)


def check_keywords(call: str, given: Mapping[str, Any], own: Iterable[str] = ()) -> None:
    """Raise ``TypeError`` when ``given`` holds a keyword that is neither one of the call's
    ``own`` nor an option; the message lists both, so a typo shows what was meant."""
    known = set(own) | set(attrs.fields_dict(Options))
    unknown = sorted(set(given) - known)
    if unknown:
        listed = f"{', '.join(sorted(own))}; and the options " if own else "the options "
        raise TypeError(
            f"{call}() got unknown keyword(s): {', '.join(unknown)}; it takes {listed}"
            f"{', '.join(attrs.fields_dict(Options))}"
        )


def refresh_param(consistency: str, *, by_query: bool = False) -> bool | Literal["wait_for"] | None:
    """The ``refresh`` parameter for ``consistency`` (``None`` means: don't send one)."""
    if consistency == "immediate":
        return True
    if consistency == "wait":
        return True if by_query else "wait_for"
    return None
