"""Review: per-call limits (timeout=/retries=) leaking past their call."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import pytest

import esmapper as em
from esmapper.testing.faults import FaultProxy
from tests.integration.indexes.conftest import FakeClock
from tests.integration.indexes.models import DailyLog

NOW = dt.datetime(2026, 3, 10, 12, 30, tzinfo=dt.timezone.utc)


@pytest.fixture
def proxy(es_url: str) -> Iterator[FaultProxy]:
    with FaultProxy(es_url, lifetime=120) as p:
        yield p


def test_a_timeout_of_the_call_that_registers_a_model_sticks_to_its_spec(
    proxy: FaultProxy, index_prefix: str
) -> None:
    """The first use of a model inside ``session(timeout=0.5)`` registers it; the spec keeps
    ``mapper.client`` as it was *inside* that call, so every later write's index checks and
    time-series id lookups run with a 0.5 s timeout, whatever the later call asked."""
    with em.Mapper(proxy.url, index_prefix=index_prefix, clock=FakeClock(NOW)) as mapper:
        with mapper.session(timeout=0.5) as session:
            session.get(DailyLog, "never")  # first use of DailyLog: registered here
        repo = mapper.repository(DailyLog)
        repo.add(DailyLog(message="first", created_utc=NOW))  # today's partition
        proxy.delay(1.5, path=r"/_mget$")  # the real-time id lookup of a supplied id
        # no timeout asked (the client's default is 30 s): a 1.5 s answer must be fine
        doc = repo.add(DailyLog(id="supplied-1", message="m", created_utc=NOW))
        assert repo.get(doc.id) is not None


def test_a_timeout_given_to_add_bounds_the_time_series_id_lookup_too(
    proxy: FaultProxy, index_prefix: str
) -> None:
    """``timeout=`` is documented as the request_timeout of *every* request the call sends;
    the id lookup (and index/partition creation) go through ``spec.client`` instead, with
    the client's default (30 s)."""
    with em.Mapper(
        proxy.url, models=[DailyLog], index_prefix=index_prefix, clock=FakeClock(NOW)
    ) as mapper:
        repo = mapper.repository(DailyLog)
        repo.add(DailyLog(message="first", created_utc=NOW))
        proxy.delay(2.0, path=r"/_mget$")
        with pytest.raises(Exception) as caught:  # noqa: PT011
            repo.add(DailyLog(id="supplied-2", message="m", created_utc=NOW), timeout=0.5)
        assert "timed out" in str(caught.value).lower() or "Timeout" in type(caught.value).__name__


def test_a_timeout_given_to_find_bounds_its_later_pages_too(
    proxy: FaultProxy, index_prefix: str
) -> None:
    """``repo.find(..., timeout=0.5)`` applies the limit to the first page only; the
    ``next_page()`` of the same results runs after the call returned, outside the
    context, with the client's 30 s default."""
    from tests.integration.indexes.models import ItemV1

    with em.Mapper(proxy.url, models=[ItemV1], index_prefix=index_prefix) as mapper:
        repo = mapper.repository(ItemV1)
        repo.add([ItemV1(name=f"i{i}") for i in range(4)], consistency="immediate")
        results = repo.find(limit=2, sort="name", timeout=0.5)
        proxy.delay(2.0, path=r"/_search$")
        with pytest.raises(Exception) as caught:  # noqa: PT011
            results.next_page()
        assert "Timeout" in type(caught.value).__name__
