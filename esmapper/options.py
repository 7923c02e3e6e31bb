"""Per-call options, shared by repository and session calls."""

from __future__ import annotations

import datetime as _dt
import functools
import inspect
import logging
import sys
import warnings
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, Final, Literal, TypeAlias, TypeVar, get_args

import attrs

__all__ = [
    "OPTION_NAMES",
    "TRACE",
    "Consistency",
    "LogLevel",
    "Options",
    "Snapshot",
    "SoftDeleteMode",
    "Timeout",
    "check_expires_in",
    "check_keywords",
    "check_retries",
    "check_timeout",
    "given",
    "keywords_checked",
    "keywords_of",
    "keywords_taken",
    "log_level",
    "refresh_param",
    "refuse_keywords",
    "split",
]

F = TypeVar("F", bound=Callable[..., Any])


def _duration(name: str, value: Any, example: str) -> float | None:
    """``value`` as seconds (``None`` stays ``None``); anything but a positive, finite
    number of seconds or ``timedelta`` raises ``ValueError`` naming option ``name``."""
    if value is None:
        return None
    if isinstance(value, _dt.timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    else:
        raise ValueError(
            f"{name}={value!r} must be a number of seconds or a timedelta (e.g. {example})"
        )
    if not seconds > 0 or seconds == float("inf"):
        raise ValueError(f"{name}={value!r} must be a positive, finite duration")
    return seconds


def check_timeout(value: Any) -> float | None:
    """``value`` as seconds (``None`` stays ``None``); anything but a positive number of
    seconds or a positive ``timedelta`` raises ``ValueError`` naming ``timeout``."""
    return _duration("timeout", value, "timeout=5")


def check_retries(value: Any) -> int | None:
    """``value`` as a retry count (``None`` stays ``None``); anything but an int >= 0
    raises ``ValueError`` naming ``retries``."""
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"retries={value!r} must be an integer >= 0")
    return value


#: How a write is made visible to searches (see :class:`Options`).
Consistency: TypeAlias = Literal["eventual", "immediate", "wait"]
#: Which documents of a soft-deleting model a read or by-query write sees.
SoftDeleteMode: TypeAlias = Literal["active", "deleted", "all"]
#: A per-call timeout: seconds, or a ``timedelta``.
Timeout: TypeAlias = float | _dt.timedelta
#: A logging level: an int, or a level name (``"debug"``, ``"trace"``...).
LogLevel: TypeAlias = int | str
#: A search's ``snapshot=``: ``True`` (a point in time kept alive 5 minutes between page
#: requests), a keep-alive (``"90s"``, ``"10m"``, a ``timedelta``), ``False``/``None``: none.
Snapshot: TypeAlias = bool | str | _dt.timedelta | None

_CONSISTENCY = ("eventual", "immediate", "wait")
_SOFT_DELETES = ("active", "deleted", "all")

#: The level below DEBUG that the reference library's default query log level maps to
#: (Python has no TRACE). Named "TRACE" in log output.
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


def _cache(instance: Any, attribute: attrs.Attribute, value: Any) -> None:  # type: ignore[type-arg]
    if value is not None and not isinstance(value, bool | str):  # str: deprecated cache_key
        raise ValueError(
            f"cache={value!r} must be True, False or None (the model's default); a key "
            "for a search's cached response is cache_key="
        )


def _cache_key(instance: Any, attribute: attrs.Attribute, value: Any) -> None:  # type: ignore[type-arg]
    if value is not None and (not isinstance(value, str) or not value):
        raise ValueError(f"cache_key={value!r} must be a non-empty string")


def check_expires_in(value: Any) -> float | None:
    """``expires_in=`` as seconds (``None`` stays ``None``): a positive, finite number of
    seconds or ``timedelta``; anything else raises ``ValueError`` naming ``expires_in``."""
    return _duration("expires_in", value, "expires_in=timedelta(minutes=30)")


