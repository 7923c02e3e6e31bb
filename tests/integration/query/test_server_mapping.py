"""Field resolution consults the server mapping: a field added by hand with PUT
mapping is found after ``repo.refresh_mapping()`` or after a minute, never before; declared
names never send the read; a server refusing GET mapping leaves the declared fields."""

from __future__ import annotations

import datetime as dt
import logging
import threading
from typing import Any

import pytest
from elasticsearch import ApiError, Elasticsearch

import esmapper as em
from esmapper.testing.faults import FaultProxy
from tests.integration.conftest import FakeClock, MakeMapper

NOW = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.timezone.utc)
MAPPING_PATH = r".*/_mapping"


class Gadget(em.Document, em.Versioned):
    class Index:
        name = "gadgets"
        dynamic = "strict"

    name: str = ""
    price: int = 0


def put_color(es_client: Elasticsearch, repo: em.Repository[Gadget]) -> None:
    """Map ``color`` by hand and store a red gadget holding it."""
    alias = repo.spec.alias
    es_client.indices.put_mapping(index=alias, properties={"color": {"type": "keyword"}})
    es_client.index(
        index=alias, id="g1", document={"id": "g1", "name": "lamp", "color": "red"}, refresh=True
    )
    es_client.index(
        index=alias, id="g2", document={"id": "g2", "name": "desk", "color": "blue"}, refresh=True
    )


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(NOW)


def test_a_field_put_by_hand_is_found_after_refresh_mapping(
    make_mapper: MakeMapper, es_client: Elasticsearch, clock: FakeClock
) -> None:
    repo = make_mapper(Gadget, configure=True, clock=clock).repository(Gadget)
    with pytest.raises(em.QueryValidationError, match="Unknown field 'color'"):
        repo.find("color:red")  # the server does not map it yet (and this read is cached)
    put_color(es_client, repo)
    with pytest.raises(em.QueryValidationError, match="Unknown field 'color'"):
        repo.find("color:red")  # the read of a minute ago is still used
    repo.refresh_mapping()
    found = repo.find("color:red")
    assert [doc.id for doc in found.documents] == ["g1"]
    # sort, aggregations, includes and highlight resolve it too
    assert [d.id for d in repo.find(sort="-color").documents] == ["g1", "g2"]
    assert repo.aggregate(aggregations="terms:color") is not None
    repo.find("color:red", includes=["name", "color"])


def test_a_field_put_by_hand_is_found_a_minute_later(
    make_mapper: MakeMapper, es_client: Elasticsearch, clock: FakeClock
) -> None:
    repo = make_mapper(Gadget, configure=True, clock=clock).repository(Gadget)
    with pytest.raises(em.QueryValidationError):
        repo.find("color:red")
    put_color(es_client, repo)
    clock.now = NOW + dt.timedelta(seconds=59)
    with pytest.raises(em.QueryValidationError):
        repo.find("color:red")
    clock.now = NOW + dt.timedelta(seconds=60)
    assert [doc.id for doc in repo.find("color:red").documents] == ["g1"]


def test_declared_names_send_no_mapping_read(
    make_mapper: MakeMapper, proxy: FaultProxy, clock: FakeClock
) -> None:
    repo = make_mapper(Gadget, url=proxy.url, configure=True, clock=clock).repository(Gadget)
    repo.add(Gadget(id="g1", name="lamp", price=3))
    proxy.reset_counts()
    repo.search("name:lamp price:>1", sort="-price", aggregations="terms:name", includes=["name*"])
    repo.find("name:lamp", highlight="name", excludes=["price"])
    repo.count("price:3")
    assert proxy.count(MAPPING_PATH) == 0
    assert proxy.count() == 2  # the find and the count, nothing else
    # an unknown name reads the mapping once per minute, however many searches name it
    for _ in range(3):
        with pytest.raises(em.QueryValidationError):
            repo.search("colour:red")
    assert proxy.count(MAPPING_PATH, method="GET") == 1


def test_unknown_field_suggests_server_fields(
    make_mapper: MakeMapper, es_client: Elasticsearch, clock: FakeClock
) -> None:
    repo = make_mapper(Gadget, configure=True, clock=clock).repository(Gadget)
    put_color(es_client, repo)
    with pytest.raises(em.QueryValidationError, match=r"did you mean 'color'\?"):
        repo.find("colour:red")


