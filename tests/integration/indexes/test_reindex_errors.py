"""Documents a reindex cannot copy go to its error index, with the reason; the run still
fails before the swap (nothing is lost), and status and health count the entries."""

from __future__ import annotations

import datetime as dt
import logging
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper.cli import main
from esmapper.indexes import ReindexError, reindex
from esmapper.indexes._reindex_errors import error_counts, is_error_index
from esmapper.testing.faults import FaultProxy
from tests.integration.conftest import MakeMapper
from tests.integration.pausing import Child, children, linux_only

SETTINGS = {"number_of_shards": 1, "number_of_replicas": 0}


class CodeV1(em.Document, em.HasDates, em.Versioned):
    class Index:
        name = "codes"
        version = 1
        settings = SETTINGS

    code: str = em.field(em.Keyword(), default="")


class CodeV2(em.Document, em.HasDates, em.Versioned):
    """Version 2: ``code`` becomes a number; "x" and "y" cannot be parsed as one."""

    class Index:
        name = "codes"
        version = 2
        settings = SETTINGS

    code: int = em.field(em.Long(), default=0)


class LogV1(em.Document, em.HasDates):
    class Index:
        name = "logs"
        kind = "monthly"
        version = 1
        settings = SETTINGS
        date_field = "created_utc"

    code: str = em.field(em.Keyword(), default="")


class LogV2(em.Document, em.HasDates):
    class Index:
        name = "logs"
        kind = "monthly"
        version = 2
        settings = SETTINGS
        date_field = "created_utc"

    code: int = em.field(em.Long(), default=0)


class LogErrorV2(em.Document, em.HasDates, em.Versioned):
    """Another model, named like the time-series ``logs`` model plus ``-error``."""

    class Index:
        name = "logs-error"
        version = 2
        settings = SETTINGS

    code: str = em.field(em.Keyword(), default="")


def _seed(make_mapper: MakeMapper, codes: list[str]) -> None:
    mapper = make_mapper(CodeV1, configure=True)
    mapper.repository(CodeV1).add(
        [CodeV1(id=f"d{i}", code=c) for i, c in enumerate(codes)], consistency="immediate"
    )


def _entries(es: Elasticsearch, index: str) -> dict[str, dict[str, Any]]:
    hits = es.search(index=index, size=100)["hits"]["hits"]
    return {h["_id"]: h["_source"] for h in hits}


