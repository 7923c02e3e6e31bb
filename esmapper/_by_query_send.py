"""The by-query requests, one kind of send of the write pipeline: ``_update_by_query``
(``patch_all`` with a ``ScriptPatch`` on a model not cached) and ``_delete_by_query``
(``remove_all`` without removal receivers or caching), both decided and compiled by
:mod:`esmapper._by_query`. Each is sent once as a task (:func:`~esmapper._server_tasks.run_task`:
followed to its end, cancelled at the call's ``timeout=`` or on Ctrl-C, never
resent blindly) and drops the model's cache entries; the failures its answer reports
raise :class:`BulkWriteError`, an outcome not known :class:`OutcomeUnknownError`, and so
does a task someone else cancelled (``error_type`` ``task_cancelled``: it wrote part of
the matches, which ones is not known; :meth:`ByQuery._cancelled`)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Final

import attrs
from elasticsearch import ApiError, NotFoundError

from esmapper._limits import current as current_limits
from esmapper._outcomes import UNKNOWN
from esmapper._patch_actions import announce
from esmapper._search import is_index_missing, refresh_index
from esmapper._server_tasks import (
    Kind,
    TaskCancelled,
    TaskError,
    TaskResult,
    TaskStartUnknown,
    TaskTimedOut,
    run_task,
)
from esmapper._settle import publish_changes
from esmapper.errors import (
    BulkItemFailure,
    BulkWriteError,
    DocumentError,
    OutcomeUnknownError,
    ScriptError,
    VersionConflictError,
)
from esmapper.options import Options, refresh_param
from esmapper.signals import ChangeType

if TYPE_CHECKING:
    from esmapper._context import Context
    from esmapper.indexes.spec import IndexSpec
    from esmapper.model.info import ModelInfo

__all__ = ["ByQuery"]

log = logging.getLogger("esmapper.repository")

_DELETE_RETRIES = 9  # remove_all: 10 delete-by-query rounds in all (``retries=`` + 1)
_MAY_HAVE_DELETED = "some or all matching documents may have been deleted"
_PATCH_AGAIN = (
    "running patch_all again runs the script on every match, those it already patched "
    "too: run it again only if the script gives the same result when applied twice "
    "(it sets values), else with a filter that leaves the patched documents out"
)
_REMOVE_AGAIN = "remove_all is safe to run again: it removes the matches that are left"
_CANCELLED: Final = "task_cancelled"  # the error_type of a task someone else cancelled


@attrs.frozen
class ByQuery:
    """The by-query requests of one model, under one call's ``options``."""

    ctx: Context
    info: ModelInfo
    options: Options

    @property
    def spec(self) -> IndexSpec:
        return self.ctx.spec(self.info.cls)

    def update(self, query: Any, script: dict[str, Any], notify: list[str] | None = None) -> int:
        """``_update_by_query`` of the matches of ``query`` with ``script`` (the Update
        API's, :func:`esmapper._patch_actions.update_body`); returns the number updated.
        When anything was updated it publishes one ``id=None`` message, or one per id of
        ``notify`` (the ids the filter listed: :func:`esmapper._by_query.explicit_ids`).
        It writes each match at the version the last refresh made searchable: a document
        written since would be a conflict it cannot retry (it cannot say which), so it
        always refreshes first (and the recently-soft-deleted hint is not needed)."""
        ctx, info, options = self.ctx, self.info, self.options
        refresh_index(ctx.client, self.spec.alias)
        params = self._params("update_by_query", query, script=script)
        if params is None:
            return 0
        call = f"patch_all on {info.name}"
        try:
            result = self._run("update_by_query", params, call)
        except NotFoundError as exc:
            if is_index_missing(exc):
                return 0
            raise
        except ApiError as exc:  # refused as a whole: a script that does not compile...
            refused = ScriptError.of_answer(
                _answer_error(exc), call=call, script=script.get("source"), index=self.spec.alias
            )
            if refused is None:
                raise
            raise self._ran_on_some(refused) from exc
        except TaskCancelled as exc:
            if exc.result.count("updated"):
                announce(ctx, info, list(notify) if notify else [None], options)
            raise self._cancelled(exc, _PATCH_AGAIN) from exc
        except TaskError as exc:
            effect = "the script may have run on some or all matches"
            raise self._task_unknown(effect, "updated", exc) from exc
        finally:
            ctx.invalidate_model(info)
        if self._nothing_to_write(call, result, script.get("source")):
            return 0
        updated = result.count("updated")
        if updated:
            announce(ctx, info, list(notify) if notify else [None], options)
        self._raise_failures(call, "update_by_query", result, f"{updated} were patched")
        conflicts = result.count("version_conflicts")
        if conflicts:
            raise VersionConflictError(
                f"{call}: {conflicts} matching document(s) changed "
                f"concurrently and were NOT patched ({updated} were); the update-by-query "
                "cannot say which, so re-run it with a filter that excludes the patched "
                "documents, or patch with cache=True (per-document writes that retry "
                "conflicts)",
                index=self.spec.alias,
                error_type="version_conflict_engine_exception",
                reason=f"{conflicts} version conflicts, {updated} updated",
            )
        return updated

    def delete(self, query: Any) -> int:
        """``_delete_by_query`` of the matches of ``query``, re-run (after a refresh, once
        the previous run ended) while version conflicts remain; returns the number
        deleted (see :mod:`esmapper._by_query`)."""
        ctx, info, options, spec = self.ctx, self.info, self.options, self.spec
        if options.consistency != "eventual":
            refresh_index(ctx.client, spec.alias)
        params = self._params("delete_by_query", query)
        if params is None:
            return 0
        call = f"remove_all on {info.name}"
        total = 0
        # the start of the last run whose answer was lost (and of which no task runs): it
        # may have deleted documents, so a later run that fails does not mean "nothing was
        # deleted"
        lost: TaskStartUnknown | None = None
        try:
            attempts = 1 + current_limits().retry_rounds(_DELETE_RETRIES)
            for attempt in range(attempts):
                if attempt:
                    # a re-run: the conflicting documents changed since the last refresh
                    # (and what the previous run deleted is still searchable); without a
                    # refresh it would meet the same versions and conflict again
                    refresh_index(ctx.client, spec.alias)
                try:
                    result = self._run("delete_by_query", params, call)
                except ApiError as exc:
                    if isinstance(exc, NotFoundError) and is_index_missing(exc):
                        return total
                    if lost is not None:
                        raise self._removal_unknown(lost, exc) from exc
                    raise
                except TaskStartUnknown as exc:
                    if not exc.listed:  # it may still be running: never run a second one
                        raise self._task_unknown(_MAY_HAVE_DELETED, "deleted", exc) from exc
                    # Deleting what matches is idempotent, and no run of it is running:
                    # run it again; what the lost run deleted is not counted.
                    log.warning(
                        "%s; running it again (the returned count may miss what it deleted)",
                        exc,
                    )
                    lost = exc
                    continue
                except TaskCancelled as exc:
                    total += exc.result.count("deleted")  # gone: published below
                    raise self._cancelled(exc, _REMOVE_AGAIN) from exc
                except TaskError as exc:
                    raise self._task_unknown(_MAY_HAVE_DELETED, "deleted", exc) from exc
                lost = None
                if self._nothing_to_write(call, result):
                    return total
                total += result.count("deleted")
                self._raise_failures(call, "delete_by_query", result, f"{total} were removed")
                if not result.count("version_conflicts"):
                    break
            else:
                if lost is not None:
                    raise self._removal_unknown(lost, None)
                left = result.count("version_conflicts")
                raise VersionConflictError(
                    f"{call}: {left} matching document(s) were still "
                    f"changing concurrently after {attempts} delete-by-query rounds and were "
                    f"NOT removed ({total} were); run it again",
                    index=spec.alias,
                    error_type="version_conflict_engine_exception",
                    reason=f"{left} version conflicts, {total} deleted",
                )
        finally:
            ctx.invalidate_model(info)
            if total:  # also when a later round failed: these are gone
                changes = [(None, ChangeType.REMOVED)]
                publish_changes(ctx, info, changes, options)
        return total

    def _params(self, request: Kind, query: Any, **extra: Any) -> dict[str, Any] | None:
        """The parameters of ``request`` (logged at the call's ``query_log_level``): sent
        to the model's alias unless its features' ``by_query`` point says where and what
        it adds (a time series' partitions, an update's ingest pipeline). ``None``: there
        is nothing to write (no partition)."""
        params: dict[str, Any] = {"index": self.spec.write_target}
        for hook in self.info.points.by_query:
            added = hook(self.ctx, request)
            if added is None:
                return None
            params.update(added)
        level = self.options.query_log_level
        logging.getLogger("esmapper.query").log(
            logging.DEBUG if level is None else level, "%s %s %s", request, params["index"], query
        )
        refresh = bool(refresh_param(self.options.consistency, by_query=True))
        return {**params, "query": query, **extra, "conflicts": "proceed", "refresh": refresh}

    def _run(self, kind: Kind, params: dict[str, Any], call: str) -> TaskResult:
        """One by-query request as a task (:func:`esmapper._server_tasks.run_task`) on
        the call's client: cancelled when the call's ``timeout=`` passes, on Ctrl-C too."""
        timeout = current_limits().timeout
        result = run_task(self.ctx.client, kind, params, what=call, timeout=timeout)
        counts = ("total", "updated", "deleted", "noops", "version_conflicts")
        log.debug(
            "%s: %s, failures=%d (task %s)",
            call,
            ", ".join(f"{k}={result.count(k)}" for k in counts),
            len(result.failures),
            result.task,
        )
        return result

    def _nothing_to_write(self, call: str, result: TaskResult, script: str | None = None) -> bool:
        """Whether the task failed because its index does not exist (nothing to write);
        a script that does not compile (``script``: its source) raises
        :class:`ScriptError` with its line and position, any other error of the task as a
        whole :class:`DocumentError` with the server's type and reason."""
        error = result.error
        if error is None:
            return False
        if error.get("type") == "index_not_found_exception":
            return True
        refused = ScriptError.of_answer(error, call=call, script=script, index=self.spec.alias)
        if refused is not None:
            raise self._ran_on_some(refused)
        raise DocumentError(
            f"{call}: the request failed: {error.get('type')}: {error.get('reason')}",
            index=self.spec.alias,
            error_type=error.get("type"),
            reason=error.get("reason"),
        )

    def _ran_on_some(self, refused: ScriptError) -> ScriptError:
        """``refused`` (an update-by-query's script error) saying what may be written: a
        script that does not compile ran on nothing; one that failed while running stopped
        the update-by-query at that document, and what it wrote before stays (earlier
        batches), unknown which: the message says so, and the model's change is announced
        as for an update-by-query that patched some (its ``documents_changed`` and
        notification, whose listeners drop what they cached of it)."""
        if refused.reason == "compile error":
            return refused
        refused.message = (
            f"{refused.message}\nThe update-by-query stopped there; matching documents it "
            "reached before may be patched (which ones is not known): check them before "
            "running it again"
        )
        refused.args = (refused.message,)
        self.ctx.invalidate_model(self.info)  # before the listeners hear of it
        announce(self.ctx, self.info, [None], self.options)
        return refused

    def _raise_failures(self, call: str, what: str, result: TaskResult, done: str) -> None:
        """Raise :class:`BulkWriteError` for the failures a by-query answer reports
        (documents refused, shards that failed: the request stopped there)."""
        failures = [_failure(f, what) for f in result.failures]
        if not failures:
            return
        first = failures[0]
        raise BulkWriteError(
            failures,
            message=(
                f"{call}: the {what.replace('_', '-')} stopped on {len(failures)} failure(s) "
                f"({done}); first: id={first.id!r} index={first.index!r} "
                f"status={first.status} {first.error_type}: {first.reason}"
            ),
        )

    def _task_unknown(self, effect: str, verb: str, exc: TaskError) -> OutcomeUnknownError:
        """The error of a by-query request whose outcome is not known: its answer was
        lost (no task of it runs, or nothing could tell), its task was cancelled at the
        call's timeout (then ``effect`` says how many it had ``verb``, the task's count),
        or could not be followed. It is never resent."""
        if isinstance(exc, TaskTimedOut) and exc.result is not None:
            done, total = exc.result.count(verb), exc.result.count("total")
            which = " (which ones is not known)" if done else ""
            effect = f"it had {verb} {done} of {total} matching documents{which}"
        return OutcomeUnknownError(
            f"{exc}; {effect}. It was not resent: check the documents before running it again",
            index=self.spec.alias,
            error_type=UNKNOWN,
            reason=str(exc),
        )

    def _cancelled(self, exc: TaskCancelled, again: str) -> OutcomeUnknownError:
        """The error of a by-query request whose task someone else cancelled (an operator,
        another process): it wrote ``exc.done`` of ``exc.total`` matches before it
        stopped, which ones is not known (``error_type`` ``task_cancelled``); ``again``
        says whether running the call again is safe. It is not run again here: whoever
        cancelled it meant it to stop."""
        return OutcomeUnknownError(
            f"{exc}. Which matching documents were written is not known; {again}",
            index=self.spec.alias,
            error_type=_CANCELLED,
            reason=f"task cancelled: {exc.reason}",
        )

    def _removal_unknown(
        self, lost: TaskStartUnknown, last: Exception | None
    ) -> OutcomeUnknownError:
        """A delete-by-query whose answer was lost and whose re-runs did not complete:
        some or all matches may be deleted (raising the re-run's own error would say
        "nothing was")."""
        then = f"; running it again failed: {last}" if last is not None else ""
        return OutcomeUnknownError(
            f"remove_all on {self.info.name}: the delete-by-query was sent but no answer "
            f"came back ({lost.cause}){then}; {_MAY_HAVE_DELETED}",
            index=self.spec.alias,
            error_type=UNKNOWN,
            reason=str(lost.cause),
        )


def _answer_error(exc: ApiError) -> object:
    """The ``error`` object of a refused request's answer (``None``: it has none)."""
    body = exc.body
    return body.get("error") if isinstance(body, dict) else None


def _failure(item: dict[str, Any], what: str) -> BulkItemFailure:
    """One entry of a by-query answer's ``failures``: a document (``id``, ``cause``) or a
    shard (``shard``, ``reason``)."""
    cause = item.get("cause") if isinstance(item.get("cause"), dict) else item.get("reason")
    cause = cause if isinstance(cause, dict) else {"reason": str(cause)}
    return BulkItemFailure(
        id=None if item.get("id") is None else str(item["id"]),
        index=item.get("index"),
        op="delete" if what == "delete_by_query" else "update",
        status=int(item.get("status") or 0),
        error_type=cause.get("type"),
        reason=cause.get("reason"),
    )
