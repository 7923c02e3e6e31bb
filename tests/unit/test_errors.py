"""Every exception lives in ``esmapper.errors``, is in its docstring tree, and survives pickle."""

from __future__ import annotations

import inspect
import pickle
from collections.abc import Callable
from typing import Any

import pytest

import esmapper as em
from esmapper import errors
from esmapper.bulk import BulkAction, BulkOutcome
from esmapper.indexes import ReindexResult
from esmapper.results import Count, ShardFailure, Shards


class Note(em.Document):
    class Index:
        name = "notes"

    title: str = ""


def _failure(id: str, status: int, document: Any = None) -> errors.BulkItemFailure:
    return errors.BulkItemFailure(
        id=id,
        index="notes-v1",
        op="create" if status == 409 else "index",
        status=status,
        error_type="version_conflict_engine_exception" if status == 409 else "mapper_exception",
        reason=f"[{id}]: failed",
        document=document,
    )


def _reindex_result() -> ReindexResult:
    return ReindexResult(
        model="Note",
        alias="notes",
        old_index="notes-v1",
        new_index="notes-v2",
        status="failed",
        copied=3,
        failures=(
            {
                "index": "notes-v2",
                "id": "n1",
                "status": 400,
                "cause": {"type": "mapper_parsing_exception", "reason": "bad date"},
            },
            {"index": "notes-v2", "id": "n2", "status": 409, "cause": {"type": "conflict"}},
        ),
    )


#: A realistic instance of every exception class of ``esmapper.errors``.
EXAMPLES: dict[type[BaseException], Callable[[], BaseException]] = {
    errors.EsmapperError: lambda: errors.EsmapperError(
        "boom", index="notes", ids=["a", None], error_type="x", reason="y"
    ),
    errors.DocumentError: lambda: errors.DocumentError(
        "2 of 3 writes failed",
        failures=[_failure("a", 409, Note(id="a", title="A")), _failure("b", 400)],
        succeeded=[Note(id="c", title="C")],
        index="notes",
        ids=["a", "b"],
    ),
    errors.DocumentNotFoundError: lambda: errors.DocumentNotFoundError("n1", index="notes"),
    errors.DuplicateDocumentError: lambda: errors.DuplicateDocumentError(
        'Document "n1" already exists',
        failures=[_failure("n1", 409)],
        ids=["n1"],
        error_type="version_conflict_engine_exception",
    ),
    errors.VersionConflictError: lambda: errors.VersionConflictError(
        "stale version", ids=["n1"], index="notes", reason="seq_no mismatch"
    ),
    errors.DocumentValidationError: lambda: errors.DocumentValidationError(
        "title: must be a str", field="title", ids=["n1"]
    ),
    errors.ScriptError: lambda: errors.ScriptError(
        "patch_all on Note: the painless script does not compile",
        script="ctx._source.n = ;",
        lang="painless",
        position=16,
        script_stack=["ctx._source.n = ;", "                ^---- HERE"],
        cause="invalid sequence of tokens near [';'].",
        reason="compile error",
        index="notes",
    ),
    errors.OutcomeUnknownError: lambda: errors.OutcomeUnknownError(
        "no answer", ids=["n1"], error_type="outcome_unknown"
    ),
    errors.BulkRequestError: lambda: errors.BulkRequestError(
        "_bulk answered 413",
        status=413,
        outcomes=[
            BulkOutcome(
                action=BulkAction("index", "notes", "n1", {"title": "A"}),
                ok=True,
                status=201,
                id="n1",
                index="notes-v1",
                result="created",
            )
        ],
        ids=["n2"],
    ),
    errors.BulkWriteError: lambda: errors.BulkWriteError(
        [_failure("a", 409), _failure("b", 400)], succeeded=["c"]
    ),
    errors.SessionClosedError: lambda: errors.SessionClosedError("this session is closed"),
    errors.QueryValidationError: lambda: errors.QueryValidationError(
        "unknown field 'nope'", field="nope", position=3, expression="x: nope:1"
    ),
    errors.AsyncSearchNotFoundError: lambda: errors.AsyncSearchNotFoundError(
        "no async search 'FmRl'", async_id="FmRl", error_type="resource_not_found_exception"
    ),
    errors.SnapshotExpiredError: lambda: errors.SnapshotExpiredError(
        "the point in time is gone",
        processed=200,
        pages=2,
        last_sort=[17, "n200"],
        search_after="WzE3LCJuMjAwIl0",
        keep_alive="1m",
        error_type="search_context_missing_exception",
    ),
    errors.PartialResultsError: lambda: errors.PartialResultsError(
        "the count of notes is incomplete",
        shards=Shards(
            total=3,
            successful=2,
            failed=1,
            failures=(ShardFailure("notes-v1", 0, "n2", "node_disconnected_exception", "gone"),),
        ),
        results=Count(7, Shards(total=3, successful=2, failed=1)),
        index="notes",
        error_type="node_disconnected_exception",
    ),
    errors.IdTooLongError: lambda: errors.IdTooLongError(
        "id is 600 bytes", limit=512, actual=600, terms=(10, 590), longest_term=1
    ),
    errors.InvalidIdTermError: lambda: errors.InvalidIdTermError(
        "term 1 holds an unpaired surrogate", term_index=1
    ),
    errors.IndexConfigurationError: lambda: errors.IndexConfigurationError(
        "mapping conflict", index="notes-v1"
    ),
    errors.AliasNameTakenError: lambda: errors.AliasNameTakenError(
        "an index is named notes", index="notes"
    ),
    errors.IndexMaxAgeExceededError: lambda: errors.IndexMaxAgeExceededError(
        "Index max age exceeded", index="logs-2020.01", ids=["l1"]
    ),
    errors.MigrationError: lambda: errors.MigrationError("migration 3 failed"),
    errors.ReindexError: lambda: errors.ReindexError("reindex failed", result=_reindex_result()),
    errors.MigrationCancelled: lambda: errors.MigrationCancelled("the run was cancelled"),
    errors.JobError: lambda: errors.JobError("snapshot failed", error_type="PARTIAL"),
    errors.JobCancelled: lambda: errors.JobCancelled("cancelled before it finished"),
    errors.WorkItemError: lambda: errors.WorkItemError("reindex:items:items-v3: another release"),
    errors.LockError: lambda: errors.LockError("lock reindex is held", index="locks"),
    errors.RedisUnavailable: lambda: errors.RedisUnavailable("Redis at redis://x is unavailable"),
    errors.ServerStartError: lambda: errors.ServerStartError("port 9200 is already in use"),
    errors.ServerUnreachableError: lambda: errors.ServerUnreachableError(
        "cannot reach Elasticsearch at http://127.0.0.1:1: the connection was refused",
        urls=["http://127.0.0.1:1"],
        cause="refused",
        error_type="connection_refused",
    ),
}


