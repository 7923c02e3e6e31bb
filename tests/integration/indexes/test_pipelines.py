"""Ingest pipelines (``class Index: pipeline``) on every write path, against the server."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper.errors import IndexConfigurationError, OutcomeUnknownError
from esmapper.indexes import reindex
from esmapper.testing.faults import FaultProxy
from tests.integration.conftest import MakeMapper
from tests.integration.indexes.models import SETTINGS

TAGGER = "esmapper-test-tagger"
STAMPER = "esmapper-test-stamper"


class Tagged(em.Document, em.Versioned):
    class Index:
        name = "tagged"
        settings = SETTINGS
        pipeline = TAGGER

    title: str = em.field(em.Keyword(), default="")
    tag: str = em.field(em.Keyword(), default="")


class TaggedV1(em.Document):
    class Index:
        name = "retagged"
        settings = SETTINGS

    title: str = em.field(em.Keyword(), default="")
    tag: str = em.field(em.Keyword(), default="")


class TaggedV2(em.Document):
    class Index:
        name = "retagged"
        version = 2
        settings = SETTINGS
        pipeline = TAGGER

    title: str = em.field(em.Keyword(), default="")
    tag: str = em.field(em.Keyword(), default="")


UPPER = {"description": "upper-cases titles", "processors": [{"uppercase": {"field": "title"}}]}


class Defined(em.Document):
    class Index:
        name = "defined"
        settings = SETTINGS
        pipeline = UPPER

    title: str = em.field(em.Keyword(), default="")


class DefinedV2(em.Document):
    """Defined with another definition of its pipeline."""

    class Index:
        name = "defined"
        settings = SETTINGS
        pipeline = {"processors": [{"lowercase": {"field": "title"}}]}  # noqa: RUF012

    title: str = em.field(em.Keyword(), default="")


class Stamped(em.Document):
    class Index:
        name = "stamped"
        settings = SETTINGS
        pipeline = STAMPER

    title: str = em.field(em.Keyword(), default="")


@pytest.fixture
def tagger(es_client: Elasticsearch) -> Iterator[str]:
    es_client.ingest.put_pipeline(
        id=TAGGER, processors=[{"set": {"field": "tag", "value": "piped"}}]
    )
    yield TAGGER
    es_client.options(ignore_status=404).ingest.delete_pipeline(id=TAGGER)


def _stored(es_client: Elasticsearch, index: str, id: str) -> dict[str, object]:
    return dict(es_client.get(index=index, id=id)["_source"])


def test_creates_and_index_writes_run_the_pipeline_updates_cannot(
    make_mapper: MakeMapper,
    es_client: Elasticsearch,
    index_prefix: str,
    tagger: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    alias = f"{index_prefix}tagged"
    mapper = make_mapper(Tagged)
    repo = mapper.repository(Tagged)
    doc = repo.add(Tagged(id="a", title="t"))  # create
    assert _stored(es_client, alias, "a") == {"id": "a", "title": "t", "tag": "piped"}
    doc.tag, doc.title = "by hand", "t2"
    repo.save(doc)  # index: the pipeline runs again
    assert _stored(es_client, alias, "a")["tag"] == "piped"
    with mapper.session() as session:  # a flush is a bulk of creates
        session.add(Tagged(id="b", title="s"))
    assert _stored(es_client, alias, "b")["tag"] == "piped"
    repo.patch("b", em.JsonPatch([{"op": "replace", "path": "/tag", "value": "json"}]))
    assert _stored(es_client, alias, "b")["tag"] == "piped"  # a client-side patch: index
    with caplog.at_level(logging.INFO, logger="esmapper.indexes"):
        repo.patch("a", em.PartialPatch({"tag": "partial"}))
        repo.patch("b", em.PartialPatch({"tag": "partial"}))
    assert _stored(es_client, alias, "a")["tag"] == "partial"  # the Update API has no pipeline
    said = [
        r.getMessage() for r in caplog.records if "do not run ingest pipeline" in r.getMessage()
    ]
    assert said == [f"Tagged: partial updates do not run ingest pipeline {TAGGER} (Elasticsearch's "
                    "update API has none)"]  # fmt: skip


def test_update_by_query_carries_the_pipeline(
    make_mapper: MakeMapper, es_url: str, tagger: str
) -> None:
    with FaultProxy(es_url, lifetime=120) as proxy:
        repo = make_mapper(Tagged, url=proxy.url).repository(Tagged)
        repo.add(Tagged(id="a"), consistency="immediate")
        assert repo.patch_all(None, em.ScriptPatch("ctx._source.title = 'x'")) == 1
        (sent,) = [r for r in proxy.requests if r.path.endswith("/_update_by_query")]
    assert f"pipeline={TAGGER}" in sent.query


@pytest.mark.real_es
def test_update_by_query_runs_the_pipeline(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str, tagger: str
) -> None:
    """noida-db accepts the ``pipeline`` parameter of ``_update_by_query`` but ignores it."""
    repo = make_mapper(Tagged).repository(Tagged)
    repo.add(Tagged(id="a"), consistency="immediate")
    repo.patch("a", em.PartialPatch({"tag": "partial"}), consistency="immediate")
    repo.patch_all(None, em.ScriptPatch("ctx._source.title = 'x'"), consistency="immediate")
    assert _stored(es_client, f"{index_prefix}tagged", "a")["tag"] == "piped"


def test_a_reindex_runs_the_new_versions_pipeline(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str, tagger: str
) -> None:
    make_mapper(TaggedV1).repository(TaggedV1).add(
        [TaggedV1(id="a"), TaggedV1(id="b")], consistency="immediate"
    )
    result = reindex(make_mapper(TaggedV2), TaggedV2)
    assert result.new_index == f"{index_prefix}retagged-v2"
    for id in ("a", "b"):
        assert _stored(es_client, f"{index_prefix}retagged", id)["tag"] == "piped"


def test_a_defined_pipeline_is_created_updated_and_made_by_the_first_write(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    name = f"{index_prefix}defined-pipeline"
    repo = make_mapper(Defined).repository(Defined)
    repo.add(Defined(id="a", title="hello"))  # no configure_indexes: the write creates it
    assert _stored(es_client, f"{index_prefix}defined", "a")["title"] == "HELLO"
    assert es_client.ingest.get_pipeline(id=name)[name]["description"] == "upper-cases titles"
    assert make_mapper(Defined).spec(Defined).pipeline is not None
    from esmapper.indexes.pipelines import configure_pipeline

    mapper = make_mapper(DefinedV2)
    assert configure_pipeline(es_client, mapper.spec(DefinedV2)) == "updated"
    assert configure_pipeline(es_client, mapper.spec(DefinedV2)) == "unchanged"
    mapper.repository(DefinedV2).add(DefinedV2(id="b", title="HeLLo"))
    assert _stored(es_client, f"{index_prefix}defined", "b")["title"] == "hello"
    # an older process's first write leaves the newer definition alone
    make_mapper(Defined).repository(Defined).add(Defined(id="c", title="Mixed"))
    assert _stored(es_client, f"{index_prefix}defined", "c")["title"] == "mixed"


def test_configure_refuses_a_named_pipeline_that_does_not_exist(make_mapper: MakeMapper) -> None:
    with pytest.raises(IndexConfigurationError, match=f"pipeline '{TAGGER}' does not exist"):
        make_mapper(Tagged).configure_indexes()


def test_a_lost_answer_is_read_back_through_the_pipeline(
    make_mapper: MakeMapper, es_client: Elasticsearch, es_url: str, index_prefix: str, tagger: str
) -> None:
    with FaultProxy(es_url, lifetime=120) as proxy:
        repo = make_mapper(Tagged, url=proxy.url).repository(Tagged)
        repo.add(Tagged(id="warm"))  # the index exists: only the bulk below goes through
        proxy.drop_connection(path=r"/_bulk$", after_forwarding=True)
        doc = repo.add(Tagged(id="a", title="t"))  # applied, its answer lost
        assert doc.version is not None
        assert proxy.count(r"/_simulate$") == 1 and proxy.count(r"/_bulk$") == 2
    assert _stored(es_client, f"{index_prefix}tagged", "a")["tag"] == "piped"


def test_a_pipeline_that_is_not_deterministic_makes_a_lost_create_unknown(
    make_mapper: MakeMapper, es_client: Elasticsearch, es_url: str
) -> None:
    es_client.ingest.put_pipeline(
        id=STAMPER, processors=[{"set": {"field": "stamp", "value": "{{_ingest.timestamp}}"}}]
    )
    try:
        probe = es_client.ingest.simulate(id=STAMPER, docs=[{"_source": {}}])["docs"][0]
        if "{{" in str(probe["doc"]["_source"]["stamp"]):
            pytest.skip("the server does not render templates in set processors")
        with FaultProxy(es_url, lifetime=120) as proxy:
            repo = make_mapper(Stamped, url=proxy.url).repository(Stamped)
            repo.add(Stamped(id="warm"))
            proxy.drop_connection(path=r"/_bulk$", after_forwarding=True)
            with pytest.raises(OutcomeUnknownError):
                repo.add(Stamped(id="a"))
            assert proxy.count(r"/_bulk$") == 2  # never resent
    finally:
        es_client.options(ignore_status=404).ingest.delete_pipeline(id=STAMPER)
