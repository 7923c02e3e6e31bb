"""The read side calls the feature points and names no feature: a feature registered by a
test (and unregistered after it) reaches every search, count, by-query request and scan
through its ``search`` point, and every by-id read through its ``visible`` point, with no
edit of the core."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper import _features
from esmapper._context import Context
from esmapper._pit import PitTarget, search_target
from tests.integration.conftest import MakeMapper

#: the clause the probe feature adds, and the id it hides
KEEP = {"term": {"name": "keep"}}
HIDDEN = "hidden"


class Probe(_features.Feature):
    """Keeps searches to ``name: keep`` and hides one id; by id, shows only documents
    whose ``name`` is ``keep`` (it reads ``name`` only)."""

    name = "probe_feature"
    index_options = ("probe",)
    __slots__ = ()
    compiled: ClassVar[list[Any]] = []

    @classmethod
    def attach(cls, info: Any) -> Probe | None:
        return cls(info) if info.index is not None and "probe" in info.index.extras else None

    def compile_search(self, ctx: Context, request: Any) -> None:
        Probe.compiled.append(request)

    def search(self, ctx: Context, options: Any) -> tuple[list[Any], list[str]]:
        return [KEEP], [HIDDEN]

    def visible(self, options: Any) -> _features.Visibility | None:
        return _features.Visibility(lambda doc: doc.name == "keep", ("name",))


@pytest.fixture
def probe() -> Iterator[type[Probe]]:
    _features.register(Probe)
    Probe.compiled = []
    try:
        yield Probe
    finally:
        _features.unregister(Probe)


def _model() -> Any:
    class Probed(em.Document):
        name: str = ""

        class Index:
            name = "probed"
            probe = True

    return Probed


def _stored(make_mapper: MakeMapper, model: Any) -> em.Repository[Any]:
    repo = make_mapper(model).repository(model)
    names = {"a": "keep", "b": "keep", "c": "drop", HIDDEN: "keep"}
    repo.add([model(id=id, name=name) for id, name in names.items()], consistency="immediate")
    return repo


def test_the_search_point_reaches_find_count_exists_and_aggregations(
    make_mapper: MakeMapper, probe: type[Probe], caplog: pytest.LogCaptureFixture
) -> None:
    repo = _stored(make_mapper, _model())
    with caplog.at_level(logging.DEBUG, logger="esmapper.query"):
        assert sorted(d.id for d in repo.find(sort="name")) == ["a", "b"]
        assert repo.count() == 2
        assert repo.exists(filter="name:drop") is False
        terms: Any = repo.aggregate(aggregations="terms:name")["terms_name"]
        assert [(b.key, b.total) for b in terms.buckets] == [("keep", 2)]
    searches = [r.getMessage() for r in caplog.records if r.getMessage().startswith("search")]
    assert len(searches) == 4
    for message in searches:  # the clause in filter, the hidden id in must_not
        assert str(KEEP) in message and f"'values': ['{HIDDEN}']" in message
    # compile_search saw each request compiled (its aggregations already compiled)
    assert len(probe.compiled) == 4 and probe.compiled[-1].aggs


def test_the_search_point_reaches_scans_and_by_query_writes(
    make_mapper: MakeMapper, probe: type[Probe], es_client: Elasticsearch
) -> None:
    repo = _stored(make_mapper, _model())
    seen: list[str] = []
    repo.batch_process(None, lambda docs: seen.extend(d.id for d in docs), batch_size=1)
    assert sorted(seen) == ["a", "b"]  # every page of the point in time
    removed = repo.remove_all(None, consistency="immediate")  # one _delete_by_query
    assert removed == 2
    left = es_client.search(index=repo.spec.alias, query={"match_all": {}})["hits"]["hits"]
    assert sorted(h["_id"] for h in left) == ["c", HIDDEN]


def test_the_visible_point_decides_the_reads_by_id(
    make_mapper: MakeMapper, probe: type[Probe]
) -> None:
    repo = _stored(make_mapper, _model())
    assert repo.get("a") is not None and repo.get("c") is None
    assert [d.id for d in repo.get_many(["c", "a", HIDDEN])] == ["a", HIDDEN]  # not searched
    assert repo.exists("a") is True and repo.exists("c") is False
    with repo.mapper.session() as session:
        assert session.get(type(repo.get("a")), "c") is None  # type: ignore[arg-type]


def test_without_the_feature_nothing_is_added(
    make_mapper: MakeMapper, caplog: pytest.LogCaptureFixture
) -> None:
    with pytest.raises(em.IndexConfigurationError):  # the option is nobody's
        _model()

    class Plain(em.Document):
        name: str = ""

        class Index:
            name = "probed-plain"

    repo = _stored(make_mapper, Plain)
    assert Plain.__esmapper__.points.search == () == Plain.__esmapper__.points.visible
    with caplog.at_level(logging.DEBUG, logger="esmapper.query"):
        assert repo.count() == 4
    assert "'match_all': {}" in caplog.records[-1].getMessage()
    # where its point in time or a by-query request goes: its alias
    target = search_target(repo.services, Plain.__esmapper__)
    assert target == PitTarget(repo.spec.alias, listed=False)
    assert search_target(repo.services, Plain.__esmapper__, ["x", "y"]) == PitTarget("x,y", True)
