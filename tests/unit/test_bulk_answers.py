"""The ``_bulk`` answer read from its bytes (``esmapper._bulk_answers``): the same items as
the parsed answer gives, the parsed path for what the types refuse, and the writer taking
the bytes path through its client's raw copy (error answers raised as the client raises
them)."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from elastic_transport import ApiResponseMeta, BaseNode, HttpHeaders
from elastic_transport._node import NodeApiResponse
from elasticsearch import Elasticsearch
from elasticsearch.serializer import OrjsonSerializer

from esmapper import _json
from esmapper._bulk_answers import BulkItem, decode_items, item_of
from esmapper.bulk import BulkAction, BulkRequestError, BulkWriter

ANSWER = (
    b'{"items":[{"create":{"_index":"i-v1","_id":"a","result":"created","_seq_no":3,'
    b'"_primary_term":2,"status":201}},{"index":{"_index":"i-v1","_id":"b","status":409,'
    b'"error":{"type":"version_conflict_engine_exception","reason":"conflict"}}},'
    b'{"delete":{"_index":"i-v1","_id":"c","result":"not_found","status":404}},'
    b'{"update":{"_id":"d","status":200,"result":"noop"}}]}'
)


def test_the_items_are_the_parsed_answers() -> None:
    parsed = [item_of(next(iter(item.values()))) for item in _json.loads(ANSWER)["items"]]

    assert decode_items(ANSWER) == parsed
    first = parsed[0]
    assert (first.status, first._id, first._index, first.result) == (201, "a", "i-v1", "created")
    assert (first._seq_no, first._primary_term, first.error) == (3, 2, None)
    assert parsed[1].error == {"type": "version_conflict_engine_exception", "reason": "conflict"}
    assert parsed[3]._index is None and parsed[3]._seq_no is None  # not said: None


@pytest.mark.parametrize(
    "body",
    [
        b'{"items":[{"create":{"_id":"a","status":201,"_seq_no":18446744073709551616}}]}',
        b'{"items":[{"upsert":{"_id":"a","status":201}}]}',  # not one of the four operations
        b'{"items":[{"create":{"_id":"a","status":"201"}}]}',
        b'{"error":{"type":"x"},"status":400}',  # no items
        b"not json",
    ],
)
def test_what_the_types_refuse_is_left_to_the_parsed_path(body: bytes) -> None:
    assert decode_items(body) is None


class BulkNode(BaseNode):
    """Answers ``/_bulk`` with :attr:`answers` in turn (status, body bytes)."""

    answers: ClassVar[list[tuple[int, bytes]]] = []
    bodies: ClassVar[list[bytes]] = []

    def perform_request(  # type: ignore[override]
        self, method: str, target: str, body: bytes | None = None, **kwargs: Any
    ) -> NodeApiResponse:
        BulkNode.bodies.append(body or b"")
        status, answer = BulkNode.answers.pop(0)
        headers = {"content-type": "application/json", "x-elastic-product": "Elasticsearch"}
        meta = ApiResponseMeta(
            status=status,
            http_version="1.1",
            headers=HttpHeaders(headers),
            duration=0.0,
            node=self.config,
        )
        return NodeApiResponse(meta, answer)


@pytest.fixture
def writer() -> BulkWriter:
    BulkNode.answers.clear()
    BulkNode.bodies.clear()
    client = Elasticsearch(
        "http://bulk-node:9200", node_class=BulkNode, serializer=OrjsonSerializer()
    )
    return BulkWriter(client, sleep=lambda _delay: None)


def actions() -> list[BulkAction]:
    return [
        BulkAction("create", "i", "a", {"n": 1}),
        BulkAction("index", "i", "b", {"n": 2}),
        BulkAction("delete", "i", "c"),
        BulkAction("update", "i", "d", {"doc": {"n": 4}}),
    ]


def test_the_writer_reads_the_answers_bytes_through_a_raw_copy(writer: BulkWriter) -> None:
    assert writer._raw_client is not None
    BulkNode.answers.append((200, ANSWER))

    answers = writer._write(actions())

    assert isinstance(answers[0], BulkItem) and answers[0]._seq_no == 3  # applied: the item
    BulkNode.answers.append((200, ANSWER))
    outcomes = writer.write(actions())
    assert [(o.ok, o.status, o.id, o.index) for o in outcomes] == [
        (True, 201, "a", "i-v1"),
        (False, 409, "b", "i-v1"),
        (False, 404, "c", "i-v1"),
        (True, 200, "d", "i"),  # the action's index when the server did not say
    ]
    assert outcomes[0].version == "2:3" and outcomes[3].result == "noop"
    assert outcomes[1].error_type == "version_conflict_engine_exception"


def test_a_rejected_request_is_raised_with_the_parsed_error(writer: BulkWriter) -> None:
    BulkNode.answers.append(
        (400, b'{"error":{"type":"illegal_argument_exception","reason":"bad"},"status":400}')
    )

    with pytest.raises(BulkRequestError) as caught:
        writer.write(actions())

    assert caught.value.status == 400
    assert (caught.value.error_type, caught.value.reason) == ("illegal_argument_exception", "bad")


def test_a_throttled_request_is_sent_again(writer: BulkWriter) -> None:
    BulkNode.answers.extend(
        [(429, b'{"error":{"type":"es_rejected"},"status":429}'), (200, ANSWER)]
    )

    outcomes = writer.write(actions())

    assert len(BulkNode.bodies) == 2 and BulkNode.bodies[0] == BulkNode.bodies[1]
    assert [o.status for o in outcomes] == [201, 409, 404, 200]


def test_an_answer_the_types_refuse_is_read_parsed(writer: BulkWriter) -> None:
    big = (
        b'{"items":[{"create":{"_index":"i-v1","_id":"a","status":201,'
        b'"_seq_no":18446744073709551616,"_primary_term":1}}]}'
    )
    BulkNode.answers.append((200, big))

    (outcome,) = writer.write(actions()[:1])

    assert outcome.ok and outcome.seq_no == 18446744073709551616  # as orjson reads it


def test_an_answer_that_is_not_json_is_a_transport_error(writer: BulkWriter) -> None:
    BulkNode.answers.append((200, b"<html>proxy</html>"))

    (outcome,) = writer.write(actions()[:1])

    assert (outcome.ok, outcome.status, outcome.error_type) == (False, 0, "transport_error")
