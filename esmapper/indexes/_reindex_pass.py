"""The server-side steps of a reindex; mainly one ``_reindex`` pass, run as a polled task
where the server has tasks, else synchronously.

Every pass writes with ``dest.version_type = "external"`` and ``conflicts = "proceed"``: a
document is copied only when its source ``_version`` is higher than the target's. A
document already copied at its current version is skipped as a version conflict (expected,
not a failure), so passes can be repeated: a catch-up pass rewrites only what changed. (A
document removed and added again under its id restarts at ``_version`` 1 once the delete's
version is forgotten, ``index.gc_deletes`` after it: the passes skip it, and the run
replaces its copy under the write block, :mod:`esmapper.indexes._reindex_stale`.)

Every write here is sent once, with the transport's retries off
(:func:`esmapper._transport.once`), and an unknown outcome (a dropped connection, a timeout,
an unreadable response) is settled by reading the state back: a ``_reindex`` pass whose
start's answer was lost is followed when its task is listed as running, else run once
more, deliberately (idempotent, see above); a lost ``PUT
/<new>`` is checked with ``HEAD /<new>``; a lost bulk of deletes by listing the ids again.
(The write block: :mod:`esmapper.indexes.blocks`.)

Throttling and stalls: a :class:`Throttle` sets the pass's batch
size (``source.size``) and ``requests_per_second``, and how long a polled task may make no
progress (its count of processed documents does not move) before it counts as stalled:
half-way a warning is logged naming the task and how far it got; at the limit the task is
cancelled (``POST /_tasks/<id>/_cancel``, best effort) and :class:`PassStalled` raised. A
server without tasks runs a pass synchronously: no progress can be seen, and the pass is
bounded by its request timeout (24 h) only. Starting, polling and cancelling the task and
deleting its result from ``.tasks`` is :mod:`esmapper._server_tasks`'s (shared with the
by-query writes).
"""

from __future__ import annotations

import datetime as _dt
import logging
import math
import re
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Final

import attrs
from elasticsearch import ApiError, Elasticsearch, NotFoundError, TransportError

from esmapper._server_tasks import (
    TaskCancelled,
    TaskLost,
    TaskStalled,
    TaskStartUnknown,
    jittered,
    run_task,
)
from esmapper._shards import count_all, scroll_all
from esmapper._transport import is_unknown_outcome, once, send_or_read_back
from esmapper.errors import IndexConfigurationError, LockError
from esmapper.ids import routing_of
from esmapper.indexes._lookup import listed_id, stored_params
from esmapper.indexes._reindex_fence import delete_unclaimed, serving_aliases
from esmapper.indexes._reindex_resume import stop_leftover_passes

if TYPE_CHECKING:
    from esmapper.indexes.spec import IndexSpec

__all__ = [
    "CANCELLED",
    "PassOutcome",
    "PassStalled",
    "Throttle",
    "alias_target",
    "count",
    "delete_extras",
    "delete_ids",
    "prepare_target",
    "refreshes_itself",
    "run_pass",
]

log = logging.getLogger("esmapper.indexes")

_SYNC_TIMEOUT: Final = 24 * 3600.0  # seconds: a synchronous reindex may run for long
_DEFAULT_BATCH: Final = 1000  # Elasticsearch's source.size when none is given
_MIN_STALL: Final = 600.0  # seconds: the least stall timeout, 10 min
_ATTEMPTS: Final = 2  # a write whose outcome is unknown and not applied is sent once more


@attrs.frozen(slots=True)
class PassOutcome:
    """What one pass did: documents seen (``total``), ``created``, ``updated``,
    ``version_conflicts`` (already up to date in the target) and ``failures``. ``exact``:
    the figures are the whole pass's (False when the pass was run again after an unknown
    outcome or a lost task: what the first attempt wrote is not counted)."""

    total: int = 0
    created: int = 0
    updated: int = 0
    version_conflicts: int = 0
    failures: tuple[dict[str, Any], ...] = ()
    exact: bool = True

    @property
    def copied(self) -> int:
        return self.created + self.updated

    @property
    def skipped(self) -> int:
        """Documents seen and not written: version conflicts, and noops of a script."""
        return max(0, self.total - self.copied - len(self.failures))