def _expires_at(instance: Any, attribute: attrs.Attribute, value: Any) -> None:  # type: ignore[type-arg]
    if value is None:
        return
    if not isinstance(value, _dt.datetime):
        raise ValueError(
            f"expires_at={value!r} must be a timezone-aware datetime (e.g. "
            "datetime.now(timezone.utc) + timedelta(hours=1))"
        )
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(
            f"expires_at={value!r} is a naive datetime: give its timezone "
            "(e.g. tzinfo=timezone.utc), an expiry must name an instant"
        )


def _read_cache(instance: Any, attribute: attrs.Attribute, value: Any) -> None:  # type: ignore[type-arg]
    if value is not None and not isinstance(value, bool):
        raise ValueError(
            f"read_cache={value!r} must be True (serve a cached entry if there is one), "
            "False (never serve one: read from Elasticsearch) or None (as cache= says)"
        )


def _caller_level() -> int:
    """The ``stacklevel`` of the first frame outside esmapper (and attrs' generated code),
    so a warning points at the caller's line."""
    frame = sys._getframe(1)
    level = 1
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if not (module == "esmapper" or module.startswith(("esmapper.", "attr"))) and (
            not frame.f_code.co_filename.startswith("<attrs generated")
        ):
            return level
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level


@attrs.frozen(slots=True, cache_hash=True)
class Options:
    """Options of one operation.

    ``consistency``: ``eventual`` (no refresh), ``immediate`` (``refresh=true``), ``wait``
    (``refresh=wait_for``; by-query APIs take only a bool, so ``wait`` means ``true`` there).
    ``soft_deletes``: which documents reads and by-query writes see (``"active"``,
    ``"deleted"``, ``"all"``; on a model without ``SoftDeletes`` every document is active,
    so ``"deleted"`` given to its call is refused with a QueryValidationError, and a
    session's mode applies to the models with soft deletes only). ``cache``: whether
    by-id reads use the document cache (``None``: the model's default, ``class Index:
    cache = ...``). ``cache_key``: a search's response is cached under this key (and
    served from it while it lives; ``repo.invalidate_cache(key)`` drops it).
    ``cache="key"`` (a string) is deprecated: it means ``cache_key="key"`` and warns.
    ``expires_in`` (seconds or a ``timedelta``) or ``expires_at`` (an aware ``datetime``),
    not both: how long what the call caches lives (by-id entries, a ``cache_key`` page);
    either asks for caching (as ``cache=True``) unless ``cache=False``; an ``expires_at``
    already past caches nothing (it is not refused: options are checked once per
    spelling, not against the clock). ``read_cache``: whether a by-id read serves an entry
    the cache holds (``None``: when the read is cached); ``False`` reads from
    Elasticsearch and, when the read is cached, replaces the entry; ``True`` without
    caching serves an entry that is there but stores nothing.
    ``notifications``: publish
    ``entity_changed``. ``validate``: run ``Document.validate`` on writes of documents, and
    check a ``PartialPatch`` against the model (unknown fields, types); type checks of
    whole documents and the refusal of ``NaN`` always run. ``version_check``: send the
    version precondition on saves of ``Versioned`` models. ``timeout`` (seconds or a
    ``timedelta``: the client-side timeout of each request the call sends) and ``retries``
    (429/503 retries of bulk items, conflict rounds of ``patch_all``/``remove_all``): the
    call's limits, see :mod:`esmapper._limits`. ``tenant``: the tenant whose custom
    fields a search's filter, sort and aggregations may name, and whose documents it keeps
    to (:mod:`esmapper.custom_fields.search`). ``query_log_level`` (an int or a
    level name, ``"trace"`` included): the level at which the call's search requests are
    logged with their target and body on ``esmapper.query`` (``None``: DEBUG).
    ``originals``: a save of a document that was not loaded first reads the stored one (one
    real-time ``_mget`` per batch), so that the "-ing"/"-ed" receivers get its
    ``original`` and a soft delete is published as ``REMOVED`` (``None``: the model's
    ``class Index: originals``, default off).

    Repository and session calls take each option as a keyword argument whose default,
    ``None``, means "the repository's (or session's) default".
    """

    consistency: Consistency = attrs.field(default="eventual", validator=_one_of(_CONSISTENCY))
    soft_deletes: SoftDeleteMode = attrs.field(default="active", validator=_one_of(_SOFT_DELETES))
    cache: bool | None = attrs.field(default=None, validator=_cache)
    cache_key: str | None = attrs.field(default=None, validator=_cache_key)
    notifications: bool = True
    validate: bool = True
    version_check: bool = True
    timeout: float | None = attrs.field(default=None, converter=check_timeout)
    retries: int | None = attrs.field(default=None, converter=check_retries)
    tenant: str | None = attrs.field(default=None, validator=_tenant)
    query_log_level: int | None = attrs.field(default=None, converter=log_level)
    originals: bool | None = None
    expires_in: float | None = attrs.field(default=None, converter=check_expires_in)
    expires_at: _dt.datetime | None = attrs.field(default=None, validator=_expires_at)
    read_cache: bool | None = attrs.field(default=None, validator=_read_cache)

    def merge(self, **overrides: Any) -> Options:
        """A copy with ``overrides`` applied; an unknown option raises ``TypeError``."""
        if not overrides:
            return self
        # a spelling merged before: the values and their types (True is not 1); the base
        # by identity (an entry holds it: its id cannot be reused meanwhile)
        key: tuple[Any, ...]
        if len(overrides) == 1:  # the usual spelling: one option, no tuples to build
            [(name, value)] = overrides.items()
            key = (id(self), name, value, type(value))
        else:
            key = (id(self), tuple(overrides.items()), tuple(map(type, overrides.values())))
        hashable = True
        try:
            entry = _MERGED.get(key)
        except TypeError:  # an unhashable value: checked (and refused) by evolve
            entry, hashable = None, False
        if entry is not None and entry[0] is self:
            return entry[1]  # (only valid overrides were ever stored)
        if not _KNOWN.issuperset(overrides):
            unknown = set(overrides) - _KNOWN
            raise TypeError(
                f"unknown option(s): {', '.join(sorted(unknown))}; known: {', '.join(OPTION_NAMES)}"
            )
        merged = attrs.evolve(self, **overrides)
        # the deprecated string cache= warns on every call: never stored
        if hashable and not isinstance(overrides.get("cache"), str):
            if len(_MERGED) >= _MERGED_MAX:
                _MERGED.clear()
            _MERGED[key] = (self, merged)
        return merged

    def __attrs_post_init__(self) -> None:
        if self.expires_in is not None and self.expires_at is not None:
            raise ValueError(
                f"expires_in={self.expires_in!r} and expires_at={self.expires_at!r}: give "
                "one expiry, not both"
            )
        cache: object = self.cache
        if isinstance(cache, str):  # the 0.x spelling of a cache key
            warnings.warn(
                f"cache={cache!r} (a cache key) is deprecated; pass cache_key={cache!r}",
                DeprecationWarning,
                stacklevel=_caller_level(),
            )
            object.__setattr__(self, "cache", None)
            if self.cache_key is None:
                object.__setattr__(self, "cache_key", cache)


