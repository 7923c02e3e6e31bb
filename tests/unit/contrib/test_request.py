"""esmapper.contrib._request: the one rule every web integration ends a request's session
by, and the HTTP status and JSON body of the esmapper errors."""

from __future__ import annotations

from typing import Any

import pytest

import esmapper as em
from esmapper.contrib._request import (
    RequestSession,
    checked_options,
    commit_on_success,
    error_body,
    error_status,
)


class FakeSession:
    def __init__(self, log: list[str], fail_commit: bool = False) -> None:
        self.log = log
        self.fail_commit = fail_commit

    def commit(self) -> None:
        self.log.append("commit")
        if self.fail_commit:
            raise em.VersionConflictError("stale")

    def rollback(self) -> None:
        self.log.append("rollback")

    def close(self) -> None:
        self.log.append("close")


class FakeMapper:
    def __init__(self, fail_commit: bool = False) -> None:
        self.log: list[str] = []
        self.options: dict[str, Any] = {}
        self.fail_commit = fail_commit

    def session(self, **options: Any) -> FakeSession:
        self.options = options
        return FakeSession(self.log, self.fail_commit)


def opened(fail_commit: bool = False) -> tuple[RequestSession, list[str]]:
    mapper = FakeMapper(fail_commit)
    held = RequestSession.open(mapper, {"consistency": "wait"})  # type: ignore[arg-type]
    assert mapper.options == {"consistency": "wait"}
    return held, mapper.log


@pytest.mark.parametrize(("status", "commits"), [(200, True), (303, True), (399, True)])
def test_a_success_or_a_redirect_commits(status: int, commits: bool) -> None:
    assert commit_on_success(status) is commits


@pytest.mark.parametrize("status", [400, 404, 409, 422, 500])
def test_an_error_status_rolls_back(status: int) -> None:
    assert commit_on_success(status) is False


def test_settled_once_then_closed() -> None:
    held, log = opened()
    held.settle(commit=True)
    held.settle(commit=False)  # nothing: already settled
    held.end()
    assert log == ["commit", "close"]


def test_unsettled_the_end_commits_without_an_error_and_rolls_back_with_one() -> None:
    held, log = opened()
    held.end()
    other, other_log = opened()
    other.end(RuntimeError("boom"))
    assert (log, other_log) == (["commit", "close"], ["rollback", "close"])


def test_a_failing_commit_is_not_retried_and_the_session_is_closed() -> None:
    held, log = opened(fail_commit=True)
    with pytest.raises(em.VersionConflictError):
        held.settle(commit=True)
    held.end(em.VersionConflictError("stale"))
    assert log == ["commit", "close"]
    unsettled, unsettled_log = opened(fail_commit=True)
    with pytest.raises(em.VersionConflictError):
        unsettled.end()  # the commit of the end raises after the close
    assert unsettled_log == ["commit", "close"]


def test_the_with_statement_is_the_whole_rule() -> None:
    held, log = opened()
    with held:
        held.settle(commit=commit_on_success(404))
    assert log == ["rollback", "close"]
    failing, failing_log = opened()
    with pytest.raises(RuntimeError), failing:
        raise RuntimeError("the view failed")
    assert failing_log == ["rollback", "close"]
    conflicting, conflicting_log = opened(fail_commit=True)
    with pytest.raises(em.VersionConflictError), conflicting:
        conflicting.settle(commit=True)
    assert conflicting_log == ["commit", "close"]


def test_options_are_checked_at_set_up() -> None:
    assert checked_options({"consistency": "wait"}) == {"consistency": "wait"}
    with pytest.raises(TypeError, match="unknown option"):
        checked_options({"colour": "blue"})
    with pytest.raises(ValueError, match="consistency"):
        checked_options({"consistency": "soon"})


def test_error_statuses() -> None:
    assert error_status(em.DocumentNotFoundError("x")) == 404
    assert error_status(em.VersionConflictError("stale")) == 409
    assert error_status(em.DuplicateDocumentError("exists")) == 409
    assert error_status(em.DocumentValidationError("bad", field="email")) == 422
    assert error_status(em.QueryValidationError("bad")) == 422
    assert error_status(em.OutcomeUnknownError("lost")) is None
    assert error_status(ValueError("not ours")) is None


def test_error_bodies_name_ids_and_fields_never_the_index() -> None:
    missing = em.DocumentNotFoundError("e1", index="prod-employees-v3")
    assert error_body(missing) == {
        "detail": 'Document "e1" could not be found',
        "error": "DocumentNotFoundError",
        "ids": ["e1"],
    }
    invalid = em.DocumentValidationError("bad e-mail", field="email", ids=[None])
    assert error_body(invalid) == {
        "detail": "bad e-mail",
        "error": "DocumentValidationError",
        "field": "email",
    }
    query = em.QueryValidationError("Unknown field 'x'", field="x", position=3)
    assert error_body(query) == {
        "detail": "Unknown field 'x'",
        "error": "QueryValidationError",
        "field": "x",
        "position": 3,
    }