def _positive(name: str, value: float | None) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number, not {type(value).__name__}")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, not {value!r}")


@attrs.frozen(slots=True)
class Throttle:
    """How a pass is paced, checked when built: ``batch_size``
    (``source.size``: documents per scroll batch, an ``int`` > 0; ``None``: the server's
    1000), ``requests_per_second`` (``None``: unthrottled; a finite number > 0) and
    ``stall_timeout`` (a ``timedelta`` without progress before a polled pass counts as
    stalled; ``None``: ``max(600 s, 3 * batch / requests_per_second)``). A bad value raises
    ``ValueError`` (``TypeError`` for a non-number) before anything is sent."""

    batch_size: int | None = None
    requests_per_second: float | None = None
    stall_timeout: _dt.timedelta | None = None

    def __attrs_post_init__(self) -> None:
        if self.batch_size is not None and (
            isinstance(self.batch_size, bool) or not isinstance(self.batch_size, int)
        ):
            raise TypeError(f"batch_size must be an int, not {type(self.batch_size).__name__}")
        _positive("batch_size", self.batch_size)
        _positive("requests_per_second", self.requests_per_second)
        if self.stall_timeout is not None:
            _positive("stall_timeout", self.stall_timeout.total_seconds())

    @property
    def stall_seconds(self) -> float:
        """The stall limit in seconds (see the class docstring)."""
        if self.stall_timeout is not None:
            return self.stall_timeout.total_seconds()
        if self.requests_per_second is None:
            return _MIN_STALL
        batch = self.batch_size or _DEFAULT_BATCH
        return max(_MIN_STALL, 3 * batch / self.requests_per_second)

    def apply(self, body: dict[str, Any]) -> dict[str, Any]:
        """The ``_reindex`` request for ``body``: ``source.size`` and
        ``requests_per_second`` added when set."""
        request = dict(body)
        if self.batch_size is not None:
            request["source"] = {**body["source"], "size": self.batch_size}
        if self.requests_per_second is not None:
            request["requests_per_second"] = self.requests_per_second
        return request


#: A pass that made no progress for ``seconds`` (``task`` had processed ``done`` of
#: ``total`` documents); it was cancelled (``cancelled``: whether the server said so).
PassStalled = TaskStalled


#: the failure type of a pass whose task someone else cancelled (:func:`run_pass`)
CANCELLED: Final = "task_cancelled"


def _outcome(response: dict[str, Any]) -> PassOutcome:
    failures = tuple(f for f in response.get("failures") or () if isinstance(f, dict))
    return PassOutcome(
        total=int(response.get("total") or 0),
        created=int(response.get("created") or 0),
        updated=int(response.get("updated") or 0),
        version_conflicts=int(response.get("version_conflicts") or 0),
        failures=failures,
    )


def _cancelled(exc: TaskCancelled) -> PassOutcome:
    """A pass whose task someone else cancelled (an operator, or the rerun of a reindex
    that took over this one's lapsed lock: :class:`~esmapper._server_tasks.TaskCancelled`):
    it copied part of the documents, so its outcome carries a failure of type
    :data:`CANCELLED`, never a complete pass."""
    outcome = _outcome(exc.result.response)
    reason = f"its task was cancelled ({exc.reason}) before it copied every document"
    failure = {"status": None, "type": CANCELLED, "reason": reason}
    return attrs.evolve(outcome, failures=(*outcome.failures, failure))


def _error_failure(error: Any, status: int | None = None) -> dict[str, Any]:
    if isinstance(error, dict):
        cause = error.get("caused_by")
        while isinstance(cause, dict) and isinstance(cause.get("caused_by"), dict):
            cause = cause["caused_by"]  # the innermost cause says what went wrong
        reason = error.get("reason")
        if isinstance(cause, dict) and cause.get("reason"):
            reason = f"{reason}: {cause.get('reason')}"
        return {"status": status, "type": error.get("type"), "reason": reason}
    return {"status": status, "type": None, "reason": str(error)}


def _from_api_error(exc: ApiError) -> PassOutcome:
    info = exc.info if isinstance(exc.info, dict) else {}
    if "failures" in info:  # a bulk failure reported with an error status (noida-db)
        outcome = _outcome(info)
        if outcome.failures:
            return outcome
    return PassOutcome(failures=(_error_failure(info.get("error", exc.message), exc.meta.status),))


