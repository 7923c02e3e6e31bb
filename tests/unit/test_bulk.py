"""BulkWriter without a server: serialization, chunking, retries, outcome order."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import pytest
from elastic_transport import ApiResponseMeta, ConnectionTimeout, HttpHeaders, NodeConfig
from elastic_transport import ConnectionError as TransportConnectionError
from elasticsearch import ApiError

from esmapper import _bulk_encode, _json
from esmapper.bulk import BulkAction, BulkOutcome, BulkRequestError, BulkWriter
from esmapper.errors import BulkItemFailure, DocumentError

Responder = Callable[[list[dict[str, Any]]], Any]


class _Resp:
    def __init__(self, body: Any) -> None:
        self.body = body


class FakeClient:
    """Records every _bulk call; ``respond(actions)`` returns the response body or raises.

    The default answers every item with 201 and a growing seq_no.
    """

    def __init__(self, respond: Responder | None = None) -> None:
        self.calls: list[dict[str, Any]] = []
        self.options_kwargs: dict[str, Any] | None = None
        self.respond = respond or self.ok
        self.seq = 0

    def options(self, **kwargs: Any) -> FakeClient:
        self.options_kwargs = kwargs
        return self

    def perform_request(self, method: str, path: str, **kwargs: Any) -> _Resp:
        body: bytes = kwargs["body"]
        assert isinstance(body, bytes)
        assert method == "POST"
        assert path == "/_bulk"
        actions = parse_ndjson(body)
        self.calls.append({**kwargs, "actions": actions})
        return _Resp(self.respond(actions))

    def item(self, action: dict[str, Any], status: int = 201, **extra: Any) -> dict[str, Any]:
        op, meta = next(iter(action["meta"].items()))
        if 200 <= status < 300:
            self.seq += 1
            body = {
                "_index": meta["_index"],
                "_id": meta.get("_id") or f"auto{self.seq}",
                "status": status,
                "result": "created",
                "_seq_no": self.seq,
                "_primary_term": 1,
            }
        else:
            body = {
                "_index": meta["_index"],
                "_id": meta.get("_id"),
                "status": status,
                "error": {"type": f"err{status}", "reason": f"reason {status}"},
            }
        body.update(extra)
        return {op: body}

    def ok(self, actions: list[dict[str, Any]]) -> dict[str, Any]:
        return {"items": [self.item(a) for a in actions]}


def parse_ndjson(body: bytes) -> list[dict[str, Any]]:
    """``[{"meta": {...}, "source": {...} | None, "raw": bytes}]`` for a bulk body."""
    assert body.endswith(b"\n")
    lines = body.split(b"\n")[:-1]
    out = []
    i = 0
    while i < len(lines):
        meta = json.loads(lines[i])
        raw = lines[i] + b"\n"
        source = None
        if "delete" not in meta:
            i += 1
            source = json.loads(lines[i])
            raw += lines[i] + b"\n"
        out.append({"meta": meta, "source": source, "raw": raw})
        i += 1
    return out


def api_error(status: int, error_type: str = "boom", reason: str = "it broke") -> ApiError:
    meta = ApiResponseMeta(
        status=status,
        http_version="1.1",
        headers=HttpHeaders(),
        duration=0.0,
        node=NodeConfig("http", "localhost", 9200),
    )
    body = {"error": {"type": error_type, "reason": reason}, "status": status}
    return ApiError(error_type, meta=meta, body=body)


def make_writer(client: FakeClient, **kwargs: Any) -> tuple[BulkWriter, list[float]]:
    sleeps: list[float] = []
    writer = BulkWriter(client, sleep=sleeps.append, **kwargs)  # type: ignore[arg-type]
    return writer, sleeps


def docs(n: int, index: str = "idx", **body: Any) -> list[BulkAction]:
    return [BulkAction("index", index, str(i), {"n": i, **body}, ref=i) for i in range(n)]


# -- serialization ------------------------------------------------------------------------


def test_serializes_each_op_exactly() -> None:
    client = FakeClient()
    writer, _ = make_writer(client)
    when = dt.datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=dt.timezone.utc)
    writer.write(
        [
            BulkAction("index", "i1", "a", {"x": 1, "name": "Zoë", "at": when}),
            BulkAction("index", "i1", None, {"x": 2}),
            BulkAction("create", "i1", "c", {"x": 3}, routing="r1"),
            BulkAction(
                "update",
                "i1",
                "d",
                {"doc": {"x": 4}, "doc_as_upsert": True},
                retry_on_conflict=3,
                if_seq_no=7,
                if_primary_term=2,
            ),
            BulkAction("update", "i1", "e", {"script": {"source": "ctx._source.x++"}}),
            BulkAction("delete", "i1", "f", if_seq_no=0, if_primary_term=1),
            BulkAction("index", "i1", "g", MappingProxyType({"nested": MappingProxyType({})})),
            BulkAction("create", "alias", "h", {"x": 5}, require_alias=True),
            BulkAction("update", "alias", "i", {"doc": {"x": 6}}, require_alias=True),
        ]
    )
    (call,) = client.calls
    assert call["body"] == (
        b'{"index":{"_index":"i1","_id":"a"}}\n'
        b'{"x":1,"name":"Zo\xc3\xab","at":"2026-01-02T03:04:05.123456+00:00"}\n'
        b'{"index":{"_index":"i1"}}\n{"x":2}\n'
        b'{"create":{"_index":"i1","_id":"c","routing":"r1"}}\n{"x":3}\n'
        b'{"update":{"_index":"i1","_id":"d","if_seq_no":7,"if_primary_term":2,'
        b'"retry_on_conflict":3}}\n{"doc":{"x":4},"doc_as_upsert":true}\n'
        b'{"update":{"_index":"i1","_id":"e"}}\n{"script":{"source":"ctx._source.x++"}}\n'
        b'{"delete":{"_index":"i1","_id":"f","if_seq_no":0,"if_primary_term":1}}\n'
        b'{"index":{"_index":"i1","_id":"g"}}\n{"nested":{}}\n'
        b'{"create":{"_index":"alias","_id":"h","require_alias":true}}\n{"x":5}\n'
        b'{"update":{"_index":"alias","_id":"i","require_alias":true}}\n{"doc":{"x":6}}\n'
    )
    assert call["headers"]["content-type"] == "application/x-ndjson"
    assert "refresh" not in call["params"]
    assert client.options_kwargs == {"max_retries": 0, "retry_on_status": ()}


@pytest.mark.parametrize(
    "action",
    [
        BulkAction("index", "i1", "a", {"x": 1}),
        BulkAction("index", "i1", "a", {"x": 1}, if_seq_no=7, if_primary_term=2),
        BulkAction(
            "index", "al", "a", {"x": 1}, if_seq_no=0, if_primary_term=1, require_alias=True
        ),
        BulkAction("create", "al", 'b"q', {"x": [1, 2]}, require_alias=True),
        BulkAction("update", "i1", "c", {"doc": {"x": 2}}, if_seq_no=3, if_primary_term=4),
    ],
)
def test_the_cached_prefix_encoding_writes_the_general_paths_bytes(action: BulkAction) -> None:
    # plain and conditional writes skip building the action line's dict
    assert _bulk_encode.encode(0, action) == _bulk_encode.encode_general(0, action)


SOURCE = b'{"x":1,"y":"\xc3\xbc"}'


@pytest.mark.parametrize(
    "action",
    [
        BulkAction("create", "i1", "a", source=SOURCE),
        BulkAction("index", "i1", "a", None, 7, 2, source=SOURCE),
        BulkAction("index", "al", "a", source=SOURCE, routing="r", require_alias=True),
        BulkAction("create", "i1", None, source=SOURCE, pipeline="p"),
    ],
)
def test_a_pre_encoded_source_is_sent_as_is_on_both_paths(action: BulkAction) -> None:
    line = _bulk_encode.encode(0, action)
    assert line == _bulk_encode.encode_general(0, action)
    assert line.endswith(b"}\n" + SOURCE + b"\n")
    assert action.body_as_held is SOURCE  # nothing decoded it to send it


def test_a_body_is_decoded_from_the_source_once_and_assigning_a_body_drops_it() -> None:
    action = BulkAction("create", "i1", "a", source=SOURCE)
    body = action.body
    assert body == {"x": 1, "y": "ü"} and action.body is body
    action.body = {"z": 2}
    assert action.source is None
    assert _bulk_encode.encode(0, action).endswith(b'\n{"z":2}\n')


def test_a_delete_with_a_source_is_refused() -> None:
    with pytest.raises(ValueError, match="no body"):
        _bulk_encode.encode(0, BulkAction("delete", "i", "1", source=b"{}"))


def test_a_condition_that_is_not_two_ints_takes_the_general_path() -> None:
    odd = BulkAction("index", "i", "1", {}, if_seq_no=True, if_primary_term=1)  # type: ignore[arg-type]
    assert _bulk_encode.encode(0, odd) == _bulk_encode.encode_general(0, odd)
    with pytest.raises(ValueError, match="together"):
        _bulk_encode.encode(0, BulkAction("index", "i", "1", {}, if_seq_no=1))


@pytest.mark.parametrize(
    ("action", "exc", "match"),
    [
        (BulkAction("upsert", "i", "1", {}), ValueError, "unknown op"),  # type: ignore[arg-type]
        (BulkAction("index", "", "1", {}), ValueError, "index"),
        (BulkAction("index", "i", "1"), ValueError, "needs a body"),
        (BulkAction("update", "i", None, {"doc": {}}), ValueError, "needs an id"),
        (BulkAction("delete", "i", None), ValueError, "needs an id"),
        (BulkAction("delete", "i", "1", {}), ValueError, "no body"),
        (BulkAction("index", "i", "1", {}, if_seq_no=1), ValueError, "together"),
        (BulkAction("index", "i", "1", {}, retry_on_conflict=1), ValueError, "only for update"),
        (BulkAction("index", "i", "1", {"x": object()}), TypeError, "not JSON serializable"),
        (BulkAction("delete", "i", "1", require_alias=True), ValueError, "not for delete"),
    ],
)
def test_invalid_actions_raise_before_anything_is_sent(
    action: BulkAction, exc: type[Exception], match: str
) -> None:
    client = FakeClient()
    writer, _ = make_writer(client, chunk_size=1)
    with pytest.raises(exc, match=match):
        writer.write([*docs(3), action])
    assert client.calls == []


def test_each_action_is_serialized_once_even_when_retried(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = 0
    real = _json.dumps

    def counting(obj: Any) -> bytes:
        nonlocal calls
        calls += 1
        return real(obj)  # type: ignore[no-any-return]

    monkeypatch.setattr(_json, "dumps", counting)
    attempts = 0

    def respond(actions: list[dict[str, Any]]) -> dict[str, Any]:
        nonlocal attempts
        attempts += 1
        status = 429 if attempts < 3 else 201
        return {
            "items": [client.item(a, status if a["source"]["n"] == 1 else 201) for a in actions]
        }

    client = FakeClient(respond)
    writer, _ = make_writer(client)
    outcomes = writer.write(docs(3))
    assert [o.ok for o in outcomes] == [True, True, True]
    assert calls == 6  # one action line and one source line per action
    assert client.calls[1]["body"] == client.calls[0]["actions"][1]["raw"]


# -- chunking ------------------------------------------------------------------------------


def test_chunks_by_count() -> None:
    client = FakeClient()
    writer, _ = make_writer(client, chunk_size=500)
    outcomes = writer.write(docs(1050))
    assert [len(c["actions"]) for c in client.calls] == [500, 500, 50]
    assert [o.action.ref for o in outcomes] == list(range(1050))
    assert writer.last_stats is not None
    assert writer.last_stats.requests == 3
    assert writer.last_stats.chunks == 3
    assert writer.last_stats.bytes_sent == sum(len(c["body"]) for c in client.calls)


def test_chunks_by_bytes_and_sends_an_oversize_action_alone() -> None:
    client = FakeClient()
    writer, _ = make_writer(client, chunk_size=1000, max_bytes=400)
    actions = docs(10, pad="x" * 40)  # about 80 bytes each
    actions.insert(4, BulkAction("index", "idx", "big", {"pad": "y" * 1000}, ref="big"))
    outcomes = writer.write(actions)
    sizes = [len(c["body"]) for c in client.calls]
    counts = [len(c["actions"]) for c in client.calls]
    assert len(client.calls) >= 4
    big_calls = [c for c in client.calls if c["actions"][0]["meta"]["index"]["_id"] == "big"]
    assert len(big_calls) == 1
    assert len(big_calls[0]["actions"]) == 1
    assert all(size <= 400 for size, n in zip(sizes, counts, strict=True) if n > 1)
    assert sum(counts) == 11
    sent_ids = [a["meta"]["index"]["_id"] for c in client.calls for a in c["actions"]]
    assert sent_ids == [a.id for a in actions]
    assert [o.action.ref for o in outcomes] == [a.ref for a in actions]


def test_a_request_never_carries_two_writes_of_one_document() -> None:
    """Cut before the second write of a document (same id and routing, whatever index or
    alias it names: one document is reached through its model's alias and its index's
    fence alias); other routings and auto-id writes do not cut; the order is kept."""
    client = FakeClient()
    writer, _ = make_writer(client, chunk_size=500, concurrency=4)
    actions = [
        BulkAction("index", "idx", "a", {"n": 1}),
        BulkAction("index", "idx", "b", {"n": 1}),
        BulkAction("index", "other", "a", {"n": 1}),
        BulkAction("index", "idx", "a", {"n": 1}, routing="r"),
        BulkAction("index", "idx", None, {"n": 1}),
        BulkAction("index", "idx", None, {"n": 1}),
        BulkAction("delete", "idx", "a"),
        BulkAction("index", "idx", "c", {"n": 1}),
        BulkAction("create", "idx", "a", {"n": 2}),
    ]
    outcomes = writer.write(actions)
    assert [len(c["actions"]) for c in client.calls] == [2, 4, 2, 1]
    sent = [next(iter(a["meta"].values())).get("_id") for c in client.calls for a in c["actions"]]
    assert sent == [a.id for a in actions]
    assert [o.action for o in outcomes] == actions
    assert writer.last_stats is not None and writer.last_stats.chunks == 4
    # a session replace: the delete at a version through the fence, the add through the alias
    client.calls.clear()
    writer.write(
        [
            BulkAction("delete", "idx-v1.fence", "x", if_seq_no=3, if_primary_term=1),
            BulkAction("create", "idx", "x", {"n": 1}),
        ]
    )
    assert [len(c["actions"]) for c in client.calls] == [1, 1]
    # unique ids: chunked by count and bytes only
    client.calls.clear()
    writer.write(docs(7))
    assert [len(c["actions"]) for c in client.calls] == [7]


def test_empty_input_sends_nothing() -> None:
    client = FakeClient()
    writer, _ = make_writer(client)
    assert writer.write([]) == []
    assert client.calls == []


@pytest.mark.parametrize(
    ("refresh", "expected"), [(True, "true"), (False, "false"), ("wait_for", "wait_for")]
)
def test_refresh_is_passed_to_every_chunk(refresh: Any, expected: str) -> None:
    client = FakeClient()
    writer, _ = make_writer(client, chunk_size=2)
    writer.write(docs(5), refresh=refresh)
    assert [c["params"]["refresh"] for c in client.calls] == [expected] * 3


# -- retries -------------------------------------------------------------------------------


def test_item_429_and_503_are_retried_alone_with_exponential_backoff() -> None:
    rounds: list[list[int]] = []

    def respond(actions: list[dict[str, Any]]) -> dict[str, Any]:
        ns = [a["source"]["n"] for a in actions]
        rounds.append(ns)
        items = []
        for a in actions:
            n = a["source"]["n"]
            if n == 1 and len(rounds) <= 3:
                items.append(client.item(a, 429))
            elif n == 3 and len(rounds) <= 1:
                items.append(client.item(a, 503))
            else:
                items.append(client.item(a))
        return {"items": items}

    client = FakeClient(respond)
    writer, sleeps = make_writer(client)
    outcomes = writer.write(docs(5))
    assert rounds == [[0, 1, 2, 3, 4], [1, 3], [1], [1]]
    assert sleeps == [0.5, 1.0, 2.0]
    assert all(o.ok for o in outcomes)
    assert [o.id for o in outcomes] == ["0", "1", "2", "3", "4"]
    stats = writer.last_stats
    assert stats is not None
    assert (stats.requests, stats.retries, stats.retried_items) == (4, 3, 4)
    assert stats.backoffs == [0.5, 1.0, 2.0]


def blocked_item(client: FakeClient, action: dict[str, Any]) -> dict[str, Any]:
    """The item a write-blocked index answers (a reindex's final catch-up until its swap)."""
    reason = "index [idx-v1] blocked by: [FORBIDDEN/8/index write (api)];"
    return client.item(action, 403, error={"type": "cluster_block_exception", "reason": reason})


def blocking(client_rounds: int, blocked: set[int]) -> Callable[[FakeClient], Responder]:
    """A responder refusing the items ``blocked`` (by ``n``) for ``client_rounds`` rounds."""

    def make(client: FakeClient) -> Responder:
        def respond(actions: list[dict[str, Any]]) -> dict[str, Any]:
            held = len(client.calls) <= client_rounds
            return {
                "items": [
                    blocked_item(client, a)
                    if held and a["source"]["n"] in blocked
                    else client.item(a)
                    for a in actions
                ]
            }

        return respond

    return make


def test_write_blocked_items_wait_on_their_own_budget_even_without_retries() -> None:
    """``max_retries=0`` (or a call's ``retries=0``) does not give up on items a reindex's
    write block refused: they were not applied, and the swap is moments away."""
    client = FakeClient()
    client.respond = blocking(3, {1})(client)
    writer, sleeps = make_writer(client, max_retries=0)
    outcomes = writer.write(docs(3))
    assert all(o.ok for o in outcomes)
    assert sleeps == [0.5, 1.0, 2.0]
    assert [[a["source"]["n"] for a in c["actions"]] for c in client.calls] == [
        [0, 1, 2], [1], [1], [1],
    ]  # fmt: skip


def test_write_blocked_items_fail_with_the_403_once_write_block_wait_is_spent() -> None:
    client = FakeClient()
    client.respond = blocking(100, {0, 2})(client)
    writer, sleeps = make_writer(client, write_block_wait=2.0)
    outcomes = writer.write(docs(3))
    assert sleeps == [0.5, 1.0, 0.5]  # the last wait is what was left of the 2 s
    assert [(o.ok, o.status) for o in outcomes] == [(False, 403), (True, 201), (False, 403)]
    assert outcomes[0].error_type == "cluster_block_exception"


def test_write_block_wait_is_one_budget_per_write_call_and_0_waits_not_at_all() -> None:
    client = FakeClient()
    client.respond = blocking(100, {0, 1})(client)
    writer, sleeps = make_writer(client, write_block_wait=1.0, chunk_size=1)
    outcomes = writer.write(docs(2))  # two chunks: the second finds the budget spent
    assert sleeps == [0.5, 0.5]
    assert [o.status for o in outcomes] == [403, 403]
    assert len(client.calls) == 4

    writer, sleeps = make_writer(client, write_block_wait=0)
    assert [o.status for o in writer.write(docs(1))] == [403]
    assert sleeps == []


def test_a_429_and_a_write_block_in_one_chunk_keep_their_own_budgets() -> None:
    def respond(actions: list[dict[str, Any]]) -> dict[str, Any]:
        items = []
        for a in actions:
            n = a["source"]["n"]
            if n == 0:
                items.append(client.item(a, 429))  # always throttled
            elif n == 1 and len(client.calls) <= 3:
                items.append(blocked_item(client, a))
            else:
                items.append(client.item(a))
        return {"items": items}

    client = FakeClient(respond)
    writer, sleeps = make_writer(client, max_retries=1)
    outcomes = writer.write(docs(2))
    assert [(o.ok, o.status) for o in outcomes] == [(False, 429), (True, 201)]
    assert sleeps == [0.5, 1.0, 2.0]  # the 429's one retry, then the block's own waits


def test_backoff_is_capped_by_max_backoff() -> None:
    writer, _ = make_writer(FakeClient(), initial_backoff=10.0, max_backoff=25.0)
    assert [writer.backoff(a) for a in range(4)] == [10.0, 20.0, 25.0, 25.0]


def test_items_still_429_after_max_retries_fail_with_429() -> None:
    def respond(actions: list[dict[str, Any]]) -> dict[str, Any]:
        return {"items": [client.item(a, 429 if a["source"]["n"] % 2 else 201) for a in actions]}

    client = FakeClient(respond)
    writer, sleeps = make_writer(client, max_retries=2, initial_backoff=1.0)
    outcomes = writer.write(docs(4))
    assert sleeps == [1.0, 2.0]
    assert len(client.calls) == 3
    assert [(o.ok, o.status) for o in outcomes] == [(True, 201), (False, 429)] * 2
    assert outcomes[1].error_type == "err429"


@pytest.mark.parametrize("status", [409, 400, 404, 500, 502])
def test_other_item_statuses_are_never_retried(status: int) -> None:
    client = FakeClient(lambda actions: {"items": [client.item(a, status) for a in actions]})
    writer, sleeps = make_writer(client)
    outcomes = writer.write(docs(2))
    assert len(client.calls) == 1
    assert sleeps == []
    assert [o.status for o in outcomes] == [status, status]
    assert not any(o.ok for o in outcomes)


def test_whole_request_429_is_retried_then_succeeds() -> None:
    failures = [api_error(429), api_error(503)]

    def respond(actions: list[dict[str, Any]]) -> dict[str, Any]:
        if failures:
            raise failures.pop(0)
        return client.ok(actions)

    client = FakeClient(respond)
    writer, sleeps = make_writer(client)
    outcomes = writer.write(docs(3))
    assert sleeps == [0.5, 1.0]
    assert all(o.ok for o in outcomes)
    assert len(client.calls) == 3


def test_whole_request_429_exhausted_fails_the_chunk_but_later_chunks_are_sent() -> None:
    def respond(actions: list[dict[str, Any]]) -> dict[str, Any]:
        if actions[0]["source"]["n"] == 0:
            raise api_error(429, "es_rejected_execution_exception", "queue full")
        return client.ok(actions)

    client = FakeClient(respond)
    writer, sleeps = make_writer(client, chunk_size=2)
    outcomes = writer.write(docs(4))
    assert sleeps == [0.5, 1.0, 2.0]
    assert len(client.calls) == 5
    assert [o.status for o in outcomes] == [429, 429, 201, 201]
    assert outcomes[0].error_type == "es_rejected_execution_exception"
    assert outcomes[0].reason == "queue full"


@pytest.mark.parametrize(
    "error", [TransportConnectionError("connection reset"), ConnectionTimeout("timed out")]
)
def test_no_response_fails_the_chunk_without_retry_and_later_chunks_are_sent(
    error: Exception,
) -> None:
    def respond(actions: list[dict[str, Any]]) -> dict[str, Any]:
        if actions[0]["source"]["n"] == 0:
            raise error
        return client.ok(actions)

    client = FakeClient(respond)
    writer, sleeps = make_writer(client, chunk_size=2)
    outcomes = writer.write(docs(6))
    assert len(client.calls) == 3
    assert sleeps == []
    assert [o.status for o in outcomes] == [0, 0, 201, 201, 201, 201]
    assert outcomes[0].error_type == "connection_error"
    assert outcomes[0].id == "0"
    assert outcomes[0].index == "idx"
    assert outcomes[0].reason is not None


def test_whole_request_rejection_raises_with_the_completed_outcomes() -> None:
    def respond(actions: list[dict[str, Any]]) -> dict[str, Any]:
        if actions[0]["source"]["n"] == 2:
            raise api_error(400, "illegal_argument_exception", "malformed")
        return client.ok(actions)

    client = FakeClient(respond)
    writer, _ = make_writer(client, chunk_size=2)
    with pytest.raises(BulkRequestError) as info:
        writer.write(docs(6))
    err = info.value
    assert isinstance(err, DocumentError)
    assert err.status == 400
    assert err.error_type == "illegal_argument_exception"
    assert err.reason == "malformed"
    assert err.ids == ("2", "3")
    assert [o.action.ref for o in err.outcomes] == [0, 1]
    assert all(o.ok for o in err.outcomes)
    assert len(client.calls) == 2


def test_rejected_retry_keeps_the_items_answered_before() -> None:
    def respond(actions: list[dict[str, Any]]) -> dict[str, Any]:
        if len(client.calls) == 1:
            return {"items": [client.item(a, 429 if a["source"]["n"] else 201) for a in actions]}
        raise api_error(403, "security_exception", "no")

    client = FakeClient(respond)
    writer, sleeps = make_writer(client)
    with pytest.raises(BulkRequestError) as info:
        writer.write(docs(3))
    assert sleeps == [0.5]
    assert info.value.ids == ("1", "2")
    assert [(o.id, o.ok) for o in info.value.outcomes] == [("0", True)]
    assert writer.last_stats is not None
    assert writer.last_stats.requests == 2


def test_item_count_mismatch_raises() -> None:
    client = FakeClient(lambda actions: {"items": []})
    writer, _ = make_writer(client)
    with pytest.raises(BulkRequestError, match="0 items for 2 actions"):
        writer.write(docs(2))


# -- outcomes ------------------------------------------------------------------------------


def test_outcomes_keep_input_order_and_refs_through_retries() -> None:
    seen = 0

    def respond(actions: list[dict[str, Any]]) -> dict[str, Any]:
        nonlocal seen
        seen += 1
        return {
            "items": [
                client.item(a, 429 if seen == 1 and a["source"]["n"] % 3 == 0 else 201)
                for a in actions
            ]
        }

    client = FakeClient(respond)
    writer, _ = make_writer(client, chunk_size=4)
    actions = docs(10)
    refs = [object() for _ in actions]
    for a, r in zip(actions, refs, strict=True):
        a.ref = r
    outcomes = writer.write(iter(actions))
    assert [o.action for o in outcomes] == actions
    assert all(o.action.ref is r for o, r in zip(outcomes, refs, strict=True))
    assert all(o.ok for o in outcomes)


def test_outcome_fields_version_and_failure() -> None:
    def respond(actions: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "items": [
                client.item(actions[0]),
                {
                    "create": {
                        "_index": "idx-v1",
                        "_id": "1",
                        "status": 409,
                        "error": {
                            "type": "version_conflict_engine_exception",
                            "reason": "[1]: version conflict",
                            "caused_by": {"type": "x", "reason": "y"},
                        },
                    }
                },
                {
                    "delete": {
                        "_index": "idx-v1",
                        "_id": "2",
                        "status": 404,
                        "result": "not_found",
                        "_seq_no": 9,
                        "_primary_term": 1,
                    }
                },
            ]
        }

    client = FakeClient(respond)
    writer, _ = make_writer(client)
    doc = object()
    created, conflict, missing = writer.write(
        [
            BulkAction("index", "idx", None, {"a": 1}),
            BulkAction("create", "idx", "1", {"a": 1}, ref=doc),
            BulkAction("delete", "idx", "2"),
        ]
    )
    assert created.ok
    assert created.id == "auto1"
    assert created.version == "1:1"
    assert created.result == "created"
    assert not conflict.ok
    assert conflict.version is None
    assert conflict.index == "idx-v1"
    assert conflict.reason == "[1]: version conflict (caused by x: y)"
    failure = conflict.to_failure()
    assert failure == BulkItemFailure(
        id="1",
        index="idx-v1",
        op="create",
        status=409,
        error_type="version_conflict_engine_exception",
        reason="[1]: version conflict (caused by x: y)",
        document=doc,
    )
    assert failure.is_conflict
    assert not missing.ok
    assert missing.result == "not_found"
    assert missing.to_failure().error_type == "not_found"
    assert missing.to_failure().reason == 'Document "2" could not be found'


def test_a_success_item_missing_fields_falls_back_to_the_actions() -> None:
    def respond(actions: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "items": [
                client.item(actions[0]),
                {"index": {"status": 200, "result": "updated"}},  # no _id, _index, version
            ]
        }

    client = FakeClient(respond)
    writer, _ = make_writer(client)
    full, sparse = writer.write(
        [BulkAction("create", "idx", "a", {"a": 1}), BulkAction("index", "idx", "b", {"b": 1})]
    )
    assert (full.ok, full.id, full.index, full.version) == (True, "a", "idx", "1:1")
    assert (sparse.ok, sparse.status, sparse.result) == (True, 200, "updated")
    assert (sparse.id, sparse.index, sparse.version) == ("b", "idx", None)


def test_outcome_is_slotted() -> None:
    o = BulkOutcome(BulkAction("delete", "i", "1"), ok=True, status=200, id="1", index="i")
    with pytest.raises(AttributeError):
        o.extra = 1  # type: ignore[attr-defined]
    assert isinstance(BulkAction("delete", "i", "1").__slots__, tuple)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"chunk_size": 0},
        {"max_bytes": 0},
        {"max_retries": -1},
        {"initial_backoff": -1.0},
        {"write_block_wait": -1.0},
    ],
)
def test_invalid_settings(kwargs: Mapping[str, Any]) -> None:
    with pytest.raises(ValueError):
        BulkWriter(FakeClient(), **kwargs)  # type: ignore[arg-type]


