"""``esmapper._raw_answers.answer``: an error met on the raw client copy is raised as the
user's client raises it (the same class and message, the body parsed)."""

from __future__ import annotations

import pytest
from elastic_transport import ApiResponseMeta, HttpHeaders, NodeConfig
from elasticsearch import ApiError, NotFoundError, UnsupportedProductError

from esmapper._raw_answers import RawJson, answer


def _meta(status: int) -> ApiResponseMeta:
    node = NodeConfig("http", "localhost", 9200)
    return ApiResponseMeta(status, "1.1", HttpHeaders(), 0.0, node)


def _raising(error: ApiError) -> object:
    raise error


def test_an_error_answer_is_raised_by_its_status_with_the_parsed_body() -> None:
    body = RawJson(b'{"error":{"type":"index_not_found_exception"},"status":404}')
    with pytest.raises(NotFoundError) as raised:
        answer(lambda: _raising(NotFoundError(message=str(body), meta=_meta(404), body=body)))
    assert raised.value.message == "index_not_found_exception"
    assert raised.value.body == {"error": {"type": "index_not_found_exception"}, "status": 404}


def test_a_server_that_is_not_elasticsearch_is_still_refused_as_such() -> None:
    # a 2xx answer without X-Elastic-Product: elasticsearch-py's own error and message
    message = "The client noticed that the server is not Elasticsearch"
    body = RawJson(b'{"hits":{"hits":[]}}')
    error = UnsupportedProductError(message=message, meta=_meta(200), body=body)
    with pytest.raises(UnsupportedProductError) as raised:
        answer(lambda: _raising(error))
    assert raised.value.message == message and raised.value.body == {"hits": {"hits": []}}


def test_an_answer_that_is_not_json_raises_as_the_users_client_does() -> None:
    from elastic_transport import OrjsonSerializer, SerializationError

    from esmapper._raw_answers import parse

    with pytest.raises(SerializationError) as ours:
        parse(RawJson(b"<html>bad gateway</html>"))
    with pytest.raises(SerializationError) as theirs:
        OrjsonSerializer().loads(b"<html>bad gateway</html>")
    assert str(ours.value) == str(theirs.value)
    assert parse(RawJson(b"")) is None and OrjsonSerializer().loads(b"") is None
    assert parse(RawJson(b'{"a":1}')) == {"a": 1}
