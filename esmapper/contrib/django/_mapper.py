"""The process's :class:`~esmapper.mapper.Mapper`, built from ``settings.ESMAPPER``.

One per process: built on first use (:func:`get_mapper`, thread-safe: two threads asking at
once get the same one), closed at exit. A process forked after the mapper was built (a
pre-forking server loading the app first) builds its own on first use instead of sharing the
parent's connections (nor its lock, which a thread of the parent may have held at the
fork). A change of ``settings.ESMAPPER`` (``override_settings`` in a test)
closes it: the next use builds one from the new settings. :func:`use_mapper` makes another
mapper the process's for a while (the test helpers' way to point the app at a test index
prefix).
"""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed

from esmapper.contrib.django._settings import Config, read_config
from esmapper.mapper import Mapper

__all__ = ["close_mapper", "get_config", "get_mapper", "use_mapper"]

_lock = threading.RLock()


def _after_fork_in_child() -> None:
    """A forked child gets a new lock: the parent's may have been held by a thread (one
    building the mapper) that the child does not have, which would hold it forever."""
    global _lock  # noqa: PLW0603 (the module's lock, replaced once per fork)
    _lock = threading.RLock()


os.register_at_fork(after_in_child=_after_fork_in_child)


class _State:
    config: Config | None = None
    mapper: Mapper | None = None
    pid: int | None = None
    overrides: list[Mapper] = []  # noqa: RUF012 (the stack of use_mapper)
    at_exit = False


def get_config() -> Config:
    """``settings.ESMAPPER``, checked (read once; again after it changes)."""
    config = _State.config
    if config is None:
        with _lock:
            if _State.config is None:
                _State.config = read_config()
            config = _State.config
    return config


def get_mapper() -> Mapper:
    """The process's mapper: the one :func:`use_mapper` gives, else the one built from
    ``settings.ESMAPPER`` (on first use; nothing is sent). Raises ``ImproperlyConfigured``
    for bad settings."""
    if _State.overrides:
        return _State.overrides[-1]
    mapper = _State.mapper
    if mapper is not None and _State.pid == os.getpid():
        return mapper
    with _lock:
        if _State.mapper is None or _State.pid != os.getpid():
            config = get_config()
            try:
                _State.mapper = config.build_mapper()
            except (TypeError, ValueError) as exc:
                raise ImproperlyConfigured(f"settings.ESMAPPER: {exc}") from exc
            _State.pid = os.getpid()  # a forked child builds its own
            if not _State.at_exit:
                atexit.register(close_mapper)
                _State.at_exit = True
        return _State.mapper


def close_mapper() -> None:
    """Close the process's mapper built from the settings (the next use builds a new one).
    A forked child leaves its parent's alone."""
    with _lock:
        mapper, pid = _State.mapper, _State.pid
        _State.mapper = _State.pid = None
    if mapper is not None and pid == os.getpid():
        mapper.close()


@contextmanager
def use_mapper(mapper: Mapper) -> Iterator[Mapper]:
    """Make ``mapper`` the process's mapper inside the ``with`` (every request, sync and
    command of the process uses it); the caller keeps owning it."""
    with _lock:
        _State.overrides.append(mapper)
    try:
        yield mapper
    finally:
        with _lock:
            _State.overrides.remove(mapper)


def _settings_changed(*, setting: str, **kwargs: Any) -> None:
    if setting == "ESMAPPER":
        with _lock:
            _State.config = None
        close_mapper()


setting_changed.connect(_settings_changed, dispatch_uid="esmapper.contrib.django.settings")