def test_documents_that_fail_to_copy_are_recorded_with_the_reason_and_nothing_moves(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    _seed(make_mapper, ["1", "x", "3", "y"])
    mapper = make_mapper(CodeV2, configure=True)
    alias, v1, v2 = f"{index_prefix}codes", f"{index_prefix}codes-v1", f"{index_prefix}codes-v2"

    with pytest.raises(
        ReindexError, match=rf"\(2 document\(s\) recorded in {v2}-error\)"
    ) as failed:
        reindex(mapper, CodeV2)

    result = failed.value.result
    assert (result.status, result.swapped) == ("failed", False)
    assert (result.error_index, result.error_count) == (f"{v2}-error", 2)
    assert sorted(failed.value.ids) == ["d1", "d3"]
    # the run still fails before the swap: the alias serves every document from v1
    assert sorted(es_client.indices.get_alias(name=alias).body) == [v1]
    assert not es_client.indices.exists(index=v2)
    entries = _entries(es_client, f"{v2}-error")
    assert sorted(entries) == [f"{v1}/d1", f"{v1}/d3"]
    entry = entries[f"{v1}/d1"]
    assert (entry["index"], entry["target"], entry["id"]) == (v1, v2, "d1")
    assert (entry["found"], entry["version"], entry["status"]) == (True, 1, 400)
    assert entry["source"]["code"] == "x"
    assert entry["type"] == failed.value.error_type
    assert "failed to parse" in entry["reason"] and entry["phase"] == "copy"
    assert entry["cause"]["type"] == entry["type"]
    # the error index is searchable by its fields, not by the document's
    hits = es_client.search(index=f"{v2}-error", query={"term": {"id": "d3"}})["hits"]["hits"]
    assert [h["_id"] for h in hits] == [f"{v1}/d3"]
    assert error_counts(es_client, mapper.spec(CodeV2)) == {f"{v2}-error": 2}


def test_a_document_whose_id_is_near_the_limit_is_recorded_too(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    """An ``_id`` may be 512 bytes: ``<old>/<id>`` would be longer, and Elasticsearch
    refuses it (the entry was lost); the entry's ``_id`` is then the id's digest, stable
    across reruns, and its ``id`` field the real id."""
    long_id = "k" * 500
    seed = make_mapper(CodeV1, configure=True)
    seed.repository(CodeV1).add(CodeV1(id=long_id, code="x"), consistency="immediate")
    mapper = make_mapper(CodeV2, configure=True)

    for _ in range(2):  # a rerun overwrites the same entry
        with pytest.raises(ReindexError) as failed:
            reindex(mapper, CodeV2)
        assert failed.value.result.error_count == 1

    error = f"{index_prefix}codes-v2-error"
    (entry,) = _entries(es_client, error).values()
    assert (entry["id"], entry["index"]) == (long_id, f"{index_prefix}codes-v1")
    assert entry["source"]["code"] == "x"


def test_a_rerun_that_fails_on_the_same_documents_overwrites_their_entries(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    _seed(make_mapper, ["x", "2"])
    mapper = make_mapper(CodeV2, configure=True)
    for _ in range(2):
        with pytest.raises(ReindexError):
            reindex(mapper, CodeV2)
    assert error_counts(es_client, mapper.spec(CodeV2)) == {f"{index_prefix}codes-v2-error": 1}


def test_once_the_documents_are_fixed_the_rerun_succeeds_and_the_entries_stay_for_inspection(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    _seed(make_mapper, ["1", "x"])
    mapper = make_mapper(CodeV2, configure=True)
    with pytest.raises(ReindexError):
        reindex(mapper, CodeV2)
    old = make_mapper(CodeV1).repository(CodeV1)
    doc = old.get("d1")
    assert doc is not None
    doc.code = "2"
    old.save(doc, consistency="immediate")

    result = reindex(mapper, CodeV2)

    assert (result.status, result.error_index, result.error_count) == ("reindexed", None, 0)
    assert mapper.repository(CodeV2).count() == 2
    assert error_counts(es_client, mapper.spec(CodeV2)) == {f"{index_prefix}codes-v2-error": 1}


#: the mapper ``esmapper --app`` loads in the status test
app_mapper: em.Mapper | None = None


def test_status_and_health_count_the_documents_in_error_indexes(
    make_mapper: MakeMapper, index_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _seed(make_mapper, ["x", "y", "3"])
    mapper = make_mapper(CodeV2, configure=True)
    with pytest.raises(ReindexError):
        reindex(mapper, CodeV2)
    error = f"{index_prefix}codes-v2-error"

    report = mapper.health()
    (model,) = report.models
    assert model.reindex_errors == {error: 2}
    issues = [i for i in report.issues if i.code == "reindex_errors"]
    assert [(i.severity, i.model) for i in issues] == [("warning", "CodeV2")]
    assert error in issues[0].message and "2 documents" in issues[0].message

    monkeypatch.setattr(sys.modules[__name__], "app_mapper", mapper)
    out = CliRunner().invoke(main, ["--app", f"{__name__}:app_mapper", "status"])
    assert out.exit_code == 0, out.output
    assert f"reindex errors: {error} (2 documents" in out.output


def test_the_error_index_belongs_to_the_model_and_is_deleted_with_it(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    _seed(make_mapper, ["x"])
    mapper = make_mapper(CodeV2, configure=True)
    spec = mapper.spec(CodeV2)
    with pytest.raises(ReindexError):
        reindex(mapper, CodeV2)
    assert is_error_index(spec, f"{index_prefix}codes-v2-error")
    assert not is_error_index(spec, f"{index_prefix}codes-v2")

    mapper.delete_indexes([CodeV2])

    assert not es_client.indices.exists(index=f"{index_prefix}codes-v2-error")


def test_a_partition_that_fails_records_in_the_models_error_index_outside_its_aliases(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    when = dt.datetime(2026, 11, 3, tzinfo=dt.timezone.utc)
    clock = lambda: when  # noqa: E731
    old = make_mapper(LogV1, configure=True, clock=clock)
    old.repository(LogV1).add(
        [LogV1(id="a", code="x", created_utc=when), LogV1(id="b", code="2", created_utc=when)],
        consistency="immediate",
    )
    mapper = make_mapper(LogV2, configure=True, clock=clock)

    with pytest.raises(ReindexError) as failed:
        reindex(mapper, LogV2)

    error = f"{index_prefix}logs-v2.error"
    assert failed.value.result.error_index == error
    assert sorted(_entries(es_client, error)) == [f"{index_prefix}logs-v1-2026.11/a"]
    assert es_client.indices.get_alias(index=error).body[error]["aliases"] == {}
    assert mapper.repository(LogV2).count() == 2  # reads through the model: no entries


def test_a_time_series_error_index_never_takes_the_index_of_a_model_named_alias_error(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    """``logs-error`` is a model of its own (its index ``logs-error-v2``): the failures of
    the time-series ``logs`` model are not written into it, not counted as ``logs``'s, and
    ``delete_indexes`` of ``logs`` leaves it alone."""
    other = make_mapper(LogErrorV2, configure=True)
    other.repository(LogErrorV2).add(LogErrorV2(id="own", code="kept"), consistency="immediate")
    theirs = f"{index_prefix}logs-error-v2"
    when = dt.datetime(2026, 11, 3, tzinfo=dt.timezone.utc)
    clock = lambda: when  # noqa: E731
    old = make_mapper(LogV1, configure=True, clock=clock)
    old.repository(LogV1).add([LogV1(id="a", code="x", created_utc=when)], consistency="immediate")
    mapper = make_mapper(LogV2, configure=True, clock=clock)

    with pytest.raises(ReindexError) as failed:
        reindex(mapper, LogV2)

    assert failed.value.result.error_index not in (theirs, None)
    assert sorted(_entries(es_client, theirs)) == ["own"]
    assert theirs not in error_counts(mapper.client, mapper.spec(LogV2))
    mapper.delete_indexes([LogV2])
    assert other.repository(LogErrorV2).get("own") is not None
    assert not es_client.indices.exists(index=str(failed.value.result.error_index))  # its own


def test_a_lost_answer_to_the_recording_is_resent_and_the_run_fails_with_its_own_error(
    make_mapper: MakeMapper, proxy: FaultProxy, es_client: Elasticsearch, index_prefix: str
) -> None:
    _seed(make_mapper, ["x", "y"])
    make_mapper(CodeV2, configure=True)
    proxy.drop_connection(path=r"^/_bulk$", method="POST", after_forwarding=True)

    with pytest.raises(ReindexError) as failed:
        reindex(make_mapper(CodeV2, url=proxy.url), CodeV2)

    assert failed.value.error_type == "document_parsing_exception"
    assert len(_entries(es_client, f"{index_prefix}codes-v2-error")) == 2


def test_a_recording_the_server_refuses_is_logged_and_the_run_fails_with_its_own_error(
    make_mapper: MakeMapper,
    proxy: FaultProxy,
    es_client: Elasticsearch,
    index_prefix: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    _seed(make_mapper, ["x"])
    make_mapper(CodeV2, configure=True)
    proxy.reply_status(403, path=r"codes-v2-error$", method="PUT")

    with (
        caplog.at_level(logging.ERROR, logger="esmapper.indexes"),
        pytest.raises(ReindexError) as failed,
    ):
        reindex(make_mapper(CodeV2, url=proxy.url), CodeV2)

    assert failed.value.error_type == "document_parsing_exception"
    assert failed.value.result.error_index is None
    assert any("recording 1 reindex failure" in r.getMessage() for r in caplog.records)
    assert not es_client.indices.exists(index=f"{index_prefix}codes-v2-error")


@linux_only
def test_a_run_killed_after_recording_leaves_the_old_index_serving_and_the_rerun_finishes(
    tmp_path: Path,
    make_mapper: MakeMapper,
    es_url: str,
    es_client: Elasticsearch,
    index_prefix: str,
) -> None:
    _seed(make_mapper, ["1", "x", "3"])
    make_mapper(CodeV2, configure=True)
    alias, v1, v2 = f"{index_prefix}codes", f"{index_prefix}codes-v1", f"{index_prefix}codes-v2"
    worker = "tests.integration.indexes.reindex_errors_worker"
    with children() as started:
        child = Child(worker, tmp_path, "killed", es_url, index_prefix)
        started.append(child)
        child.wait_paused()
        child.proc.kill()  # kill -9: recorded, not rolled back
        child.proc.communicate()
    assert sorted(_entries(es_client, f"{v2}-error")) == [f"{v1}/d1"]
    assert es_client.indices.exists(index=v2)  # what the copy wrote, never served
    assert sorted(es_client.indices.get_alias(name=alias).body) == [v1]

    mapper = make_mapper(CodeV2)
    with pytest.raises(ReindexError) as again:  # its lock's process is gone: taken at once
        reindex(mapper, CodeV2)
    assert again.value.result.error_count == 1
    assert sorted(_entries(es_client, f"{v2}-error")) == [f"{v1}/d1"]  # overwritten, once
    assert not es_client.indices.exists(index=v2)
    assert sorted(es_client.indices.get_alias(name=alias).body) == [v1]
    assert mapper.repository(CodeV2).count() == 3  # all still served from v1