#: Merged options by (base, overrides): a call's options are built once per spelling, not
#: per call (``Options`` is immutable; the validation ran when the entry was made).
_MERGED: dict[tuple[Any, ...], tuple[Options, Options]] = {}
_MERGED_MAX: Final = 1024

#: The option keywords every repository and session call takes, in declaration order.
OPTION_NAMES: Final = tuple(attrs.fields_dict(Options))
_KNOWN: Final = frozenset(OPTION_NAMES)


def given(keywords: Mapping[str, Any]) -> dict[str, Any]:
    """The keywords a call was given (its ``**options``) that are not ``None`` (``None`` is
    every keyword's default: the repository's or the session's value)."""
    if not keywords:  # the usual call: no keyword given
        return {}
    return {name: value for name, value in keywords.items() if value is not None}


def split(keywords: dict[str, Any], names: Collection[str]) -> dict[str, Any]:
    """Take the entries named in ``names`` out of ``keywords`` and return them (a search's
    own keywords, leaving the options)."""
    return {name: keywords.pop(name) for name in list(keywords) if name in names}


def keywords_of(annotation: Any, scope: dict[str, Any]) -> frozenset[str]:
    """The keys of the ``TypedDict`` in ``annotation`` (``Unpack[X]``, or its text under
    ``from __future__ import annotations``, resolved in ``scope``); empty when it names
    none (a plain ``**kwargs: Any``)."""
    if isinstance(annotation, str):
        text = annotation.strip()
        if not text.startswith("Unpack["):
            return frozenset()
        annotation = eval(text[len("Unpack[") : -1], scope)
    else:
        args = get_args(annotation)
        annotation = args[0] if args else annotation
    keys = getattr(annotation, "__required_keys__", frozenset()) | getattr(
        annotation, "__optional_keys__", frozenset()
    )
    return frozenset(keys)


