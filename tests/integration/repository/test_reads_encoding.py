"""Review of today's hot paths: get_many hydrating straight from the mget answer (duplicate,
missing, soft-deleted and cached ids mixed; in-place changes of what it returned still
detected), and the bulk writer's cached-prefix encoding against the general path, byte
for byte, for edge values (then stored and read back)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper import _json
from esmapper._bulk_encode import encode as _encode
from esmapper._bulk_encode import encode_general as _encode_general
from esmapper.bulk import BulkAction, BulkWriter
from tests.integration.conftest import MakeMapper


class Part(em.InnerDoc):
    label: str = ""


class BigPart(Part):
    size: int = 0


class Crate(em.Document, em.HasDates, em.SoftDeletes, em.Versioned):
    class Index:
        name = "review_read_crates"
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012
        cache = dt.timedelta(minutes=5)

    name: str = em.field(em.Keyword(), default="")
    tags: list[str] = em.field(factory=list)
    part: Part | None = None
    parts: list[Part] = em.field(factory=list)
    seen: dt.datetime | None = None


@pytest.fixture
def mapper(make_mapper: MakeMapper) -> em.Mapper:
    return make_mapper(Crate, configure=True, cache=em.InMemoryCache())


@pytest.mark.parametrize("cache", [False, True])
def test_get_many_of_duplicate_missing_soft_deleted_and_cached_ids(
    mapper: em.Mapper, cache: bool
) -> None:
    repo = mapper.repository(Crate)
    crates = repo.add(
        [Crate(name=f"c{i}", tags=[f"t{i}"]) for i in range(5)], consistency="immediate"
    )
    crates[2].is_deleted = True
    repo.save(crates[2], consistency="immediate")
    assert repo.get(crates[3].id, cache=True) is not None  # one of them already cached
    ids = [crates[4].id, "missing", crates[2].id, crates[3].id, crates[4].id, crates[0].id]
    got = repo.get_many(ids, cache=cache)
    assert [c.id for c in got] == [crates[4].id, crates[3].id, crates[0].id]
    assert [c.version for c in got] == [crates[4].version, crates[3].version, crates[0].version]
    deleted = repo.get_many(ids, cache=cache, soft_deletes="deleted")
    assert [c.id for c in deleted] == [crates[2].id]
    every = repo.get_many(ids, cache=cache, soft_deletes="all")
    assert [c.id for c in every] == [crates[4].id, crates[2].id, crates[3].id, crates[0].id]
    # the same id twice gives one object, and a change made in place is still a change
    with mapper.session(consistency="immediate") as session:
        loaded = session.get_many(Crate, ids, cache=cache)
        assert len(loaded) == 3 and len({id(c) for c in loaded}) == 3
        loaded[0].tags.append("more")
        assert loaded[0] in session.dirty
    assert repo.get(crates[4].id).tags == ["t4", "more"]  # type: ignore[union-attr]
    # a second read gives fresh objects: the first's change did not leak into a source
    again = repo.get_many([crates[4].id, crates[4].id], cache=cache)
    assert len(again) == 1 and again[0].tags == ["t4", "more"]


UTC = dt.timezone.utc
EDGE_BODIES: list[dict[str, Any]] = [
    {"s": 'ünïcødé \u2028 "quoted" \\ back', "none_in_list": [None, 1, None]},
    {"naive": dt.datetime(2026, 1, 2, 3, 4, 5), "aware": dt.datetime(2026, 1, 2, tzinfo=UTC)},
    {"micro": dt.datetime(2026, 1, 2, 3, 4, 5, 7, tzinfo=UTC), "date": dt.date(2026, 2, 3)},
    {"offset": dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.timezone(dt.timedelta(hours=-5)))},
    {"nested": {"deep": [{"x": 1.5}, {"y": -0.0}, []]}, "big": 2**63 - 1, "neg": -(2**63)},
    {},
]
IDS = ["plain", "ünï/cødé", 'q"uote', "back\\slash", "sp ace", "a" * 200]


@pytest.mark.parametrize("op", ["index", "create", "update"])
@pytest.mark.parametrize("condition", [None, (0, 1), (123456789, 7)])
@pytest.mark.parametrize("require_alias", [False, True])
def test_the_cached_prefix_encoding_is_the_general_encoding_byte_for_byte(
    op: str, condition: tuple[int, int] | None, require_alias: bool
) -> None:
    for index in ("plain-index", "ünï-index", 'we"ird'):
        for doc_id in IDS:
            for body in EDGE_BODIES:
                sent = {"doc": body} if op == "update" else body
                action = BulkAction(
                    op,  # type: ignore[arg-type]
                    index,
                    doc_id,
                    sent,
                    if_seq_no=condition[0] if condition else None,
                    if_primary_term=condition[1] if condition else None,
                    require_alias=require_alias,
                )
                assert _encode(0, action) == _encode_general(0, action)
                _head, source, tail = _encode(0, action).split(b"\n")
                assert tail == b"" and _json.loads(source) == _json.loads(_json.dumps(sent))


def test_edge_values_through_the_fast_path_are_stored_as_sent(
    es_client: Elasticsearch, index_prefix: str
) -> None:
    index = f"{index_prefix}review_encoding"
    es_client.indices.create(index=index)
    writer = BulkWriter(es_client)
    actions = [
        BulkAction("index", index, doc_id, body)
        for doc_id, body in zip(IDS, EDGE_BODIES, strict=True)
    ]
    outcomes = writer.write(actions, refresh=True)
    assert all(o.ok for o in outcomes), [o.reason for o in outcomes if not o.ok]
    for action in actions:
        stored = es_client.get(index=index, id=action.id)["_source"]
        assert stored == _json.loads(_json.dumps(action.body))


def test_documents_with_edge_values_round_trip_through_the_codec(mapper: em.Mapper) -> None:
    repo = mapper.repository(Crate)
    naive = dt.datetime(2026, 5, 6, 7, 8, 9, 123456)
    crate = Crate(
        name='ünï "q" \\',
        tags=["a", "ü"],
        part=BigPart(label="big", size=3),
        parts=[Part(label="p"), BigPart(label="q", size=4)],
        seen=naive,
    )
    repo.add(crate, consistency="immediate")
    source = mapper.client.get(index=mapper.spec(Crate).read_target, id=crate.id)["_source"]
    assert source["part"] == {"label": "big", "size": 3}
    assert source["parts"] == [{"label": "p"}, {"label": "q", "size": 4}]
    assert source["seen"] == "2026-05-06T07:08:09.123456Z"  # naive is read as UTC
    assert source["name"] == 'ünï "q" \\'
    back = repo.get(crate.id)
    assert back is not None and back.seen == naive.replace(tzinfo=UTC)
    crate.seen = dt.datetime(2026, 5, 6, 9, 8, 9, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    repo.save(crate, consistency="immediate")
    source = mapper.client.get(index=mapper.spec(Crate).read_target, id=crate.id)["_source"]
    assert source["seen"] == "2026-05-06T07:08:09Z"