def run_pass(
    client: Elasticsearch,
    body: dict[str, Any],
    *,
    progress: Callable[[int, int], None],
    throttle: Throttle = Throttle(),
    poll_interval: float = 1.0,
    sleep: Callable[[float], object] | None = None,
    monotonic: Callable[[], float] = time.monotonic,
    jitter: Callable[[float], float] = jittered,
) -> PassOutcome:
    """Run ``POST /_reindex`` with ``body`` (``source``, ``dest``, optional ``script``),
    ``conflicts=proceed``, ``slices=auto`` (one slice per shard of the source, run in
    parallel by the server; the task's status and the answer sum them) and ``throttle``
    (:meth:`Throttle.apply`; ``requests_per_second`` is shared by the slices), through
    :func:`esmapper._server_tasks.run_task`.

    Where the server keeps tasks: ``wait_for_completion=false``, the task polled (after
    0.1 s, then at intervals doubling up to ``poll_interval`` seconds, each jittered by
    ``jitter``, +/-25% by default) with
    ``progress(done, total)`` called each time, its result deleted from ``.tasks`` once it
    completed; a task whose processed count does not move for ``throttle.stall_seconds`` is
    cancelled and :class:`PassStalled` raised (a warning is logged half-way). Otherwise:
    ``wait_for_completion=true`` with a 24 h request timeout, ``progress`` called at the
    start and the end. Returns the outcome; errors of the request itself (a failing
    script, a refused document, a task someone else cancelled) become ``failures``.

    The start is sent once (no transport retries). When its outcome is unknown and no task
    of it runs (listed by its ``X-Opaque-Id``), or the server has no record of the task it
    answered with, the pass is run once more (idempotent: external versions; its outcome
    is then not ``exact``); a second unknown outcome raises the transport error (or
    :class:`~esmapper._server_tasks.TaskLost`). A task whose status cannot be read raises
    :class:`~esmapper._server_tasks.TaskUnreachable` (it is not started again).
    """
    request = {**throttle.apply(body), "conflicts": "proceed", "slices": "auto"}
    exact = True  # False once an attempt may have written something not counted
    for attempt in range(1, _ATTEMPTS + 1):
        try:
            result = run_task(
                client,
                "reindex",
                request,
                what=f'reindex "{body["source"]["index"]}" -> "{body["dest"]["index"]}"',
                progress=progress,
                stall=throttle.stall_seconds,
                sync_timeout=_SYNC_TIMEOUT,
                poll_interval=poll_interval,
                sleep=sleep,
                monotonic=monotonic,
                jitter=jitter,
            )
        except ApiError as exc:
            return attrs.evolve(_from_api_error(exc), exact=exact)
        except TaskCancelled as exc:
            return attrs.evolve(_cancelled(exc), exact=exact)
        except (TaskStartUnknown, TaskLost) as exc:
            if attempt == _ATTEMPTS:
                if isinstance(exc, TaskStartUnknown):
                    raise exc.cause from exc
                raise
            log.warning("%s; running the pass again", exc)
            exact = False
            continue
        if result.error is not None:
            return PassOutcome(failures=(_error_failure(result.error),), exact=exact)
        return attrs.evolve(_outcome(result.response), exact=exact)
    raise AssertionError("unreachable")  # pragma: no cover


def _ids(client: Elasticsearch, index: str) -> Iterator[str]:
    """Every document id of ``index`` (a scroll over ``_doc`` order, no ``_source``), each
    with its hit's ``_routing`` (:func:`~esmapper.indexes._lookup.listed_id`: a routed
    document, a join's child, is deleted on its shard), every
    page answered by every shard (:func:`esmapper._shards.scroll_all`: a partial page raises
    :class:`~esmapper.errors.PartialResultsError`; an id missing from it would be taken
    for a document deleted from ``index``)."""
    what = f"the id listing of {index}"
    for hits in scroll_all(client, what=what, index=index, size=5000, source=False, sort=["_doc"]):
        yield from (listed_id(hit) for hit in hits)