def test_declared_fields_win_over_the_server_mapping(
    make_mapper: MakeMapper, es_client: Elasticsearch, clock: FakeClock
) -> None:
    repo = make_mapper(Gadget, configure=True, clock=clock).repository(Gadget)
    put_color(es_client, repo)
    # the server's ``name.raw`` is found, ``name`` stays the declared keyword
    es_client.indices.put_mapping(
        index=repo.spec.alias,
        properties={"name": {"type": "keyword", "fields": {"raw": {"type": "keyword"}}}},
    )
    request = repo.search("name:lamp name.raw:lamp")
    assert request.catalog.resolve("name") is repo.info.catalog.resolve("name")
    assert [d.id for d in repo.find("name.raw:lamp").documents] == ["g1"]


def test_a_server_refusing_get_mapping_leaves_the_declared_fields(
    make_mapper: MakeMapper,
    es_client: Elasticsearch,
    proxy: FaultProxy,
    clock: FakeClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    repo = make_mapper(Gadget, url=proxy.url, configure=True, clock=clock).repository(Gadget)
    put_color(es_client, repo)
    proxy.reply_status(403, times=5, method="GET", path=MAPPING_PATH)
    with caplog.at_level(logging.INFO, logger="esmapper.query"):
        with pytest.raises(em.QueryValidationError, match="Unknown field 'color'"):
            repo.find("color:red")
        with pytest.raises(em.QueryValidationError, match="Unknown field 'color'"):
            repo.find("color:red")
    assert proxy.count(MAPPING_PATH, method="GET") == 1  # the refusal is kept for the minute
    assert "refused" in caplog.text
    assert [d.id for d in repo.find("name:lamp").documents] == ["g1"]


def _index_behind(
    es_client: Elasticsearch, alias: str, name: str, properties: dict[str, Any]
) -> None:
    """Create ``name`` mapping ``properties`` and put it behind ``alias`` (a reindex in
    flight, or a time-series partition)."""
    es_client.indices.create(index=name, mappings={"properties": properties})
    es_client.indices.update_aliases(actions=[{"add": {"index": name, "alias": alias}}])


def test_a_field_the_indexes_behind_the_alias_map_differently_is_refused(
    make_mapper: MakeMapper, es_client: Elasticsearch, clock: FakeClock
) -> None:
    # an old index maps ``code`` as text, the new one as keyword: no one query is right for
    # both (a term query misses the old index's analysed values), so the name is refused,
    # naming what each index maps, rather than resolved as one of them
    repo = make_mapper(Gadget, configure=True, clock=clock).repository(Gadget)
    alias = repo.spec.alias
    _index_behind(
        es_client, alias, f"{alias}-v9", {"code": {"type": "text"}, "tag": {"type": "keyword"}}
    )
    _index_behind(
        es_client, alias, f"{alias}-v10", {"code": {"type": "keyword"}, "tag": {"type": "keyword"}}
    )
    message = (
        rf"field 'code' is mapped differently by the indexes behind {alias}: "
        rf"keyword \({alias}-v10\), text \({alias}-v9\)"
    )
    with pytest.raises(em.QueryValidationError, match=message) as caught:
        repo.search("code:x")
    assert caught.value.field == "code"
    with pytest.raises(em.QueryValidationError, match=message):
        repo.search(sort="code")
    assert "term" in str(repo.search("tag:x").body())  # one type everywhere: resolved


def test_a_sub_field_the_indexes_behind_the_alias_map_differently_is_refused(
    make_mapper: MakeMapper, es_client: Elasticsearch, clock: FakeClock
) -> None:
    # ``title.raw`` a keyword in one index and analysed text in the other
    repo = make_mapper(Gadget, configure=True, clock=clock).repository(Gadget)
    alias = repo.spec.alias
    for version, raw in (("v2", "keyword"), ("v3", "text")):
        title = {"type": "text", "fields": {"raw": {"type": raw}}}
        _index_behind(es_client, alias, f"{alias}-{version}", {"title": title})
    with pytest.raises(em.QueryValidationError, match=r"field 'title.raw' is mapped differently"):
        repo.search("title.raw:x")
    assert "match" in str(repo.search("title:x").body())  # text in both: resolved


def test_a_field_mapped_differently_may_still_be_selected(
    make_mapper: MakeMapper, es_client: Elasticsearch, clock: FakeClock
) -> None:
    # source filtering does not depend on the type: includes/excludes of such a field work
    repo = make_mapper(Gadget, configure=True, clock=clock).repository(Gadget)
    alias = repo.spec.alias
    _index_behind(es_client, alias, f"{alias}-v2", {"code": {"type": "text"}})
    _index_behind(es_client, alias, f"{alias}-v3", {"code": {"type": "keyword"}})
    es_client.index(index=f"{alias}-v3", id="g9", document={"id": "g9", "code": "A"}, refresh=True)
    request = repo.search("id:g9", includes=["name", "code"])
    assert request.body()["_source"] == {"includes": ["name", "code", "id"]}
    assert repo.search("id:g9", excludes=["code"]).body()["_source"] == {"excludes": ["code"]}
    assert [d.id for d in repo.find("id:g9", includes=["name", "code"]).documents] == ["g9"]


def test_a_nested_path_one_index_maps_as_an_object_is_refused(
    make_mapper: MakeMapper, es_client: Elasticsearch, clock: FakeClock
) -> None:
    # a nested query on an index that maps the path as an object fails on its shards
    repo = make_mapper(Gadget, configure=True, clock=clock).repository(Gadget)
    alias = repo.spec.alias
    sku = {"sku": {"type": "keyword"}}
    _index_behind(es_client, alias, f"{alias}-v2", {"parts": {"type": "nested", "properties": sku}})
    _index_behind(es_client, alias, f"{alias}-v3", {"parts": {"properties": sku}})
    with pytest.raises(em.QueryValidationError, match=r"nested \(.*-v2\), object \(.*-v3\)"):
        repo.search("parts.sku:x")


def test_field_aliases_and_runtime_fields_the_server_maps_resolve(
    make_mapper: MakeMapper, es_client: Elasticsearch, clock: FakeClock
) -> None:
    # a field alias is its target's field (type, subfields); a runtime field is a field of
    # its type (both are searched by their own name on the server)
    repo = make_mapper(Gadget, configure=True, clock=clock).repository(Gadget)
    put_color(es_client, repo)
    es_client.indices.put_mapping(
        index=repo.spec.alias,
        properties={"hue": {"type": "alias", "path": "color"}},
        runtime={"shade": {"type": "keyword", "script": {"source": "emit('red')"}}},
    )
    found = repo.find("hue:red")
    assert [doc.id for doc in found.documents] == ["g1"]
    assert [d.id for d in repo.find(sort="-hue").documents] == ["g1", "g2"]
    assert repo.search("shade:red").body()["query"] == {"term": {"shade": "red"}}


def test_a_mapping_read_that_failed_is_not_reported_as_an_unknown_field(
    make_mapper: MakeMapper,
    es_client: Elasticsearch,
    proxy: FaultProxy,
    clock: FakeClock,
) -> None:
    # a 500 (or a dropped connection) says nothing about the field: answering "Unknown
    # field 'color'" would blame the query (a 400 to whoever typed it) for the server's
    # trouble; the client's error is raised, and the next search reads the mapping again
    repo = make_mapper(Gadget, url=proxy.url, configure=True, clock=clock).repository(Gadget)
    put_color(es_client, repo)
    proxy.reply_status(500, times=1, method="GET", path=MAPPING_PATH)
    with pytest.raises(ApiError) as caught:
        repo.find("color:red")
    assert not isinstance(caught.value, em.QueryValidationError)
    proxy.clear_faults()
    assert [doc.id for doc in repo.find("color:red").documents] == ["g1"]
    assert [d.id for d in repo.find("name:lamp").documents] == ["g1"]  # declared: no read


class Widget(em.Document):
    class Index:
        name = "widgets"

    name: str = ""


def test_a_slow_mapping_read_of_one_model_does_not_hold_up_another_model(
    make_mapper: MakeMapper, proxy: FaultProxy, clock: FakeClock
) -> None:
    mapper = make_mapper(Gadget, Widget, url=proxy.url, configure=True, clock=clock)
    gadgets, widgets = mapper.repository(Gadget), mapper.repository(Widget)
    held = proxy.hold(method="GET", path=rf".*{gadgets.spec.alias}.*/_mapping")

    gadget_outcome: list[BaseException] = []

    def search_gadgets() -> None:
        try:
            gadgets.search("color:red")
        except Exception as exc:
            gadget_outcome.append(exc)

    gadget_search = threading.Thread(target=search_gadgets, daemon=True)
    gadget_search.start()
    try:
        assert held.wait_arrived(60)
        widget_done = threading.Event()

        def search_widgets() -> None:
            with pytest.raises(em.QueryValidationError, match="Unknown field 'colour'"):
                widgets.search("colour:red")  # reads the widgets' mapping meanwhile
            widget_done.set()

        threading.Thread(target=search_widgets, daemon=True).start()
        assert widget_done.wait(60)
        assert gadget_outcome == []  # the gadgets' read is still held meanwhile
    finally:
        held.forward()
        gadget_search.join(60)
    # once let through, the gadgets' read answers its search (no timeout meanwhile)
    assert [type(e) for e in gadget_outcome] == [em.QueryValidationError]
