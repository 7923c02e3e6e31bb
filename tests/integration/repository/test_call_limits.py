"""Per-call ``timeout=`` / ``retries=`` and the mapper's bulk
back-off: what each call sends under them, through the fault proxy."""

from __future__ import annotations

import datetime as _dt
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from elastic_transport import ConnectionTimeout
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper.testing.faults import FaultProxy
from tests.integration.conftest import FakeClock, MakeMapper
from tests.integration.indexes.models import DailyLog, ItemV1

NOW = _dt.datetime(2026, 3, 10, 12, 30, tzinfo=_dt.timezone.utc)


class Note(em.Document, em.Versioned):
    class Index:
        name = "notes"

    text: str = ""
    n: int = 0


@pytest.fixture
def slept() -> list[float]:
    return []


@pytest.fixture
def mapper(make_mapper: MakeMapper, proxy: FaultProxy, slept: list[float]) -> em.Mapper:
    return make_mapper(
        Note,
        url=proxy.url,
        configure=True,
        initial_backoff=0.25,
        max_backoff=0.6,
        sleep=slept.append,
    )


@pytest.fixture
def raw(es_url: str) -> Iterator[Elasticsearch]:
    with Elasticsearch(es_url) as client:
        yield client


def test_the_bulk_back_off_is_the_mappers(
    mapper: em.Mapper, proxy: FaultProxy, slept: list[float]
) -> None:
    proxy.fail_bulk_items(1, status=429, times=3)
    note = mapper.repository(Note).add(Note(id="a", text="x"))
    assert note.version is not None
    assert slept == [0.25, 0.5, 0.6]  # initial_backoff * 2**attempt, capped at max_backoff


def test_retries_replaces_max_retries_for_one_call(
    mapper: em.Mapper, proxy: FaultProxy, slept: list[float], raw: Elasticsearch
) -> None:
    repo = mapper.repository(Note)
    proxy.fail_bulk_items(1, status=429, times=2)
    with pytest.raises(em.DocumentError, match="failed with status 429"):
        repo.add(Note(id="a"), retries=1)
    assert slept == [0.25]
    assert not raw.exists(index=repo.spec.alias, id="a")

    proxy.clear_faults()
    slept.clear()
    proxy.fail_bulk_items(1, status=429, times=1)
    with pytest.raises(em.DocumentError, match="failed with status 429"):
        repo.add(Note(id="b"), retries=0)
    assert slept == []
    repo.add(Note(id="b"))  # the next call has the mapper's retries again
    assert raw.exists(index=repo.spec.alias, id="b")


def test_a_session_passes_its_retries_to_its_flush(
    mapper: em.Mapper, proxy: FaultProxy, slept: list[float]
) -> None:
    proxy.fail_bulk_items(1, status=503, times=5)
    with (
        pytest.raises(em.DocumentError, match="failed with status 503"),
        mapper.session(retries=2) as s,
    ):
        s.add(Note(id="s"))
    assert slept == [0.25, 0.5]


def test_timeout_bounds_each_request_of_a_read(mapper: em.Mapper, proxy: FaultProxy) -> None:
    repo = mapper.repository(Note)
    repo.add(Note(id="a"), consistency="immediate")
    proxy.delay(2.0, path=r"/_doc/a$", method="GET")
    with pytest.raises(ConnectionTimeout):
        repo.get("a", timeout=0.3, cache=False)
    proxy.clear_faults()
    assert repo.get("a", timeout=_dt.timedelta(seconds=5), cache=False) is not None


def test_a_later_page_runs_under_the_timeout_of_its_find(
    mapper: em.Mapper, proxy: FaultProxy
) -> None:
    repo = mapper.repository(Note)
    repo.add([Note(id=f"n{i}", n=i) for i in range(4)], consistency="immediate")
    results = repo.find(sort="n", limit=2, timeout=0.3)
    assert [d.id for d in results] == ["n0", "n1"]
    proxy.delay(2.0, path=r"/_search$")
    with pytest.raises(ConnectionTimeout):
        results.next_page()
    proxy.clear_faults()
    # the same page again, without the fault
    assert results.next_page()
    assert [d.id for d in results] == ["n2", "n3"]


def test_the_timeout_of_the_call_that_registers_a_model_does_not_stick_to_it(
    proxy: FaultProxy, index_prefix: str
) -> None:
    """The first use of a model inside ``session(timeout=0.5)`` registers it. Its spec
    holds the mapper's base client, not that call's view: a later write without a timeout
    (the client's 30 s) may wait 1.5 s for its time-series id lookup."""
    with em.Mapper(proxy.url, index_prefix=index_prefix, clock=FakeClock(NOW)) as mapper:
        with mapper.session(timeout=0.5) as session:
            session.get(DailyLog, "never")  # first use of DailyLog: registered here
        repo = mapper.repository(DailyLog)
        repo.add(DailyLog(message="first", created_utc=NOW))  # today's partition
        proxy.delay(1.5, path=r"/_mget$")  # the real-time id lookup of a supplied id
        doc = repo.add(DailyLog(id="supplied-1", message="m", created_utc=NOW))
        assert repo.get(doc.id) is not None


