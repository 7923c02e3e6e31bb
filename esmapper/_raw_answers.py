"""The hot reads' answers as bytes: a copy of the user's client whose JSON answers are not
parsed, and the typed envelope (``msgspec``) that reads a ``_search`` or ``_mget`` answer
with each hit's ``_source`` left as its bytes (issue 28).

elasticsearch-py parses every answer itself (its transport's ``SerializerCollection``), and
no client option gives a copy its own serializers: ``client.options()`` shares the
``Transport``. :func:`raw_client` makes such a copy: ``client.options()`` (the user's
headers, ``api_key``, timeouts, retries, ``ignore_status``) whose transport is a shallow
copy of the user's (the same node pool, connections and sniffing lock) with its own
``SerializerCollection``, where ``application/json`` and
``application/vnd.elasticsearch+json`` load to :class:`RawJson` (the body, unparsed) and
dump request bodies with the user's serializer. The user's client, transport and
serializers are never changed. Only a client whose JSON serializer is the orjson one (what
a ``Mapper`` made from a URL uses) gets a copy: the bytes are then decoded as orjson
would decode them (:mod:`esmapper.model._wire_decode`), the same values a search through
the user's client gives; another serializer (the stdlib one, a user's own) keeps the
reads on the user's client (:func:`raw_client` answers ``None``).

:func:`answer` sends a request on the copy and re-raises an error answer exactly as the
user's client raises it (the same class, message and parsed body).

The envelope (:func:`decode_search`, :func:`decode_docs`) types what the reads use of an
answer: ``hits.hits[]`` (:class:`Hit`: ``_id``, ``_index``, ``_seq_no``,
``_primary_term``, ``_score``, ``sort``, ``highlight``, ``found``, ``_source`` as
``msgspec.Raw``), ``hits.total``, ``_shards`` (failures included: a partial answer comes
with status 200), ``timed_out``, ``pit_id``; an mget's ``docs[]``. A value orjson would
read otherwise (an integer beyond 64 bits, which orjson reads as a float; anything the
types refuse) makes the envelope refuse the answer: ``None``, and the caller parses it
as the user's client would (:func:`parse`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import elastic_transport
import elasticsearch.serializer
import msgspec
from elastic_transport import SerializerCollection
from elasticsearch import ApiError, Elasticsearch
from elasticsearch.exceptions import HTTP_EXCEPTIONS

from esmapper import _json

__all__ = [
    "Hit",
    "Int64",
    "RawJson",
    "answer",
    "decode_docs",
    "decode_search",
    "parse",
    "raw_client",
]

R = TypeVar("R")

#: The answers' JSON mimetypes (the second is what Elasticsearch 8/9 answers compat
#: requests with).
_JSON_MIMETYPES = ("application/json", "application/vnd.elasticsearch+json")
#: The serializers whose parsing the envelope reproduces (orjson's: they are defined only
#: when orjson is installed).
_ORJSON_SERIALIZERS: frozenset[type] = frozenset(
    kind
    for kind in (
        getattr(elasticsearch.serializer, "OrjsonSerializer", None),
        getattr(elastic_transport, "OrjsonSerializer", None),
    )
    if kind is not None
)


class RawJson(bytes):
    """A JSON answer's body, not parsed."""


class _RawSerializer:
    """Loads a JSON answer to :class:`RawJson`; dumps request bodies as ``dumper`` does."""

    def __init__(self, mimetype: str, dumper: Any) -> None:
        self.mimetype = mimetype
        self.dumper = dumper

    def loads(self, data: bytes) -> RawJson:
        return RawJson(data)

    def dumps(self, data: Any) -> bytes:
        return self.dumper.dumps(data)  # type: ignore[no-any-return]


def raw_client(client: Elasticsearch) -> Elasticsearch | None:
    """A copy of ``client`` whose JSON answers are their bytes (see the module docstring),
    or ``None`` when ``client`` cannot have one: its JSON serializer is not orjson's, its
    transport not elastic-transport's (a test double), or esmapper's own JSON is not
    orjson. Sends nothing; changes nothing of ``client``."""
    if _json.BACKEND != "orjson":
        return None
    transport = getattr(client, "transport", None)
    serializers = getattr(transport, "serializers", None)
    if not isinstance(client, Elasticsearch) or not isinstance(serializers, SerializerCollection):
        return None
    mine: dict[str, Any] = dict(serializers.serializers)
    for mimetype in _JSON_MIMETYPES:
        user = mine.get(mimetype)
        if type(user) not in _ORJSON_SERIALIZERS:
            return None
        mine[mimetype] = _RawSerializer(mimetype, user)
    default = next(
        (m for m, s in serializers.serializers.items() if s is serializers.default_serializer),
        None,
    )
    if default is None:
        return None
    own = copy.copy(transport)
    own.serializers = SerializerCollection(mine, default_mimetype=default)  # type: ignore[union-attr]
    raw = client.options()
    raw._transport = own  # type: ignore[assignment]
    return raw