def delete_extras(
    client: Elasticsearch,
    old: str,
    new: str,
    *,
    spec: IndexSpec | None,
    through: str | None = None,
) -> int:
    """Delete from ``new`` every document ``old`` no longer has (deleted from it after it
    was copied), and a second copy of an id under a routing ``old`` has not (a join child
    moved across shards during the run: :func:`_extras`); returns how many. Scrolls the
    ids of both indexes (``POST _search`` with ``scroll``) and sends ``_bulk`` requests of
    deletes (1000 per request, ``refresh=true``, each sent once, with the request
    parameters of ``spec``'s model: :func:`delete_ids`) through ``through`` (the run's
    marker alias on ``new``: fenced, see :func:`delete_ids`; default ``new``). A bulk whose
    outcome is unknown is settled by listing the ids again and deleting what is still
    there, once more; a bulk item failing with anything but 404 raises
    :class:`IndexConfigurationError`. A listing that some shards did not answer raises
    :class:`~esmapper.errors.PartialResultsError` before anything is deleted."""
    target = through or new
    kept: dict[str, set[str | None]] = {}  # id -> the routings of its copies in ``old``
    for i in _ids(client, old):
        kept.setdefault(str.__str__(i), set()).add(routing_of(i))
    extra = _extras(kept, _ids(client, new))
    removed = len(extra)
    for attempt in range(1, _ATTEMPTS + 1):
        try:
            delete_ids(client, target, extra, spec=spec)
            return removed
        except TransportError as exc:
            if not is_unknown_outcome(exc) or attempt == _ATTEMPTS:
                raise
            log.warning("deleting extras from %s had an unknown outcome (%s); re-reading", new, exc)
            client.indices.refresh(index=new)
            extra = _extras(kept, _ids(client, new))
    raise AssertionError("unreachable")  # pragma: no cover


def _extras(kept: dict[str, set[str | None]], listed: Iterator[str]) -> list[str]:
    """The copies among ``listed`` (a new index's ids with their hits' routings) that the
    old index, ``kept`` (id -> its copies' routings), does not have: every copy of an id
    it lacks, and a copy under a routing none of its copies has when another copy of the
    id matches one (a join child moved to a parent on another shard during the copy: the
    first pass's copy on the old parent's shard beside the catch-up's; Elasticsearch
    keeps ids unique per shard only). An id's only copy is never taken for another's (a
    script may route its copies anew; a hit without ``_routing`` tells nothing)."""
    extra: list[str] = []
    mismatched: list[str] = []
    matched: set[str] = set()
    for i in listed:
        key = str.__str__(i)
        routings = kept.get(key)
        if routings is None:
            extra.append(i)
        elif routing_of(i) in routings:
            matched.add(key)
        else:
            mismatched.append(i)
    return extra + [i for i in mismatched if str.__str__(i) in matched]


def delete_ids(
    client: Elasticsearch, index: str, ids: list[str], *, spec: IndexSpec | None
) -> None:
    """Delete ``ids`` from ``index``: ``_bulk`` requests of 1000 deletes, each with the
    id's request parameters (:func:`~esmapper.indexes._lookup.stored_params`: the routing
    its listing's hit carried, else ``spec``'s model's ``read_params`` point), ``refresh=true``,
    each sent once (an unknown outcome raises the transport error); an item failing with
    anything but 404 raises :class:`IndexConfigurationError`. ``index`` is a run's marker
    alias (:mod:`esmapper.indexes._reindex_fence`): once it is gone (another run took the
    target over) the items answer ``index_not_found_exception`` and :class:`LockError` is
    raised; a delete never creates an index."""
    single = once(client)
    for start in range(0, len(ids), 1000):
        operations = [
            {
                "delete": {
                    "_index": index,
                    "_id": str.__str__(i),
                    **stored_params(spec, i),
                }
            }
            for i in ids[start : start + 1000]
        ]
        response = single.bulk(operations=operations, refresh=True)
        for item in response.body.get("items") or ():
            result: dict[str, Any] = next(iter(item.values()), {})
            error = result.get("error")
            if isinstance(error, dict) and error.get("type") == "index_not_found_exception":
                raise LockError(
                    f"deleting documents through {index} was refused: it is gone (another "
                    "reindex run took the target over)",
                    index=index,
                )
            if result.get("status") not in (200, 404):
                raise IndexConfigurationError(
                    f"deleting {result.get('_id')!r} from {index} failed: {result.get('error')}",
                    index=index,
                    ids=[str(result.get("_id"))],
                )