def test_timeout_bounds_the_time_series_id_lookup_of_a_write(
    proxy: FaultProxy, index_prefix: str
) -> None:
    """``timeout=`` is the request_timeout of every request of the call: the id lookup a
    write sends before the bulk (``IndexSpec.write_targets(client=mapper.client)``)."""
    with em.Mapper(
        proxy.url, models=[DailyLog], index_prefix=index_prefix, clock=FakeClock(NOW)
    ) as mapper:
        repo = mapper.repository(DailyLog)
        repo.add(DailyLog(message="first", created_utc=NOW))
        proxy.delay(2.0, path=r"/_mget$")
        with pytest.raises(ConnectionTimeout):
            repo.add(DailyLog(id="supplied-2", message="m", created_utc=NOW), timeout=0.5)
        assert proxy.count(r"/_bulk$") == 1  # the first add only: nothing more was written


def test_timeout_bounds_the_index_check_of_a_first_write(
    proxy: FaultProxy, index_prefix: str
) -> None:
    with em.Mapper(proxy.url, models=[ItemV1], index_prefix=index_prefix) as mapper:
        proxy.delay(2.0, path=rf"/_alias/{index_prefix}items$", method="GET")
        with pytest.raises(ConnectionTimeout):
            mapper.repository(ItemV1).add(ItemV1(name="a"), timeout=0.5)
        proxy.clear_faults()
        assert mapper.repository(ItemV1).add(ItemV1(name="b")).id is not None


def test_a_write_that_times_out_is_settled_by_reading_it_back(
    mapper: em.Mapper, proxy: FaultProxy, raw: Elasticsearch
) -> None:
    repo = mapper.repository(Note)
    # the bulk is held past the call's timeout: the client gives up, the pipeline reads
    # the id back (not there yet) and sends the create again; the held request reaches the
    # server later and is refused as a duplicate: one document, confirmed
    proxy.delay(1.5, path=r"/_bulk$")
    proxy.reset_counts()
    note = repo.add(Note(id="late", text="t"), timeout=0.5)
    assert note.version is not None
    assert proxy.count(r"/_mget$") == 1  # the client gave up: the outcome was read back
    assert proxy.count(r"/_bulk$") == 2  # resent only after reading "not applied"
    stored = raw.get(index=repo.spec.alias, id="late")
    assert note.version == f"{stored['_primary_term']}:{stored['_seq_no']}"
    time.sleep(1.5)  # the held create reaches the server now: refused as a duplicate
    raw.indices.refresh(index=repo.spec.alias)
    assert raw.count(index=repo.spec.alias)["count"] == 1
    assert raw.get(index=repo.spec.alias, id="late")["_seq_no"] == stored["_seq_no"]


def test_retries_bounds_the_conflict_rounds_of_remove_all(
    mapper: em.Mapper, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = mapper.repository(Note)
    repo.add([Note(id="a"), Note(id="b")], consistency="immediate")
    sent: list[dict[str, Any]] = []

    class Conflicting:
        def __init__(self, client: Any) -> None:
            self.client = client

        def delete_by_query(self, **kwargs: Any) -> Any:
            sent.append(kwargs)

            return SimpleNamespace(body={"deleted": 0, "version_conflicts": 2})

        def __getattr__(self, name: str) -> Any:
            return getattr(self.client, name)

    real = mapper.client.options
    monkeypatch.setattr(mapper.client, "options", lambda **kw: Conflicting(real(**kw)))
    with pytest.raises(em.VersionConflictError, match="after 3 delete-by-query rounds"):
        repo.remove_all(retries=2)
    assert len(sent) == 3


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("timeout", -1, "timeout=-1 must be a positive"),
        ("timeout", "5s", "timeout='5s' must be a number of seconds or a timedelta"),
        ("timeout", float("nan"), "must be a positive, finite"),
        ("retries", -1, "retries=-1 must be an integer >= 0"),
        ("retries", True, "retries=True must be an integer"),
        ("retries", 1.5, "retries=1.5 must be an integer"),
    ],
)
def test_bad_limits_are_refused_before_anything_is_sent(
    mapper: em.Mapper, proxy: FaultProxy, option: str, value: Any, message: str
) -> None:
    repo = mapper.repository(Note)
    proxy.reset_counts()
    with pytest.raises(ValueError, match=message):
        repo.add(Note(id="x"), **{option: value})
    with pytest.raises(ValueError, match=message):
        repo.find("text:x", **{option: value})
    with pytest.raises(ValueError, match=message):
        mapper.session(**{option: value})
    assert proxy.count() == 0
