"""``settings.ESMAPPER``, read and checked: what the Django integration builds its mapper and
each request's session from.

::

    ESMAPPER = {
        "url": "http://127.0.0.1:9200",      # or a list of node URLs (required)
        "models": ["myapp.search.Article"],  # dotted paths (or the classes themselves)
        "migrations": [],                    # the same, for migrations
        "index_prefix": "",
        "redis": None,                       # "redis://...": cache and notifications shared
        "session": {"consistency": "wait"},  # options of every request's session
        "mapper": {},                        # other Mapper(...) keyword arguments
    }

Every problem is an ``ImproperlyConfigured`` naming the key (``ESMAPPER["models"][1]``),
raised when the app registry is ready (:class:`~esmapper.contrib.django.apps.EsmapperConfig`),
before a request or a command could send anything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

from esmapper.contrib import _request
from esmapper.mapper import Mapper

__all__ = ["KEYS", "Config", "read_config"]

#: The keys ``settings.ESMAPPER`` accepts.
KEYS = ("index_prefix", "mapper", "migrations", "models", "redis", "session", "url")


@attrs.frozen
class Config:
    """``settings.ESMAPPER``, checked."""

    url: str | tuple[str, ...]
    models: tuple[type, ...]
    migrations: tuple[type, ...] = ()
    index_prefix: str = ""
    redis: str | None = None
    session_options: Mapping[str, Any] = attrs.field(factory=dict)
    mapper_options: Mapping[str, Any] = attrs.field(factory=dict)

    def build_mapper(self) -> Mapper:
        """A new :class:`~esmapper.mapper.Mapper` (nothing is sent: the client connects on
        first use)."""
        url = list(self.url) if isinstance(self.url, tuple) else self.url
        return Mapper(
            url,
            models=self.models,
            migrations=self.migrations,
            index_prefix=self.index_prefix,
            redis=self.redis,
            **self.mapper_options,
        )


def _bad(where: str, problem: str) -> ImproperlyConfigured:
    return ImproperlyConfigured(f"settings.ESMAPPER{where} {problem}")


def _classes(value: object, key: str) -> tuple[type, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise _bad(f"[{key!r}]", f"must be a list of classes or dotted paths, not {value!r}")
    found = []
    for position, named in enumerate(value):
        where = f"[{key!r}][{position}]"
        item = named
        if isinstance(named, str):
            try:
                item = import_string(named)
            except ImportError as exc:
                raise _bad(where, f"= {named!r} cannot be imported: {exc}") from exc
        if not isinstance(item, type):
            raise _bad(where, f"must be a class or its dotted path, not {item!r}")
        found.append(item)
    return tuple(found)


def _url(value: object) -> str | tuple[str, ...]:
    if isinstance(value, str) and value.strip():
        return value
    if (
        isinstance(value, Sequence)
        and not isinstance(value, str)
        and value
        and all(isinstance(u, str) and u.strip() for u in value)
    ):
        return tuple(value)
    raise _bad("['url']", f"must be the Elasticsearch URL or a list of node URLs, not {value!r}")


def _mapping(value: object, key: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise _bad(f"[{key!r}]", f"must be a dict, not {value!r}")
    return dict(value)


def read_config(value: object = None) -> Config:
    """``value`` (default: ``settings.ESMAPPER``) checked; raises ``ImproperlyConfigured``
    naming the missing or wrong key."""
    if value is None:
        value = getattr(settings, "ESMAPPER", None)
        if value is None:
            raise ImproperlyConfigured(
                'settings.ESMAPPER is not set: ESMAPPER = {"url": "http://127.0.0.1:9200", '
                '"models": ["myapp.search.Article"]}'
            )
    if not isinstance(value, Mapping):
        raise _bad("", f"must be a dict, not {value!r}")
    unknown = sorted(set(value) - set(KEYS))
    if unknown:
        raise _bad(f"[{unknown[0]!r}]", f"is not a setting of esmapper (known: {', '.join(KEYS)})")
    if "url" not in value:
        raise _bad("['url']", "is required: the Elasticsearch URL, e.g. http://127.0.0.1:9200")
    prefix = value.get("index_prefix", "")
    if not isinstance(prefix, str):
        raise _bad("['index_prefix']", f"must be a string, not {prefix!r}")
    redis = value.get("redis")
    if redis is not None and not (isinstance(redis, str) and redis.strip()):
        raise _bad("['redis']", f"must be a Redis URL or None, not {redis!r}")
    session = _mapping(value.get("session", {}), "session")
    try:
        _request.checked_options(session)
    except (TypeError, ValueError) as exc:
        raise _bad("['session']", f"is wrong: {exc}") from exc
    mapper = _mapping(value.get("mapper", {}), "mapper")
    taken = sorted(set(mapper) & {"models", "migrations", "index_prefix", "redis"})
    if taken:
        raise _bad(f"['mapper'][{taken[0]!r}]", f"belongs in settings.ESMAPPER[{taken[0]!r}]")
    config = Config(
        url=_url(value["url"]),
        models=_classes(value.get("models", ()), "models"),
        migrations=_classes(value.get("migrations", ()), "migrations"),
        index_prefix=prefix,
        redis=redis,
        session_options=session,
        mapper_options=mapper,
    )
    _check_mapper(config)
    return config


def _check_mapper(config: Config) -> None:
    """Build (without Redis, not even ``$ESMAPPER_REDIS_URL``'s, which ``redis=""`` turns
    off: nothing is sent, no thread started) and close the mapper of
    ``config``, so that a value only ``Mapper(...)`` checks (``ESMAPPER["mapper"]``'s, the
    prefix) is refused at start-up rather than on the first request."""
    try:
        attrs.evolve(config, redis="").build_mapper().close()
    except (TypeError, ValueError) as exc:
        error = exc
    else:
        return
    if config.mapper_options:
        try:
            attrs.evolve(config, redis="", mapper_options={}).build_mapper().close()
        except (TypeError, ValueError):
            pass
        else:
            raise _bad("['mapper']", f"is wrong: {error}") from error
    raise _bad("", f"is wrong: {error}") from error