def test_invalid_refresh() -> None:
    writer, _ = make_writer(FakeClient())
    with pytest.raises(ValueError, match="refresh"):
        writer.write(docs(1), refresh="now")  # type: ignore[arg-type]


@pytest.mark.parametrize("op", ["index", "create", "update"])
@pytest.mark.parametrize("require_alias", [False, True])
@pytest.mark.parametrize("doc_id", ["a1", 'é"x'])
def test_fast_encoding_writes_the_general_paths_bytes(
    op: str, require_alias: bool, doc_id: str
) -> None:
    from esmapper._bulk_encode import encode as _encode
    from esmapper._bulk_encode import encode_general as _encode_general

    body = {"doc": {"x": 1}} if op == "update" else {"x": 1, "s": "é"}
    action = BulkAction(op, "idx-é", doc_id, body, require_alias=require_alias)  # type: ignore[arg-type]
    assert _encode(0, action) == _encode_general(0, action)
    if op != "update":
        piped = BulkAction(op, "idx", doc_id, body, pipeline="p")  # type: ignore[arg-type]
        assert b'"pipeline":"p"' in _encode(0, piped)


def test_a_batch_encodes_each_action_as_alone_and_names_the_failing_position() -> None:
    # the batch loop shares heads between actions; every action's bytes stay its own
    batch = [
        BulkAction("index", "i1", "a", {"x": 1}),
        BulkAction("index", "i1", "b", {"x": 2}, if_seq_no=7, if_primary_term=2),
        BulkAction("index", "i1", "c", {"x": 3}, require_alias=True),
        BulkAction("create", "i2", "d", {"x": 4}, routing="r"),
        BulkAction("delete", "i1", "e"),
        BulkAction("index", "i1", "f", {"x": 6}),
    ]
    assert _bulk_encode.encode_all(batch) == [
        _bulk_encode.encode_general(i, a) for i, a in enumerate(batch)
    ]
    bad = [*batch, BulkAction("index", "i1", "g", {"x": object()})]
    with pytest.raises(TypeError, match=r"bulk action 6 \(index i1/g\)"):
        _bulk_encode.encode_all(bad)
    with pytest.raises(ValueError, match="bulk action 1: delete takes no body"):
        _bulk_encode.encode_all([batch[0], BulkAction("delete", "i1", "x", {})])


