"""A time-series document with an ObjectId id is stored in its date's partition, which is
also its id's (issue 25, item 8).

Before: such a document went to the partition of the time its id encodes, whatever its
date, so a document dated now with a 3-day-old id was stored 3 days back (a date-pruned
count missed it, ``maintain`` deleted it 27 days later, younger than ``max_age``), and a
40-day-old id made the add of a document dated now raise ``IndexMaxAgeExceededError``.
Now an ObjectId id whose period is not its date's is refused before anything is sent
(``DocumentValidationError`` naming the id, its time and the date); an id of the
document's own period is placed there without a lookup, and read by id in one request.
"""

from __future__ import annotations

import datetime as dt
import re

import pytest
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper.indexes import IndexMaxAgeExceededError, maintain
from esmapper.testing.faults import FaultProxy
from tests.integration.conftest import FakeClock, MakeMapper

from .models import DailyLog, MonthlyAudit

UTC = dt.timezone.utc
NOW = dt.datetime(2026, 3, 10, 12, 30, tzinfo=UTC)


def _log_indexes(client: Elasticsearch, prefix: str) -> list[str]:
    found = client.indices.get(index=f"{prefix}*", expand_wildcards="all").body
    return sorted(name for name in found if "logs" in name)


def _refused(caught: pytest.ExceptionInfo[em.DocumentValidationError], oid: str) -> None:
    error = caught.value
    assert not isinstance(error, IndexMaxAgeExceededError)
    assert error.field == "created_utc" and error.ids == (oid,)
    message = str(error)
    assert oid in message
    assert em.ObjectId(oid).created_at.isoformat() in message
    assert NOW.isoformat() in message
    assert re.search(r"ObjectId\.new\(at=", message)


def test_an_objectid_of_another_day_than_the_document_date_is_refused_before_anything_is_sent(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    repo = make_mapper(DailyLog, clock=FakeClock(NOW)).repository(DailyLog)
    oid = str(em.ObjectId.new(at=NOW - dt.timedelta(days=3)))

    with pytest.raises(em.DocumentValidationError) as caught:
        repo.add(DailyLog(id=oid, message="visit", created_utc=NOW))
    _refused(caught, oid)
    with pytest.raises(em.DocumentValidationError) as caught:  # dated now by add()
        repo.add(DailyLog(id=oid, message="visit"))
    _refused(caught, oid)
    with pytest.raises(em.DocumentValidationError) as caught:
        repo.save(DailyLog(id=oid, message="visit", created_utc=NOW))
    _refused(caught, oid)
    assert _log_indexes(es_client, index_prefix) == []  # no partition, nothing written


def test_a_session_flush_refuses_an_objectid_of_another_day_and_writes_nothing(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    mapper = make_mapper(DailyLog, clock=FakeClock(NOW))
    oid = str(em.ObjectId.new(at=NOW - dt.timedelta(days=3)))
    with mapper.session() as s:
        s.add(DailyLog(message="fine", created_utc=NOW))
        s.add(DailyLog(id=oid, message="visit", created_utc=NOW))
        with pytest.raises(em.DocumentValidationError) as caught:
            s.flush()
        _refused(caught, oid)
        s.rollback()
    assert _log_indexes(es_client, index_prefix) == []


def test_an_objectid_40_days_old_on_a_document_dated_now_is_refused_as_a_mismatch(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    repo = make_mapper(DailyLog, clock=FakeClock(NOW)).repository(DailyLog)
    oid = str(em.ObjectId.new(at=NOW - dt.timedelta(days=40)))
    with pytest.raises(em.DocumentValidationError) as caught:
        repo.add(DailyLog(id=oid, message="visit", created_utc=NOW))
    _refused(caught, oid)
    # dated like its id: then it is expired, as any document of that day
    with pytest.raises(IndexMaxAgeExceededError):
        repo.add(DailyLog(id=oid, created_utc=em.ObjectId(oid).created_at))
    assert _log_indexes(es_client, index_prefix) == []


def test_a_monthly_objectid_of_the_document_month_is_accepted(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    repo = make_mapper(MonthlyAudit, clock=FakeClock(NOW)).repository(MonthlyAudit)
    same_month = str(em.ObjectId.new(at=dt.datetime(2026, 3, 1, tzinfo=UTC)))
    repo.add(MonthlyAudit(id=same_month, action="a", created_utc=NOW))
    assert es_client.get(index=f"{index_prefix}audit-2026.03", id=same_month)["found"]
    other_month = str(em.ObjectId.new(at=dt.datetime(2026, 2, 28, 23, 59, tzinfo=UTC)))
    with pytest.raises(em.DocumentValidationError, match="month"):
        repo.add(MonthlyAudit(id=other_month, action="b", created_utc=NOW))


def test_an_objectid_of_the_document_day_is_stored_by_date_and_read_by_id_in_one_request(
    make_mapper: MakeMapper, proxy: FaultProxy, es_client: Elasticsearch, index_prefix: str
) -> None:
    clock = FakeClock(NOW)
    mapper = make_mapper(DailyLog, clock=clock, url=proxy.url)
    repo = mapper.repository(DailyLog)
    oid = str(em.ObjectId.new(at=NOW - dt.timedelta(hours=10)))  # 02:30 the same day
    repo.add(DailyLog(id=oid, message="visit", created_utc=NOW))
    assert es_client.get(index=f"{index_prefix}logs-2026.03.10", id=oid)["found"]

    def requests(call: object) -> list[str]:
        before = len(proxy.requests)
        call()  # type: ignore[operator]
        return [f"{r.method} {r.path}" for r in proxy.requests[before:]]

    assert requests(lambda: repo.get(oid)) == [f"GET /{index_prefix}logs-2026.03.10/_doc/{oid}"]
    assert repo.exists(oid)
    assert [d.id for d in repo.get_many([oid])] == [oid]
    repo.patch(oid, em.PartialPatch({"message": "patched"}))
    with mapper.session() as s:
        loaded = s.get(DailyLog, oid)
        assert loaded is not None and loaded.message == "patched"
        loaded.message = "flushed"
    es_client.indices.refresh(index=f"{index_prefix}logs")
    assert repo.count(partitions=(NOW - dt.timedelta(hours=1), NOW)) == 1

    clock.now = NOW + dt.timedelta(days=28)  # younger than max_age: kept
    assert maintain(mapper).deleted == ()
    stored = repo.get(oid)
    assert stored is not None and stored.message == "flushed"
    repo.remove(oid, consistency="immediate")
    assert repo.get(oid) is None
