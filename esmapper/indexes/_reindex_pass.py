"""The server-side steps of a reindex; mainly one ``_reindex`` pass, run as a polled task
where the server has tasks, else synchronously.

Every pass writes with ``dest.version_type = "external"`` and ``conflicts = "proceed"``: a
document is copied only when its source ``_version`` is higher than the target's. A
document already copied at its current version is skipped as a version conflict (expected,
not a failure), so passes can be repeated: a catch-up pass rewrites only what changed.

Every write here is sent once, with the transport's retries off
(:func:`esmapper._transport.once`), and an unknown outcome (a dropped connection, a timeout,
an unreadable response) is settled by reading the state back: a ``_reindex`` pass whose
answer was lost is run once more, deliberately (idempotent, see above); a lost ``PUT
/<new>`` is checked with ``HEAD /<new>``; a lost write block with ``GET /<old>/_settings``;
a lost bulk of deletes by listing the ids again.
"""

from __future__ import annotations

import logging
import time
import warnings
import weakref
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Final

import attrs
from elasticsearch import ApiError, Elasticsearch, NotFoundError, TransportError

from esmapper._transport import is_unknown_outcome, once, send_or_read_back
from esmapper.errors import IndexConfigurationError

if TYPE_CHECKING:
    from esmapper.indexes.spec import IndexSpec

__all__ = [
    "PassOutcome",
    "alias_target",
    "count",
    "delete_extras",
    "has_tasks",
    "prepare_target",
    "run_pass",
    "set_write_block",
    "write_blocked",
]

log = logging.getLogger("esmapper.indexes")

#: Whether a client's server tracks reindex tasks (noida-db answers 404 for them).
_HAS_TASKS: Final[weakref.WeakKeyDictionary[Elasticsearch, bool]] = weakref.WeakKeyDictionary()
_SYNC_TIMEOUT: Final = 24 * 3600.0  # seconds: a synchronous reindex may run for long
_MAX_POLL_ERRORS: Final = 6
_ATTEMPTS: Final = 2  # a write whose outcome is unknown and not applied is sent once more


@attrs.frozen(slots=True)
class PassOutcome:
    """What one pass did: documents seen (``total``), ``created``, ``updated``,
    ``version_conflicts`` (already up to date in the target) and ``failures``."""

    total: int = 0
    created: int = 0
    updated: int = 0
    version_conflicts: int = 0
    failures: tuple[dict[str, Any], ...] = ()

    @property
    def copied(self) -> int:
        return self.created + self.updated


def _done(status: dict[str, Any]) -> int:
    keys = ("created", "updated", "deleted", "noops", "version_conflicts")
    return sum(int(status.get(k) or 0) for k in keys)


def _outcome(response: dict[str, Any]) -> PassOutcome:
    failures = tuple(f for f in response.get("failures") or () if isinstance(f, dict))
    return PassOutcome(
        total=int(response.get("total") or 0),
        created=int(response.get("created") or 0),
        updated=int(response.get("updated") or 0),
        version_conflicts=int(response.get("version_conflicts") or 0),
        failures=failures,
    )


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


def has_tasks(client: Elasticsearch, body: dict[str, Any]) -> bool:
    """Whether the server tracks reindex tasks; learned once per client with an empty
    ``POST /_reindex?wait_for_completion=false`` (``match_none`` from ``body``'s source into
    its destination) and ``GET /_tasks/<id>`` (404: no tasks)."""
    known = _HAS_TASKS.get(client)
    if known is None:
        started = client.reindex(
            source={"index": body["source"]["index"], "query": {"match_none": {}}},
            dest={"index": body["dest"]["index"]},
            wait_for_completion=False,
        )
        task = str(started["task"])
        try:
            with warnings.catch_warnings():  # the tasks API is "technical preview"
                warnings.simplefilter("ignore")
                client.tasks.get(task_id=task)
            known = True
        except NotFoundError:
            known = False
            log.info("the server keeps no reindex tasks; reindexing synchronously")
        _HAS_TASKS[client] = known
    return known