def test_bulk_requests_keep_only_what_outcomes_read() -> None:
    client = FakeClient()
    writer, _ = make_writer(client)
    writer.write(docs(2))
    fields = set(client.calls[0]["params"]["filter_path"].split(","))
    kept = {"_id", "_index", "status", "result", "_seq_no", "_primary_term", "error"}
    assert fields == {f"items.*.{f}" for f in kept} | {"error", "status"}


def test_applied_items_still_give_full_outcomes_and_missing_fields_take_the_actions() -> None:
    def respond(actions: list[dict[str, Any]]) -> dict[str, Any]:
        first = client.item(actions[0])
        second = client.item(actions[1])
        del second["index"]["_index"], second["index"]["_seq_no"]  # a terse server
        return {"items": [first, second]}

    client = FakeClient(respond)
    writer, _ = make_writer(client)
    first, second = writer.write(docs(2))
    assert isinstance(first, BulkOutcome)
    assert (first.ok, first.status, first.result, first.version) == (True, 201, "created", "1:1")
    assert (first.id, first.index) == ("0", "idx")
    assert (second.ok, second.index, second.seq_no, second.version) == (True, "idx", None, None)


def test_the_encoder_knows_exactly_the_ops_of_bulk_op() -> None:
    from typing import get_args

    from esmapper.bulk import BulkOp

    assert set(get_args(BulkOp)) == _bulk_encode._OPS