def _exception_classes() -> list[type[BaseException]]:
    return [
        obj
        for name in errors.__all__
        if inspect.isclass(obj := getattr(errors, name)) and issubclass(obj, BaseException)
    ]


def test_every_exception_class_has_an_example() -> None:
    assert sorted(c.__name__ for c in EXAMPLES) == sorted(c.__name__ for c in _exception_classes())


def test_every_exception_is_in_the_docstring_tree() -> None:
    doc = errors.__doc__ or ""
    listed = [c for c in _exception_classes() if c is not errors.EsmapperError]
    assert [c.__name__ for c in listed if f"+-- {c.__name__} " not in doc] == []
    assert "\n    EsmapperError\n" in doc


def test_every_exception_derives_from_the_root() -> None:
    assert all(issubclass(c, errors.EsmapperError) for c in _exception_classes())


def test_no_exception_class_is_defined_outside_the_errors_module() -> None:
    import esmapper.bulk
    import esmapper.distributed.link
    import esmapper.jobs.base
    import esmapper.migrations.base
    import esmapper.session
    import esmapper.testing.base

    old_homes = {
        esmapper.bulk: "BulkRequestError",
        esmapper.session: "SessionClosedError",
        esmapper.jobs.base: "JobCancelled",
        esmapper.migrations.base: "MigrationCancelled",
        esmapper.distributed.link: "RedisUnavailable",
        esmapper.testing.base: "ServerStartError",
    }
    for module, name in old_homes.items():  # the old import paths still work
        assert getattr(module, name) is getattr(errors, name)
    for cls in _exception_classes():
        assert cls.__module__ == "esmapper.errors"


@pytest.mark.parametrize("cls", list(EXAMPLES), ids=lambda c: c.__name__)
def test_pickle_round_trip_keeps_every_attribute(cls: type[BaseException]) -> None:
    original = EXAMPLES[cls]()
    assert type(original) is cls
    copy = pickle.loads(pickle.dumps(original))
    assert type(copy) is cls
    assert str(copy) == str(original)
    assert copy.args == original.args
    assert copy.__dict__ == original.__dict__
    assert vars(original)  # there were attributes to keep
    if isinstance(original, errors.FailuresMixin):
        assert isinstance(copy, errors.FailuresMixin)
        assert copy.conflicts == original.conflicts


def test_failures_mixin_finds_conflicts_of_both_shapes() -> None:
    bulk = errors.BulkWriteError([_failure("a", 409), _failure("b", 400)], succeeded=["c"])
    assert [f.id for f in bulk.conflicts] == ["a"]
    assert bulk.succeeded == ["c"]
    assert str(bulk).startswith("2 of 3 bulk items failed; first: id='a'")
    doc = errors.DocumentError("x", failures=[_failure("a", 400)])
    assert doc.conflicts == []
    reindex = errors.ReindexError("reindex failed", result=_reindex_result())
    assert [f["id"] for f in reindex.conflicts] == ["n2"]
    assert reindex.succeeded == []
    assert (reindex.index, reindex.ids) == ("notes-v2", ("n1", "n2"))
    assert (reindex.error_type, reindex.reason) == ("mapper_parsing_exception", "bad date")


def test_a_pickled_value_error_is_still_a_value_error() -> None:
    copy = pickle.loads(pickle.dumps(EXAMPLES[errors.IdTooLongError]()))
    with pytest.raises(ValueError, match="600 bytes"):
        raise copy