_UNITS: Final = {
    "nanos": 1e-9, "micros": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0
}  # fmt: skip
_DEFAULT_REFRESH: Final = "1s"  # Elasticsearch's index.refresh_interval when none is set


def _seconds(duration: str) -> float | None:
    """An Elasticsearch time value (``"1s"``, ``"500ms"``, ``"-1"``) in seconds; ``None``
    when it is not a positive duration."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(nanos|micros|ms|s|m|h|d)\s*", duration)
    if match is None:
        return None
    seconds = float(match.group(1)) * _UNITS[match.group(2)]
    return seconds if seconds > 0 else None


def refreshes_itself(client: Elasticsearch, index: str, within: _dt.timedelta) -> bool:
    """Whether ``index`` makes its writes visible to searches by itself within ``within``:
    its ``index.refresh_interval`` (``GET /<index>/_settings``; unset means Elasticsearch's
    1 s, and a search of a search-idle shard waits for its refresh) is a positive duration
    of at most ``within``. False for ``-1`` (refreshes off), a longer interval, a value
    that cannot be read, or ``within`` <= 0."""
    if within <= _dt.timedelta(0):
        return False
    body = client.indices.get_settings(index=index).body
    settings = body.get(index, {}).get("settings", {}).get("index", {})
    interval = settings.get("refresh_interval", _DEFAULT_REFRESH)
    seconds = _seconds(str(interval))
    return seconds is not None and seconds <= within.total_seconds()


def count(client: Elasticsearch, index: str) -> int:
    """``GET /<index>/_count``; a count that some shards did not answer raises
    :class:`~esmapper.errors.PartialResultsError` (:func:`esmapper._shards.count_all`)."""
    return count_all(client, what=f"the count of {index}", index=index)


def prepare_target(
    client: Elasticsearch,
    spec: IndexSpec,
    new: str,
    *,
    reuse: Callable[[], bool] | None = None,
) -> bool:
    """Create ``new`` with ``spec``'s mapping and settings, no alias (``PUT /<new>``);
    returns whether a non-empty ``new`` was kept (``reuse``).

    An existing ``new`` is first rid of the ``_reindex`` tasks a killed run may have left
    writing into it (:func:`esmapper.indexes._reindex_resume.stop_leftover_passes`). An
    empty one (made by ``configure_indexes``) then gets ``PUT _mapping`` and is reused. A
    non-empty one (an interrupted run's leftover) is kept when ``reuse()`` says so (the
    rerun resumes from it: :mod:`esmapper.indexes._reindex_resume`), else deleted and
    recreated, never while the alias points at it and only while it carries the run
    markers it was read with (:func:`esmapper.indexes._reindex_fence.delete_unclaimed`).
    The ``PUT`` is sent once; after an unknown outcome ``HEAD /<new>`` decides (there:
    created; missing: sent once more).
    """
    if client.indices.exists(index=new):
        stop_leftover_passes(client, new)
        client.indices.refresh(index=new)
        if count(client, new) == 0:
            client.indices.put_mapping(index=new, body=spec.info.mapping)
            return False
        if reuse is not None and reuse():
            return True
        log.warning("deleting %s: a non-empty leftover of an interrupted reindex", new)
        delete_unclaimed(client, new, serving_aliases(spec, new), spec.write_name(new))
    send_or_read_back(
        lambda: once(client).indices.create(index=new, **spec.body(with_alias=False)),
        lambda: bool(client.indices.exists(index=new)),
        what=f"PUT /{new}",
    )
    return False


def alias_target(client: Elasticsearch, spec: IndexSpec) -> str | None:
    """The one index ``spec.alias`` points at (``GET /_alias/<alias>``), ``None`` without
    the alias; :class:`IndexConfigurationError` when it points at several."""
    try:
        targets = sorted(client.indices.get_alias(name=spec.alias).body)
    except NotFoundError:
        return None
    if len(targets) > 1:
        raise IndexConfigurationError(
            f"{spec.info.name}: alias {spec.alias!r} points at several indexes {targets}",
            index=spec.alias,
        )
    return targets[0] if targets else None