def run_pass(
    client: Elasticsearch,
    body: dict[str, Any],
    *,
    progress: Callable[[int, int], None],
    poll_interval: float = 1.0,
    sleep: Callable[[float], object] = time.sleep,
) -> PassOutcome:
    """Run ``POST /_reindex`` with ``body`` (``source``, ``dest``, optional ``script``) and
    ``conflicts=proceed``.

    Where the server tracks tasks (:func:`has_tasks`): ``wait_for_completion=false``, then
    ``GET /_tasks/<id>`` every ``poll_interval`` seconds, calling ``progress(done, total)``
    each time; transport errors while polling are retried with backoff (1 s doubling,
    capped at 30 s), up to 6 in a row, then raised. Otherwise (or if the task is unknown
    after all): ``wait_for_completion=true``, with ``progress`` called at the start and the
    end (harmless after a lost task: external versions make a pass idempotent). Returns the
    outcome; errors of the request itself (a failing script, a refused document) become
    ``failures``.

    The ``POST /_reindex`` is sent once (no transport retries). When its outcome is unknown
    (the answer was lost: the pass may have run, partly or fully, or not at all) the pass is
    run once more, synchronously; a second unknown outcome is raised.
    """
    request = {**body, "conflicts": "proceed"}
    single = once(client)
    if has_tasks(client, body):
        try:
            started = single.reindex(**request, wait_for_completion=False)
        except ApiError as exc:
            return _from_api_error(exc)
        except TransportError as exc:
            if not is_unknown_outcome(exc):
                raise
            log.warning(
                "starting a reindex task had an unknown outcome (%s); running it again", exc
            )
        else:
            outcome = _poll(client, str(started["task"]), progress, poll_interval, sleep)
            if outcome is not None:
                return outcome
            log.warning(
                "reindex task %s is unknown to the server; reindexing synchronously",
                started["task"],
            )
    for attempt in range(1, _ATTEMPTS + 1):
        progress(0, 0)
        try:
            response = single.options(request_timeout=_SYNC_TIMEOUT).reindex(
                **request, wait_for_completion=True
            )
        except ApiError as exc:
            return _from_api_error(exc)
        except TransportError as exc:
            if not is_unknown_outcome(exc) or attempt == _ATTEMPTS:
                raise
            log.warning("a reindex pass had an unknown outcome (%s); running it again", exc)
            continue
        outcome = _outcome(response.body)
        progress(outcome.total, outcome.total)
        return outcome
    raise AssertionError("unreachable")  # pragma: no cover


def _poll(
    client: Elasticsearch,
    task: str,
    progress: Callable[[int, int], None],
    poll_interval: float,
    sleep: Callable[[float], object],
) -> PassOutcome | None:
    """Poll ``task`` until it completes; ``None`` if the server has no record of it."""
    errors = 0
    first = True
    while True:
        try:
            with warnings.catch_warnings():  # the tasks API is "technical preview"
                warnings.simplefilter("ignore")
                status = client.tasks.get(task_id=task).body
        except NotFoundError:
            if first:
                return None
            raise
        except (ApiError, TransportError) as exc:
            errors += 1
            log.warning(
                "error getting the status of reindex task %s (%d in a row): %s", task, errors, exc
            )
            if errors >= _MAX_POLL_ERRORS:
                raise
            sleep(min(30.0, 2.0 ** (errors - 1)))
            continue
        first, errors = False, 0
        task_status = status.get("task", {}).get("status", {})
        progress(_done(task_status), int(task_status.get("total") or 0))
        if status.get("completed"):
            if "error" in status:
                return PassOutcome(failures=(_error_failure(status["error"]),))
            return _outcome(status.get("response", {}))
        sleep(poll_interval)


def _ids(client: Elasticsearch, index: str) -> Iterator[str]:
    """Every document id of ``index`` (a scroll over ``_doc`` order, no ``_source``)."""
    response = client.search(index=index, scroll="2m", size=5000, source=False, sort=["_doc"])
    scroll_id = response.get("_scroll_id")
    try:
        while hits := response["hits"]["hits"]:
            yield from (str(hit["_id"]) for hit in hits)
            response = client.scroll(scroll_id=scroll_id, scroll="2m")
            scroll_id = response.get("_scroll_id", scroll_id)
    finally:
        if scroll_id:
            client.options(ignore_status=404).clear_scroll(scroll_id=scroll_id)