def check_keywords(call: str, given: Mapping[str, Any], own: Iterable[str] = ()) -> None:
    """Raise ``TypeError`` when ``given`` holds a keyword that is neither one of the call's
    ``own`` nor an option; the message lists both, so a typo shows what was meant."""
    known = set(own) | set(OPTION_NAMES)
    unknown = sorted(set(given) - known)
    if unknown:
        listed = f"{', '.join(sorted(own))}; and the options " if own else "the options "
        raise TypeError(
            f"{call}() got unknown keyword(s): {', '.join(unknown)}; it takes {listed}"
            f"{', '.join(OPTION_NAMES)}"
        )


def refuse_keywords(call: str, given: Mapping[str, Any], accepted: Iterable[str]) -> None:
    """Raise the ``TypeError`` of a call given keywords it does not take (Python's own
    message names one and lists none): every unknown keyword, then what the call takes
    (its own keywords, then the options)."""
    accepted = set(accepted)
    check_keywords(call, given, accepted - set(OPTION_NAMES))
    unknown = ", ".join(sorted(set(given) - accepted))  # an option this call does not take
    raise TypeError(
        f"{call}() got unknown keyword(s): {unknown}; it takes {', '.join(sorted(accepted))}"
    )


def keywords_taken(method: Callable[..., Any]) -> frozenset[str] | None:
    """The keywords ``method`` takes: its named parameters and, when it takes
    ``**options: Unpack[X]`` (a ``TypedDict`` of :mod:`esmapper._keywords`), the keys of
    ``X``; ``None`` when it takes any keyword (a plain ``**kwargs``)."""
    parameters = inspect.signature(method).parameters.values()
    accepted = frozenset(
        p.name
        for p in parameters
        if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name != "self"
    )
    rest = [p for p in parameters if p.kind is p.VAR_KEYWORD]
    if not rest:
        return accepted
    unpacked = keywords_of(rest[0].annotation, method.__globals__)
    return accepted | unpacked if unpacked else None


def keywords_checked(method: F) -> F:
    """Decorate a method that takes options as keyword arguments: a keyword it does not
    take (:func:`keywords_taken`) raises the ``TypeError`` of :func:`refuse_keywords` (see
    also :func:`esmapper._limits.limited`, which checks the same way); one that takes any
    keyword is not checked."""
    accepted = keywords_taken(method)
    if accepted is None:
        return method
    name = method.__name__
    if name == "__init__":  # Session(...), not __init__(...)
        name = method.__qualname__.rpartition(".")[0]

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not accepted.issuperset(kwargs):
            refuse_keywords(name, kwargs, accepted)
        return method(self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


def refresh_param(consistency: str, *, by_query: bool = False) -> bool | Literal["wait_for"] | None:
    """The ``refresh`` parameter for ``consistency`` (``None`` means: don't send one)."""
    if consistency == "immediate":
        return True
    if consistency == "wait":
        return True if by_query else "wait_for"
    return None
