"""Whether an answer is complete (esmapper._shards): reading ``_shards``/``timed_out``, the
server's refusal of a partial answer, and the listings that decide writes (no server: a
fake client answers)."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from elastic_transport import ApiResponseMeta, HttpHeaders, NodeConfig, ObjectApiResponse
from elasticsearch import ApiError, BadRequestError

import esmapper as em
from esmapper import _shards
from esmapper.results import Count, ShardFailure, Shards

FAILED_SHARD = {
    "shard": 2,
    "index": "notes-v1",
    "node": "Xf3kQm9bT0-2yN7wq1cZgA",
    "reason": {"type": "node_disconnected_exception", "reason": "node left"},
}
PARTIAL = {"total": 3, "successful": 2, "skipped": 0, "failed": 1, "failures": [FAILED_SHARD]}
WHOLE = {"total": 3, "successful": 3, "skipped": 1, "failed": 0}


def meta(status: int) -> ApiResponseMeta:
    return ApiResponseMeta(
        status=status,
        http_version="1.1",
        headers=HttpHeaders(),
        duration=0.0,
        node=NodeConfig("http", "localhost", 9200),
    )


def answer(body: dict[str, Any], status: int = 200) -> ObjectApiResponse[Any]:
    return ObjectApiResponse(body=body, meta=meta(status))


def refused(status: int = 500, reason: str = "Partial shards failure") -> ApiError:
    body = {
        "error": {
            "root_cause": [FAILED_SHARD["reason"]],
            "type": "search_phase_execution_exception",
            "reason": reason,
            "phase": "query",
            "grouped": True,
            "failed_shards": [FAILED_SHARD],
        },
        "status": status,
    }
    return ApiError("search_phase_execution_exception", meta=meta(status), body=body)


def hits(*ids: str) -> dict[str, Any]:
    return {"hits": {"total": {"value": len(ids)}, "hits": [{"_id": i} for i in ids]}}


class FakeClient:
    """Answers ``search``/``scroll``/``count`` from queues; records the calls."""

    def __init__(self, **answers: list[Any]) -> None:
        self.answers = answers
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def _next(self, name: str, params: dict[str, Any]) -> Any:
        self.calls.append((name, params))
        value = self.answers[name].pop(0)
        if isinstance(value, Exception):
            raise value
        return answer(value)

    def search(self, **params: Any) -> Any:
        return self._next("search", params)

    def scroll(self, **params: Any) -> Any:
        return self._next("scroll", params)

    def count(self, **params: Any) -> Any:
        return self._next("count", params)

    def clear_scroll(self, **params: Any) -> Any:
        self.calls.append(("clear_scroll", params))
        return answer({})

    def options(self, **options: Any) -> FakeClient:
        return self


def test_a_complete_answer_reads_as_complete() -> None:
    shards = _shards.shards_of({"_shards": WHOLE, "timed_out": False})
    assert shards == Shards(total=3, successful=3, skipped=1, failed=0)
    assert shards.complete and str(shards) == "all 3 shard(s) answered"
    assert _shards.shards_of({"took": 1}).complete  # no _shards: nothing says otherwise


def test_a_failed_shard_is_read_with_its_reason() -> None:
    shards = _shards.shards_of({"_shards": PARTIAL, "timed_out": False})
    assert not shards.complete
    assert shards.failures == (
        ShardFailure("notes-v1", 2, "Xf3kQm9bT0-2yN7wq1cZgA", "node_disconnected_exception",
                     "node left"),
    )  # fmt: skip
    assert str(shards) == (
        "1 of 3 shard(s) failed: [notes-v1][2] on node Xf3kQm9bT0-2yN7wq1cZgA: "
        "node_disconnected_exception: node left"
    )


def test_a_timeout_is_incomplete_though_every_shard_succeeded() -> None:
    shards = _shards.shards_of({"_shards": WHOLE, "timed_out": True})
    assert shards.timed_out and not shards.complete
    assert "timed out" in str(shards)


def test_an_odd_failure_entry_is_read_as_far_as_it_goes() -> None:
    raw = {"_shards": {"total": 2, "failed": 1, "failures": [{"reason": "plain text"}, 7]}}
    shards = _shards.shards_of(raw)
    assert shards.failures[0] == ShardFailure(None, None, None, None, "plain text")
    assert shards.failures[1] == ShardFailure(None, None, None, None, None)
    assert str(shards.failures[1]) == "[?][?]: error: no reason given"


def test_require_complete_raises_with_what_was_answered() -> None:
    with pytest.raises(em.PartialResultsError) as raised:
        _shards.require_complete(
            {"_shards": PARTIAL}, what="the id listing of notes-v1", index="notes-v1", results=7
        )
    error = raised.value
    assert str(error).startswith("the id listing of notes-v1 is incomplete, refused: 1 of 3")
    assert (error.index, error.results, error.error_type, error.reason) == (
        "notes-v1",
        7,
        "node_disconnected_exception",
        "node left",
    )
    assert _shards.require_complete({"_shards": WHOLE}, what="x", index=None).total == 3


def test_the_servers_refusal_becomes_the_same_error() -> None:
    error = _shards.refusal(refused(), what="the search of notes", index="notes")
    assert isinstance(error, em.PartialResultsError)
    assert error.shards.failed == 1 and error.shards.failures[0].shard == 2
    assert "1 shard(s) failed" in str(error)  # the total is not in a refusal
    missing = _shards.refusal(
        refused(503, "Search rejected due to missing shards [[notes-v1][0]]."), what="x", index=None
    )
    assert missing is not None


def test_a_point_in_time_gone_on_a_shard_is_not_a_partial_answer() -> None:
    gone = refused(404)
    gone.body["error"]["failed_shards"][0]["reason"] = {
        "type": "search_context_missing_exception",
        "reason": "No search context found for id [7]",
    }
    assert _shards.refusal(gone, what="x", index=None) is None  # SnapshotExpiredError's


def test_other_search_errors_are_not_refusals() -> None:
    bad = refused(400, "all shards failed")  # e.g. a query that cannot be parsed
    assert _shards.refusal(bad, what="x", index=None) is None
    other = BadRequestError("x", meta=meta(400), body={"error": {"type": "parsing_exception"}})
    assert _shards.refusal(other, what="x", index=None) is None
    with pytest.raises(BadRequestError):
        _shards.sent(lambda: (_ for _ in ()).throw(other), what="x", index=None)


def test_search_all_asks_for_a_complete_answer_and_checks_it() -> None:
    client = FakeClient(search=[{**hits("a"), "_shards": WHOLE}, {**hits(), "_shards": PARTIAL}])
    found = _shards.search_all(client, what="x", index="notes", size=5)  # type: ignore[arg-type]
    assert found["hits"]["hits"] == [{"_id": "a"}]
    assert client.calls[0] == (
        "search",
        {"index": "notes", "allow_partial_search_results": False, "size": 5},
    )
    with pytest.raises(em.PartialResultsError):  # answered in part all the same
        _shards.search_all(client, what="x", index="notes")  # type: ignore[arg-type]


def test_search_all_turns_the_refusal_into_the_error() -> None:
    client = FakeClient(search=[refused()])
    with pytest.raises(em.PartialResultsError) as raised:
        _shards.search_all(client, what="the listing", index="notes")  # type: ignore[arg-type]
    assert isinstance(raised.value.__cause__, ApiError)


def test_count_all_carries_the_lower_count() -> None:
    client = FakeClient(count=[{"count": 9, "_shards": WHOLE}, {"count": 6, "_shards": PARTIAL}])
    assert _shards.count_all(client, what="x", index="notes") == 9  # type: ignore[arg-type]
    with pytest.raises(em.PartialResultsError) as raised:
        _shards.count_all(client, what="x", index="notes")  # type: ignore[arg-type]
    assert isinstance(raised.value.results, Count) and raised.value.results == 6
    assert raised.value.results.partial


def test_a_partial_scroll_page_stops_the_listing_and_clears_the_scroll() -> None:
    first = {**hits("a", "b"), "_scroll_id": "s1", "_shards": WHOLE}
    second = {**hits("c"), "_scroll_id": "s2", "_shards": PARTIAL}  # a page cannot ask
    client = FakeClient(search=[first], scroll=[second])
    pages = _shards.scroll_all(client, what="the ids", index="notes", size=2)  # type: ignore[arg-type]
    assert [h["_id"] for h in next(pages)] == ["a", "b"]
    with pytest.raises(em.PartialResultsError):
        next(pages)
    assert client.calls[0][1]["allow_partial_search_results"] is False
    assert client.calls[-1] == ("clear_scroll", {"scroll_id": "s1"})


def test_a_partial_first_scroll_page_clears_the_scroll_too() -> None:
    client = FakeClient(search=[{**hits("a"), "_scroll_id": "s1", "_shards": PARTIAL}])
    with pytest.raises(em.PartialResultsError):
        list(_shards.scroll_all(client, what="x", index="notes"))  # type: ignore[arg-type]
    assert client.calls[-1] == ("clear_scroll", {"scroll_id": "s1"})


def test_a_whole_scroll_is_listed_to_its_end() -> None:
    client = FakeClient(
        search=[{**hits("a"), "_scroll_id": "s1", "_shards": WHOLE}],
        scroll=[{**hits("b"), "_scroll_id": "s2", "_shards": WHOLE}, {**hits(), "_shards": WHOLE}],
    )
    pages = list(_shards.scroll_all(client, what="x", index="notes"))  # type: ignore[arg-type]
    assert [[h["_id"] for h in page] for page in pages] == [["a"], ["b"]]
    assert client.calls[-1] == ("clear_scroll", {"scroll_id": "s2"})


def test_a_count_is_an_int_that_knows_its_shards() -> None:
    partial = Count(6, _shards.shards_of({"_shards": PARTIAL}))
    assert partial == 6 and partial + 1 == 7 and partial.partial
    assert repr(partial) == "Count(6, partial=True)"
    whole = Count(9)
    assert not whole.partial and repr(whole) == "9"
    copy = pickle.loads(pickle.dumps(partial))
    assert copy == 6 and copy.shards == partial.shards and copy.partial


def test_the_error_of_a_page_pickles_without_the_page() -> None:
    page: em.FindResults[object] = em.FindResults(
        hits=[], total=0, page=1, has_more=False, fetch_next=lambda r: None
    )
    error = em.PartialResultsError("incomplete", shards=Shards(total=3, failed=1), results=page)
    copy = pickle.loads(pickle.dumps(error))
    assert copy.results is None and copy.shards == error.shards and str(copy) == "incomplete"
