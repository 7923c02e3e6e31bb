"""Per-call limits: the ``timeout`` and ``retries`` options.

A repository or session call runs under :func:`applied`, which makes its limits the
current ones for everything the call sends, whatever layer sends it:

- ``timeout`` (seconds, or a ``timedelta``) is the client-side ``request_timeout`` of every
  request: :attr:`Mapper.client <esmapper.mapper.Mapper.client>` and the bulk writer read
  it here. That includes what a write sends before its bulk (the index check of a first
  write, a new time-series partition, the real-time id lookup): the write path hands
  ``mapper.client`` to :meth:`IndexSpec.write_targets
  <esmapper.indexes.spec.IndexSpec.write_targets>`. Nothing keeps a call's view of the
  client past the call (index specs hold the mapper's base client). A call that sends
  several requests (a bulk in chunks, paging, a read-back) may take up to that long for
  each. A write whose answer times out is an unknown outcome and
  is settled like a dropped connection (read back, never resent blindly).
- ``retries`` bounds what a call retries because retrying is safe: ``_bulk`` items rejected
  with 429/503 (default: the mapper's ``max_retries``) and the version-conflict rounds of
  ``patch_all`` (default 5) and ``remove_all`` (default 10). Not the items refused by a
  reindex's write block (403 ``cluster_block_exception``): they wait for the swap on their
  own budget, the mapper's ``write_block_wait`` (seconds of backoff per write call, 30 by
  default), also under ``retries=0`` (see :mod:`esmapper.bulk`).

A call that does not give a limit inherits the one of the call it runs in (a session's
``find`` inside its own defaults), else none applies (the client's own settings).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import Callable, Iterator
from typing import Any, Protocol, TypeVar

import attrs

from esmapper.options import check_retries, check_timeout, keywords_taken, refuse_keywords

__all__ = ["CallLimits", "applied", "current", "limited"]

F = TypeVar("F", bound=Callable[..., Any])


@attrs.frozen(slots=True)
class CallLimits:
    """The limits of the running call; ``None`` means "not set" (the default applies)."""

    timeout: float | None = None
    retries: int | None = None

    def retry_rounds(self, default: int) -> int:
        """How many times a loop may retry: ``retries``, else ``default``."""
        return default if self.retries is None else self.retries


_NONE = CallLimits()
_current: contextvars.ContextVar[CallLimits] = contextvars.ContextVar(
    "esmapper_call_limits", default=_NONE
)


def current() -> CallLimits:
    """The limits of the call running in this context (all ``None`` outside calls)."""
    return _current.get()


@contextlib.contextmanager
def applied(timeout: Any = None, retries: Any = None) -> Iterator[CallLimits]:
    """Run the body under ``timeout``/``retries``; a ``None`` keeps the enclosing value."""
    outer = _current.get()
    limits = CallLimits(
        outer.timeout if timeout is None else check_timeout(timeout),
        outer.retries if retries is None else check_retries(retries),
    )
    if limits == outer:
        yield outer
        return
    token = _current.set(limits)
    try:
        yield limits
    finally:
        _current.reset(token)


class _HasLimits(Protocol):
    """What a call's defaults must give (an ``Options``)."""

    @property
    def timeout(self) -> Any: ...
    @property
    def retries(self) -> Any: ...


def limited(defaults: Callable[[Any], _HasLimits]) -> Callable[[F], F]:
    """Decorate a public method taking the options as keyword arguments (``**options:
    Unpack[X]``, see :mod:`esmapper._keywords`): it runs under the ``timeout``/``retries``
    given to the call, else those of ``defaults(self)`` (the options the call runs under
    where it gives none: their ``timeout`` and ``retries``).

    A keyword the method does not take raises ``TypeError`` naming it and listing every
    keyword the method takes (its own, then the options), before the method runs."""

    def decorate(method: F) -> F:
        accepted = keywords_taken(method)

        @functools.wraps(method)
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            fallback = defaults(self)
            if kwargs:
                if accepted is not None and not accepted.issuperset(kwargs):
                    refuse_keywords(method.__name__, kwargs, accepted)
                # a keyword given as None means the default, as every option's None does
                timeout = kwargs.get("timeout")
                if timeout is None:
                    timeout = fallback.timeout
                retries = kwargs.get("retries")
                if retries is None:
                    retries = fallback.retries
            else:  # the usual call: no keyword, the defaults' limits
                timeout, retries = fallback.timeout, fallback.retries
            if timeout is None and retries is None:  # nothing to apply: no context
                return method(self, *args, **kwargs)
            with applied(timeout, retries):
                return method(self, *args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate
