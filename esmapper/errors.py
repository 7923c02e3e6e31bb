"""The exceptions esmapper raises: every one of them is defined here.

Every error the library raises on purpose derives from :class:`EsmapperError`::

    EsmapperError
     +-- DocumentError                 a write or read of one or more documents failed
     |    +-- DocumentNotFoundError    the document does not exist (patch, strict reads)
     |    +-- DuplicateDocumentError   ``add`` of an id that already exists (409 on create)
     |    +-- VersionConflictError     a stale ``version`` (409 on if_seq_no/if_primary_term)
     |    +-- DocumentValidationError  a value cannot be mapped or a validator refused it
     |    +-- ScriptError              a patch's Painless script does not compile or failed
     |    |                            while running (the script's line and position)
     |    +-- OutcomeUnknownError      a write was sent, no answer came back, and reading
     |    |                            the document back could not tell whether it applied
     |    +-- BulkRequestError         a whole ``_bulk`` request was rejected or garbled
     +-- BulkWriteError                some items of a bulk write failed (see ``.failures``)
     +-- SessionClosedError            the session was closed; open a new one
     +-- QueryValidationError          a filter, sort or aggregation is invalid (also ValueError)
     +-- SnapshotExpiredError          a scan's point in time is gone (keep-alive ran out or
     |                                 it was closed); says how far the scan got
     +-- AsyncSearchNotFoundError      the cluster keeps no async search of that id (expired,
     |                                 deleted or wrong)
     +-- PartialResultsError           some shards did not answer a search or count (a failed
     |                                 shard, a timeout): carries what the others answered
     +-- IdTooLongError                a document id exceeds 512 UTF-8 bytes (also ValueError)
     +-- InvalidIdTermError            an id term holds an unpaired surrogate (also ValueError)
     +-- IndexConfigurationError       an index or alias cannot be configured as declared
     |    +-- AliasNameTakenError      a concrete index holds the name of a model's alias
     +-- IndexMaxAgeExceededError      a time-series write older than max_age (also ValueError)
     +-- MigrationError                a migration failed or cannot run
     |    +-- ReindexError             a version reindex failed (``.result`` tells how far)
     |    +-- MigrationCancelled       a migration stopped because the run was cancelled
     +-- JobError                      a job cannot do its work as asked
     +-- JobCancelled                  a job stopped at a checkpoint because it was cancelled
     +-- WorkItemError                 a reindex work item this worker cannot run (another
     |                                 release's; also ValueError)
     +-- LockError                     a lock could not be acquired, renewed or released
     +-- RedisUnavailable              Redis did not answer (the cache and bus fall back)
     +-- ServerStartError              a test server did not start (also RuntimeError)
     +-- ServerUnreachableError        Elasticsearch could not be connected to (refused, host
                                       name unknown): names the URL and what to check (also
                                       the client's elastic_transport.ConnectionError)

Errors carry what is known about the failure: ``index``, ``ids``, and the server's
``error_type`` and ``reason`` (e.g. ``version_conflict_engine_exception``). Errors of
several items (:class:`DocumentError`, :class:`BulkWriteError`, :class:`ReindexError`)
share :class:`FailuresMixin`: ``failures``, ``succeeded`` and ``conflicts``.

Every error survives ``pickle`` (a process pool or a job queue can hand it back) with
all its attributes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import attrs
from elastic_transport import ConnectionError as TransportConnectionError

if TYPE_CHECKING:
    from esmapper.bulk import BulkOutcome

__all__ = [
    "AliasNameTakenError",
    "AsyncSearchNotFoundError",
    "BulkItemFailure",
    "BulkRequestError",
    "BulkWriteError",
    "DocumentError",
    "DocumentNotFoundError",
    "DocumentValidationError",
    "DuplicateDocumentError",
    "EsmapperError",
    "FailuresMixin",
    "IdTooLongError",
    "IndexConfigurationError",
    "IndexMaxAgeExceededError",
    "InvalidIdTermError",
    "JobCancelled",
    "JobError",
    "LockError",
    "MigrationCancelled",
    "MigrationError",
    "OutcomeUnknownError",
    "PartialResultsError",
    "QueryValidationError",
    "RedisUnavailable",
    "ReindexError",
    "ScriptError",
    "ServerStartError",
    "ServerUnreachableError",
    "SessionClosedError",
    "SnapshotExpiredError",
    "VersionConflictError",
    "WorkItemError",
]


class EsmapperError(Exception):
    """Root of every error esmapper raises on purpose.

    ``index`` is the index or alias involved, ``ids`` the document ids, ``error_type`` and
    ``reason`` the server's error (``None`` when the error was detected client-side).
    """

    def __init__(
        self,
        message: str,
        *,
        index: str | None = None,
        ids: Iterable[str | None] = (),
        error_type: str | None = None,
        reason: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.index = index
        self.ids: tuple[str | None, ...] = tuple(ids)
        self.error_type = error_type
        self.reason = reason

    @property
    def id(self) -> str | None:
        """The first (usually only) document id involved, if any."""
        return self.ids[0] if self.ids else None

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> tuple[Any, ...]:
        # BaseException pickles as ``cls(*self.args)``, which cannot call an __init__ with
        # keyword-only arguments: rebuild without __init__ and restore the attributes.
        return (_rebuild, (type(self), self.args), self.__dict__.copy())


def _rebuild(cls: type[BaseException], args: tuple[Any, ...]) -> BaseException:
    """An instance of ``cls`` with ``args`` and no __init__ run (unpickling; the state
    is restored next)."""
    return cls.__new__(cls, *args)


F = TypeVar("F")


class FailuresMixin(Generic[F]):
    """The per-item failures of an error about several items.

    ``failures`` lists the failed items, ``succeeded`` the items that were applied
    before the error was raised, ``conflicts`` the failures with status 409 (a version
    conflict or a duplicate id).
    """

    failures: list[F]
    succeeded: list[Any]

    def _set_failures(self, failures: Iterable[F], succeeded: Iterable[Any] = ()) -> None:
        self.failures = list(failures)
        self.succeeded = list(succeeded)

    @staticmethod
    def _status(failure: F) -> int | None:
        """The HTTP status of one failure (overridden for failures of another shape)."""
        return failure.status if isinstance(failure, BulkItemFailure) else None

    @property
    def conflicts(self) -> list[F]:
        """The failures with status 409."""
        return [f for f in self.failures if self._status(f) == 409]


class DocumentError(FailuresMixin["BulkItemFailure"], EsmapperError):
    """A document operation failed (the server's error type and reason are attached).

    When raised by a multi-document write, ``failures`` lists the failed items
    (:class:`BulkItemFailure`), ``succeeded`` the documents that were written (and fully
    processed) before the error was raised, and ``conflicts`` the 409 failures.
    """

    def __init__(
        self,
        message: str,
        *,
        failures: Sequence[BulkItemFailure] = (),
        succeeded: Sequence[Any] = (),
        **kwargs: Any,
    ) -> None:
        super().__init__(message, **kwargs)
        self._set_failures(failures, succeeded)


class DocumentNotFoundError(DocumentError):
    """The document does not exist. ``str(err)`` is ``Document "<id>" could not be found``;
    for a document looked up by something else than its id (a custom field by its name),
    ``what`` says what is missing and is the message itself (``ids`` is then empty)."""

    def __init__(
        self, id: str, *, index: str | None = None, what: str | None = None, **kwargs: Any
    ) -> None:
        if what is not None:
            super().__init__(what, index=index, ids=[], **kwargs)
            return
        super().__init__(f'Document "{id}" could not be found', index=index, ids=[id], **kwargs)


class DuplicateDocumentError(DocumentError):
    """``add`` met an existing id: the stored document was left unchanged."""


class VersionConflictError(DocumentError):
    """The document changed since it was read (its ``version`` is stale); never retried."""


class OutcomeUnknownError(DocumentError):
    """A write was sent but its answer was lost (dropped connection, timeout, unreadable
    response), and reading the document back could not decide whether it was applied (a
    script update without a version condition). It was not resent: read the document and
    decide. In a multi-document write such items are failures with status 0 and
    ``error_type == "outcome_unknown"``."""


class DocumentValidationError(DocumentError, ValueError):
    """A document failed validation: ``field`` names the attribute, when one is to blame;
    ``errors`` lists the messages of an ``Index.validator`` (the message joins them with
    ``"; "``), empty otherwise."""

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        errors: Sequence[str] = (),
        **kwargs: Any,
    ) -> None:
        super().__init__(message, **kwargs)
        self.field = field
        self.errors = list(errors)


class ScriptError(DocumentError, ValueError):
    """Elasticsearch refused a patch's script: it does not compile (``reason`` is
    ``"compile error"``: nothing was written), or it failed while running on a document
    (``"runtime error"``: a ``patch_all`` update-by-query stops at that document and keeps
    what it patched before, which the message says). ``error_type`` is
    ``script_exception``.

    ``script`` is the script's source, ``lang`` its language, ``position`` the 0-based
    character offset in ``script`` where the server located the error (``None`` when it
    did not say), ``line`` and ``column`` that place as 1-based numbers, ``script_stack``
    the server's excerpt around it (lines ending with a ``^---- HERE`` marker), and
    ``cause`` the server's explanation (``invalid sequence of tokens near [';'].``). The
    message quotes the script's line with a caret under the position. A patch of several
    documents lists them in ``failures``, as :class:`DocumentError` does.
    """

    def __init__(
        self,
        message: str,
        *,
        script: str | None = None,
        lang: str | None = None,
        position: int | None = None,
        script_stack: Sequence[str] = (),
        cause: str | None = None,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("error_type", "script_exception")
        super().__init__(message, **kwargs)
        self.script = script
        self.lang = lang
        self.position = position
        self.script_stack = list(script_stack)
        self.cause = cause

    @property
    def line(self) -> int | None:
        """The 1-based line of ``script`` holding ``position`` (``None``: not known)."""
        if self.script is None or self.position is None:
            return None
        return self.script.count("\n", 0, self.position) + 1

    @property
    def column(self) -> int | None:
        """The 1-based column of ``position`` in its :attr:`line`."""
        if self.script is None or self.position is None:
            return None
        return self.position - (self.script.rfind("\n", 0, self.position) + 1) + 1

    @classmethod
    def of_answer(
        cls, error: object, *, call: str, script: str | None = None, **kwargs: Any
    ) -> ScriptError | None:
        """The error an Elasticsearch error object (an answer's ``error``, a bulk item's, a
        task's) says when it holds a ``script_exception`` (itself, in its ``caused_by``
        chain or its ``root_cause``), else ``None``. ``call`` starts the message
        (``"patch_all on Employee"``); ``script`` is the source sent (else the answer's);
        ``kwargs`` go to the constructor (``index``, ``ids``, ``failures``...)."""
        found = _script_exception(error)
        if found is None:
            return None
        reason = str(found.get("reason") or "script error")
        caused_by = found.get("caused_by")
        cause = str(caused_by.get("reason")) if isinstance(caused_by, Mapping) else None
        lang = str(found.get("lang") or "painless")
        source = script if script is not None else _answer_source(found.get("script"))
        place = found.get("position")
        offset = place.get("offset") if isinstance(place, Mapping) else None
        position = offset if isinstance(offset, int) and not isinstance(offset, bool) else None
        if source is not None and position is not None and not 0 <= position <= len(source):
            position = None
        stack = [str(line) for line in found.get("script_stack") or () if line is not None]
        error_out = cls(
            "",
            script=source,
            lang=lang,
            position=position,
            script_stack=stack,
            cause=cause,
            reason=reason,
            **kwargs,
        )
        what = {"compile error": "does not compile", "runtime error": "failed while running"}
        message = f"{call}: the {lang} script {what.get(reason, f'was refused ({reason})')}"
        if cause:
            message += f": {cause}"
        line, column = error_out.line, error_out.column
        if source is not None and line is not None and column is not None:
            # the line counted at "\n" (splitlines() splits at more, and drops an empty
            # last line: an error at the end of a script ending with a newline is there)
            text = source.split("\n")[line - 1].removesuffix("\r")
            message += f"\nat line {line}, column {column}:\n    {text}\n    {' ' * (column - 1)}^"
        elif stack:
            message += "\n" + "\n".join(f"    {row}" for row in stack)
        error_out.message = message
        error_out.args = (message,)
        return error_out


def _script_exception(error: object) -> Mapping[str, Any] | None:
    """The first ``script_exception`` in ``error``, its causes and root causes."""
    queue = [error]
    while queue:
        item = queue.pop(0)
        if not isinstance(item, Mapping):
            continue
        if item.get("type") == "script_exception":
            return item
        queue.append(item.get("caused_by"))
        roots = item.get("root_cause")
        if isinstance(roots, list):
            queue.extend(roots)
    return None


def _answer_source(script: object) -> str | None:
    """The source of an answer's ``script``: the source itself (Elasticsearch), or the
    script object as JSON (``{"source": ...}``, as some servers answer)."""
    if not isinstance(script, str):
        return None
    if script.startswith("{"):
        try:
            parsed = json.loads(script)
        except ValueError:
            return script
        source = parsed.get("source") if isinstance(parsed, Mapping) else None
        if isinstance(source, str):
            return source
    return script


@attrs.define(frozen=True, slots=True)
class BulkItemFailure:
    """One failed item of a bulk write.

    ``document`` is the model instance when the failure belongs to one (``None`` for raw
    actions); ``status`` is the HTTP status of the item (409 for conflicts and duplicates).
    """

    id: str | None
    index: str | None
    op: str
    status: int
    error_type: str | None
    reason: str | None
    document: Any = None

    @property
    def is_conflict(self) -> bool:
        return self.status == 409

    @property
    def is_unknown(self) -> bool:
        """The write was sent but whether it was applied is unknown (status 0)."""
        return self.status == 0


class BulkWriteError(FailuresMixin[BulkItemFailure], EsmapperError):
    """Some items of a bulk write failed; the others were applied.

    ``failures`` lists every failed item (:class:`BulkItemFailure`), ``succeeded`` the
    documents (or ids) the server confirmed, ``conflicts`` the 409 failures among them.
    """

    def __init__(
        self,
        failures: Sequence[BulkItemFailure],
        succeeded: Sequence[Any] = (),
        *,
        message: str | None = None,
    ) -> None:
        self._set_failures(failures, succeeded)
        first = self.failures[0] if self.failures else None
        if message is None:
            total = len(self.failures) + len(self.succeeded)
            message = f"{len(self.failures)} of {total} bulk items failed"
            if first is not None:
                message += (
                    f"; first: id={first.id!r} index={first.index!r} status={first.status} "
                    f"{first.error_type}: {first.reason}"
                )
        super().__init__(
            message,
            index=first.index if first else None,
            ids=[f.id for f in self.failures],
            error_type=first.error_type if first else None,
            reason=first.reason if first else None,
        )


class QueryValidationError(EsmapperError, ValueError):
    """A filter, sort or aggregation expression is invalid; raised before any request.

    ``field`` names the offending field and ``position`` the 0-based character offset in
    the expression, when known.
    """

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        position: int | None = None,
        expression: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(message, **kwargs)
        self.field = field
        self.position = position
        self.expression = expression


class SnapshotExpiredError(EsmapperError):
    """The point in time a scan pages through is gone: its keep-alive ran out between two
    page requests (a batch took longer than ``snapshot=``), it was closed, or its index
    was deleted. The next page cannot be read from it; nothing after the pages already
    delivered was read.

    ``processed`` is the number of documents on the ``pages`` pages delivered before the
    loss (for ``batch_process``: the documents the callback was given), ``last_sort`` the
    sort values of the last of them and ``search_after`` the same as a token: pass it as
    ``search_after=`` with the same filter and sort to continue after that document in a
    new point in time. ``keep_alive`` is the lifetime that was asked for; ``error_type``
    and ``reason`` are the server's (usually ``search_context_missing_exception``).
    """

    def __init__(
        self,
        message: str,
        *,
        processed: int,
        pages: int,
        last_sort: Sequence[Any] | None,
        search_after: str | None,
        keep_alive: str,
        **kwargs: Any,
    ) -> None:
        super().__init__(message, **kwargs)
        self.processed = processed
        self.pages = pages
        self.last_sort = None if last_sort is None else list(last_sort)
        self.search_after = search_after
        self.keep_alive = keep_alive


class AsyncSearchNotFoundError(EsmapperError):
    """The async search an id names is not kept by the cluster: its ``keep_alive`` ran out,
    it was deleted, or the id is wrong (Elasticsearch answers 404
    ``resource_not_found_exception``). ``async_id`` is the id asked for; its results are
    gone, submit the search again."""

    def __init__(self, message: str, *, async_id: str, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.async_id = async_id


class PartialResultsError(EsmapperError):
    """Some shards did not answer a search, a scroll page or a count: a node left or was
    too busy (``_shards.failed``), or a shard ran out of time (``timed_out``).
    Elasticsearch answers such a search with status 200 and what the other shards found,
    so its hits, total, count and aggregations miss documents silently; esmapper refuses
    it instead (or the server refused it: ``allow_partial_search_results=false``).

    ``shards`` (:class:`~esmapper.results.Shards`) says how many shards answered and which
    failed, with the server's reasons (``error_type``/``reason`` are the first failure's,
    ``index`` the index or alias searched). ``results`` is what the shards that answered
    gave, built as the call returns it (a ``FindResults`` page, a ``Count``,
    ``Aggregations``, ``False`` for ``exists``), ``None`` when the server refused to answer
    in part; it is not pickled. A read that can live with missing documents passes
    ``partial_results=True`` and reads ``results.partial`` instead. A listing esmapper
    runs to decide writes (a reindex, a by-query write's scan) always raises this: it
    never takes a document that was not listed for one that does not exist.
    """

    def __init__(self, message: str, *, shards: Any, results: Any = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.shards = shards
        self.results = results

    def __reduce__(self) -> tuple[Any, ...]:
        # a page of results holds the mapper and its client: not sent along
        state = self.__dict__.copy()
        if not isinstance(state.get("results"), int | type(None)):
            state["results"] = None
        return (_rebuild, (type(self), self.args), state)


class IdTooLongError(EsmapperError, ValueError):
    """An id exceeds Elasticsearch's 512-byte ``_id`` limit (counted in encoded UTF-8 bytes).

    ``limit`` is 512, ``actual`` the encoded size, ``terms`` the encoded byte length of each
    term and ``longest_term`` the index of the longest one (the one to shorten).
    """

    def __init__(
        self,
        message: str,
        *,
        limit: int,
        actual: int,
        terms: Sequence[int] = (),
        longest_term: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(message, **kwargs)
        self.limit = limit
        self.actual = actual
        self.terms = tuple(terms)
        self.longest_term = longest_term


class InvalidIdTermError(EsmapperError, ValueError):
    """An id term contains an unpaired surrogate (a string was cut mid-character upstream)."""

    def __init__(self, message: str, *, term_index: int | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.term_index = term_index


class IndexConfigurationError(EsmapperError):
    """An index, alias or mapping cannot be configured as the model declares it."""


class AliasNameTakenError(IndexConfigurationError):
    """A concrete index holds a name esmapper needs for an alias (``index``).

    Elasticsearch creates a missing index on the first write to its name (unless the
    cluster's ``action.auto_create_index`` says otherwise), with mappings guessed from that
    document: a write through the alias before the alias existed, by another program or an
    older esmapper, leaves such an index. esmapper never writes to it and never deletes it;
    the message says how to move its documents and free the name.
    """


class IndexMaxAgeExceededError(EsmapperError, ValueError):
    """A write into a time-series partition older than the model's ``Index.max_age``.

    Raised before anything is sent: the partition is never recreated
    silently. The message starts with ``"Index max age exceeded"``; ``index`` is the
    partition's dated alias and ``ids`` the document id.
    """


class MigrationError(EsmapperError):
    """A migration failed, or the migration plan cannot run."""


class ReindexError(FailuresMixin[dict[str, Any]], MigrationError):
    """A reindex failed; ``result`` (an ``esmapper.indexes.ReindexResult``) tells how far
    it got.

    Before the alias swap (``result.swapped`` is false) the old index still serves behind
    the alias and the new one was deleted (or kept with ``keep_failed_index=True``).
    ``failures`` holds Elasticsearch's per-document failures (``index``, ``id``,
    ``status``, ``cause``) or the error of the whole request; ``succeeded`` is empty
    (a reindex reports counts, not documents).
    """

    def __init__(self, message: str, *, result: Any) -> None:
        failures: tuple[dict[str, Any], ...] = tuple(result.failures)
        first = failures[0] if failures else {}
        cause = first.get("cause")
        if not isinstance(cause, dict):
            cause = {}
        super().__init__(
            message,
            index=result.new_index,
            ids=[str(f["id"]) for f in failures if f.get("id") is not None],
            error_type=cause.get("type") or first.get("type"),
            reason=cause.get("reason") or first.get("reason"),
        )
        self.result = result
        self._set_failures(failures)

    @staticmethod
    def _status(failure: dict[str, Any]) -> int | None:
        status = failure.get("status")
        return status if isinstance(status, int) else None


class LockError(EsmapperError):
    """A lock could not be acquired, renewed or released."""


class SessionClosedError(EsmapperError):
    """The session was closed; open a new one."""


class BulkRequestError(DocumentError):
    """A whole ``_bulk`` request was rejected (a status other than 429/503) or garbled.

    ``status`` is the HTTP status (0 when the response was unusable), ``ids`` the ids of
    the rejected request's actions. ``outcomes`` holds every outcome known when the error
    was raised, in input order (the earlier chunks, plus items of the current chunk that
    were answered before a retry of the others was rejected): process them like any other
    write's outcomes. Actions without an outcome were not applied, except that with
    ``status`` 0 (a response with the wrong number of items) the rejected request's
    actions may have been.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int,
        outcomes: Sequence[BulkOutcome] = (),
        **kwargs: Any,
    ) -> None:
        super().__init__(message, **kwargs)
        self.status = status
        self.outcomes = list(outcomes)


class MigrationCancelled(MigrationError):
    """Raised by a migration (``ctx.raise_if_cancelled()``) that stopped because the run was
    cancelled; the migration is recorded as failed and ``migrate`` returns ``CANCELLED``."""


class JobError(EsmapperError):
    """A job cannot do its work as asked (an unknown snapshot repository, a snapshot name
    taken, a snapshot that failed); its result is ``failed`` with this as ``error``."""


class WorkItemError(EsmapperError, ValueError):
    """A reindex work item this worker cannot run: no model of its mapper has the item's
    alias, or the model's target version, script or timestamp field differ from the
    item's (a worker of another release); raised before anything is sent.

    ``foreign`` is ``True`` when the item is for another worker: no model of this mapper
    has its alias (another application on the same queue) or its target is a newer version
    than this worker's model (a worker of a newer release). A
    :class:`~esmapper.jobs.ReindexWorker` releases such an item without counting the
    attempt (:meth:`~esmapper.jobs.WorkQueue.release`); other refusals count, so an item
    of an older release ends in the failed items."""

    def __init__(self, message: str, *, foreign: bool = False, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.foreign = foreign


class JobCancelled(EsmapperError):
    """Raised by ``JobContext.checkpoint`` when the run was asked to stop; its text
    becomes the cancelled result's message."""


class RedisUnavailable(EsmapperError):
    """Redis did not answer (or the link is backing off after a failure); the Redis cache
    and bus catch it and fall back."""


class ServerStartError(EsmapperError, RuntimeError):
    """A test server could not be started, or never answered ``GET /_cluster/health``."""


class ServerUnreachableError(EsmapperError, TransportConnectionError):
    """No connection to Elasticsearch could be made (after the client's retries): the
    connection was refused (nothing listens at that host and port) or the host name does
    not resolve. The message names the URL(s) and what to check; ``urls`` lists them,
    ``cause`` says which failure it was, and ``errors`` keeps the client's errors of each
    attempt. It is also the client's ``elastic_transport.ConnectionError`` (a
    ``TransportError``), so code catching the client's errors still does. Raised by the
    clients a :class:`~esmapper.mapper.Mapper` makes from URLs (a client handed to the
    Mapper raises its own errors)."""

    def __init__(
        self,
        message: str,
        *,
        urls: Sequence[str] = (),
        cause: str | None = None,
        errors: Sequence[Exception] = (),
        **kwargs: Any,
    ) -> None:
        super().__init__(message, **kwargs)
        self.urls = list(urls)
        self.cause = cause
        self.errors = tuple(errors)