def parse(body: bytes) -> Any:
    """``body`` parsed as the user's (orjson) serializer parses an answer (orjson takes
    ``bytes`` itself, not a subclass: :class:`RawJson` is copied): an empty body is
    ``None``, one that is not JSON raises ``elastic_transport.SerializationError``."""
    data = bytes(body)
    if data == b"":
        return None
    try:
        return _json.loads(data)
    except (ValueError, TypeError) as exc:
        raise elastic_transport.SerializationError(
            message=f"Unable to deserialize as JSON: {data!r}", errors=(exc,)
        ) from exc


def answer(call: Callable[[], R]) -> R:
    """``call()`` (a request on a :func:`raw_client`); an error answer re-raised as the
    user's client raises it: the same class (by status), message and parsed body."""
    try:
        return call()
    except ApiError as exc:
        if not isinstance(exc.body, RawJson):
            raise
        try:
            body = parse(exc.body)
        except ValueError:  # not JSON after all: the user's client would have failed too
            body = str(exc.body)
        kind = type(exc)
        if kind is not HTTP_EXCEPTIONS.get(exc.meta.status, ApiError):
            # an error not made of the answer (UnsupportedProductError: a 2xx answer
            # without the product header): its class and message as they are
            raise kind(message=exc.message, meta=exc.meta, body=body) from None
        message: Any = str(body)
        if isinstance(body, dict):  # as elasticsearch-py works the message out
            error = body.get("error", message)
            message = error["type"] if isinstance(error, dict) and "type" in error else error
        raise kind(message=message, meta=exc.meta, body=body) from None


# -- the envelope ---------------------------------------------------------------------------

#: an integer orjson reads as an integer (beyond 64 bits it reads a float: refused here)
Int64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
#: a sort value, a score: what orjson gives for them (no integer beyond 64 bits)
Scalar = Int64 | float | str | bool | None
#: ``_source`` absent (``_source: false``, a doc not found)
_NO_SOURCE = msgspec.Raw(b"")


class Hit(msgspec.Struct, gc=False):
    """A search hit or an mget doc, its ``_source`` left as its bytes; ``get``/``[]`` read
    it as the hit's dict would be read (:func:`esmapper._search_answers.hit`). Not tracked
    by the garbage collector (``gc=False``: cheaper to make; what it holds, JSON values,
    cannot refer back to it)."""

    _id: str
    _index: str | None = None
    _seq_no: Int64 | None = None
    _primary_term: Int64 | None = None
    _source: msgspec.Raw = _NO_SOURCE
    _score: Int64 | float | None = None
    sort: list[Scalar] | None = None
    highlight: dict[str, list[str]] | None = None
    found: bool | None = None

    def get(self, key: str, default: Any = None) -> Any:
        value = getattr(self, key, default)
        return default if value is None else value

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)


class _Hits(msgspec.Struct, gc=False):
    hits: list[Hit]
    total: dict[str, Int64 | str] | None = None
    max_score: Int64 | float | None = None


class _Search(msgspec.Struct, gc=False):
    hits: _Hits
    _shards: dict[str, Any] | None = None
    timed_out: bool | None = None
    pit_id: str | None = None
    took: Int64 | None = None


class _Docs(msgspec.Struct, gc=False):
    docs: list[Hit]


_SEARCH = msgspec.json.Decoder(_Search)
_DOCS = msgspec.json.Decoder(_Docs)


def decode_search(body: bytes) -> dict[str, Any] | None:
    """The search answer ``body`` as the reads use it: ``{"hits": {"hits": [Hit...],
    "total": ..., "max_score": ...}, "_shards": ..., "timed_out": ..., "pit_id": ...}``
    (the keys the answer has), or ``None`` when the envelope refuses it (the caller then
    :func:`parse` s it). ``_shards`` is parsed as orjson would (its failures' reasons are
    text; an integer beyond 64 bits there refuses the answer)."""
    try:
        found = _SEARCH.decode(body)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
    hits: dict[str, Any] = {"hits": found.hits.hits}
    if found.hits.total is not None:
        hits["total"] = found.hits.total
    if found.hits.max_score is not None:
        hits["max_score"] = found.hits.max_score
    response: dict[str, Any] = {"hits": hits}
    if found._shards is not None:
        if not _small_ints(found._shards):
            return None
        response["_shards"] = found._shards
    if found.timed_out is not None:
        response["timed_out"] = found.timed_out
    if found.pit_id is not None:
        response["pit_id"] = found.pit_id
    if found.took is not None:
        response["took"] = found.took
    return response


def decode_docs(body: bytes) -> list[Hit] | None:
    """The ``docs`` of an ``_mget`` answer ``body``, or ``None`` when the envelope refuses
    it (the caller then :func:`parse` s it)."""
    try:
        return _DOCS.decode(body).docs
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None


def _small_ints(value: Any) -> bool:
    """Whether ``value`` (parsed by msgspec) holds no integer orjson reads as a float."""
    if type(value) is int:
        return -(2**63) <= value <= 2**64 - 1
    if isinstance(value, dict):
        return all(map(_small_ints, value.values()))
    if isinstance(value, list):
        return all(map(_small_ints, value))
    return True