def delete_extras(client: Elasticsearch, old: str, new: str) -> int:
    """Delete from ``new`` every document ``old`` no longer has (deleted from it after it
    was copied); returns how many. Scrolls the ids of both indexes (``POST _search`` with
    ``scroll``) and sends ``_bulk`` requests of deletes (1000 per request, ``refresh=true``,
    each sent once). A bulk whose outcome is unknown is settled by listing the ids again and
    deleting what is still there, once more; a bulk item failing with anything but 404
    raises :class:`IndexConfigurationError`."""
    kept = set(_ids(client, old))
    extra = [i for i in _ids(client, new) if i not in kept]
    removed = len(extra)
    for attempt in range(1, _ATTEMPTS + 1):
        try:
            _delete_ids(client, new, extra)
            return removed
        except TransportError as exc:
            if not is_unknown_outcome(exc) or attempt == _ATTEMPTS:
                raise
            log.warning("deleting extras from %s had an unknown outcome (%s); re-reading", new, exc)
            client.indices.refresh(index=new)
            extra = [i for i in _ids(client, new) if i not in kept]
    raise AssertionError("unreachable")  # pragma: no cover


def _delete_ids(client: Elasticsearch, index: str, ids: list[str]) -> None:
    single = once(client)
    for start in range(0, len(ids), 1000):
        operations = [{"delete": {"_index": index, "_id": i}} for i in ids[start : start + 1000]]
        response = single.bulk(operations=operations, refresh=True)
        for item in response.body.get("items") or ():
            result: dict[str, Any] = next(iter(item.values()), {})
            if result.get("status") not in (200, 404):
                raise IndexConfigurationError(
                    f"deleting {result.get('_id')!r} from {index} failed: {result.get('error')}",
                    index=index,
                    ids=[str(result.get("_id"))],
                )


def count(client: Elasticsearch, index: str) -> int:
    """``GET /<index>/_count``."""
    return int(client.count(index=index)["count"])


def prepare_target(client: Elasticsearch, spec: IndexSpec, new: str) -> None:
    """Create ``new`` with ``spec``'s mapping and settings, no alias (``PUT /<new>``).

    An existing empty ``new`` (made by ``configure_indexes``) gets ``PUT _mapping`` and is
    reused; a non-empty one (an interrupted run's leftover) is deleted and recreated. The
    ``PUT`` is sent once; after an unknown outcome ``HEAD /<new>`` decides (there: created;
    missing: sent once more).
    """
    if client.indices.exists(index=new):
        client.indices.refresh(index=new)
        if count(client, new) == 0:
            client.indices.put_mapping(index=new, **spec.info.mapping)
            return
        log.warning("deleting %s: a non-empty leftover of an interrupted reindex", new)
        client.indices.delete(index=new)
    send_or_read_back(
        lambda: once(client).indices.create(index=new, **spec.body(with_alias=False)),
        lambda: bool(client.indices.exists(index=new)),
        what=f"PUT /{new}",
    )


def write_blocked(client: Elasticsearch, index: str) -> bool:
    """Whether ``index`` has ``index.blocks.write`` set (``GET /<index>/_settings``)."""
    body = client.indices.get_settings(index=index).body
    blocks = body.get(index, {}).get("settings", {}).get("index", {}).get("blocks", {})
    return str(blocks.get("write", "false")).lower() == "true"


def set_write_block(client: Elasticsearch, index: str, blocked: bool) -> None:
    """``PUT /<index>/_block/write`` (it waits for in-flight writes), or remove the block
    with ``PUT /<index>/_settings {"index.blocks.write": false}``. The block is sent once;
    after an unknown outcome the settings are read back (blocked: done; not blocked: sent
    once more)."""
    if blocked:
        send_or_read_back(
            lambda: once(client).indices.add_block(index=index, block="write"),
            lambda: write_blocked(client, index),
            what=f"PUT /{index}/_block/write",
        )
    else:
        client.indices.put_settings(index=index, settings={"index.blocks.write": False})


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
