"""Long scans through a point in time: the ``snapshot=`` keep-alive, its extension by every
page, and what happens when the point in time is gone anyway (batch_process raises with
its progress; patch_all/remove_all continue in a new one).

The loss is made deterministic by closing the point in time (``DELETE /_pit``) from inside
the callback, or by a FaultProxy answering a page request as Elasticsearch answers one
whose point in time expired.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from elasticsearch import Elasticsearch, NotFoundError

import esmapper as em
from esmapper import _by_query, _scan
from esmapper.testing.faults import FaultProxy

from .models import Employee

IDS = [f"e{i:02d}" for i in range(23)]


class RecordingClient(Elasticsearch):
    """An Elasticsearch client that records the point-in-time requests it sends."""

    calls: list[tuple[str, dict[str, Any]]]

    def options(self, **kwargs: Any) -> RecordingClient:  # type: ignore[override]
        client: RecordingClient = super().options(**kwargs)  # type: ignore[assignment]
        client.calls = self.calls
        return client

    def search(self, **kwargs: Any) -> Any:  # type: ignore[override]
        self.calls.append(("search", kwargs))
        return super().search(**kwargs)

    def open_point_in_time(self, **kwargs: Any) -> Any:  # type: ignore[override]
        self.calls.append(("open", kwargs))
        return super().open_point_in_time(**kwargs)

    def close_point_in_time(self, **kwargs: Any) -> Any:  # type: ignore[override]
        self.calls.append(("close", kwargs))
        return super().close_point_in_time(**kwargs)

    def named(self, kind: str) -> list[dict[str, Any]]:
        return [kwargs for name, kwargs in self.calls if name == kind]

    def page_requests(self) -> list[dict[str, Any]]:
        """The ``pit`` part of every search sent through a point in time."""
        bodies = [kwargs.get("body") or {} for kwargs in self.named("search")]
        return [body["pit"] for body in bodies if "pit" in body]

    def current_pit(self) -> str:
        return str(self.page_requests()[-1]["id"])


@pytest.fixture
def client(es_url: str) -> Iterator[RecordingClient]:
    recording = RecordingClient(es_url, request_timeout=60)
    recording.calls = []
    try:
        yield recording
    finally:
        recording.close()


@pytest.fixture
def repo(client: RecordingClient, index_prefix: str) -> Iterator[em.Repository[Employee]]:
    with em.Mapper(client, models=[Employee], index_prefix=index_prefix) as mapper:
        mapper.configure_indexes()
        employees = mapper.repository(Employee)
        employees.add([Employee(id=i, age=n) for n, i in enumerate(IDS)], consistency="wait")
        client.calls.clear()
        yield employees


def close_pit(raw: Elasticsearch, pit_id: str) -> None:
    """What an expiry does, without waiting for it."""
    raw.close_point_in_time(id=pit_id)


def collector(into: list[str]) -> Any:
    def collect(docs: list[Employee]) -> bool:
        into.extend(str(d.id) for d in docs)
        return True

    return collect


# -- the keep-alive -----------------------------------------------------------------------


def test_every_page_request_sends_the_keep_alive(
    repo: em.Repository[Employee], client: RecordingClient
) -> None:
    seen: list[str] = []
    assert repo.batch_process(None, collector(seen), batch_size=5, snapshot="7m") == 23
    assert seen == IDS  # in id order, every document once
    assert [o["keep_alive"] for o in client.named("open")] == ["7m"]
    pages = client.page_requests()
    assert len(pages) == 5  # 5 + 5 + 5 + 5 + 3
    assert [p["keep_alive"] for p in pages] == ["7m"] * 5

    client.calls.clear()
    assert repo.batch_process(None, lambda docs: None, batch_size=10) == 23
    assert [o["keep_alive"] for o in client.named("open")] == ["5m"]  # the default
    assert [p["keep_alive"] for p in client.page_requests()] == ["5m"] * 3


def test_find_snapshot_sets_the_point_in_time_lifetime(
    repo: em.Repository[Employee], client: RecordingClient
) -> None:
    results = repo.find(limit=10, snapshot="3m")
    while results.next_page():
        pass
    assert [o["keep_alive"] for o in client.named("open")] == ["3m"]
    assert [p["keep_alive"] for p in client.page_requests()] == ["3m"] * 3

    client.calls.clear()
    repo.find(limit=50, snapshot=timedelta(minutes=2))
    assert [o["keep_alive"] for o in client.named("open")] == ["120s"]
    client.calls.clear()
    repo.find(limit=50, snapshot=True)
    assert [o["keep_alive"] for o in client.named("open")] == ["5m"]


@pytest.mark.parametrize("bad", ["5x", "0s", "1.5m", "", 5, "5 minutes"])
def test_a_bad_keep_alive_is_refused_before_anything_is_sent(
    repo: em.Repository[Employee], client: RecordingClient, bad: object
) -> None:
    called: list[int] = []
    with pytest.raises(em.QueryValidationError, match="snapshot=") as raised:
        repo.batch_process(None, lambda docs: called.append(1), snapshot=bad)  # type: ignore[arg-type]
    assert raised.value.field == "snapshot"
    with pytest.raises(em.QueryValidationError, match="snapshot="):
        repo.find(snapshot=bad)  # type: ignore[arg-type]
    with pytest.raises(em.QueryValidationError, match="snapshot"):
        repo.batch_process(None, lambda docs: called.append(1), snapshot=False)
    assert client.calls == [] and called == []


def test_slow_batches_finish_because_each_page_extends_the_keep_alive(
    repo: em.Repository[Employee],
) -> None:
    """Six batches of 0.6 s outlive a 2 s keep-alive counted from the opening; each page
    request extends it, so the scan completes (no assertion on time)."""
    seen: list[str] = []

    def slow(docs: list[Employee]) -> None:
        seen.extend(str(d.id) for d in docs)
        time.sleep(0.6)  # the behaviour under test: a batch slower than the keep-alive allows

    assert repo.batch_process(None, slow, batch_size=4, snapshot="2s") == 23
    assert seen == IDS


# -- batch_process when the point in time is gone -------------------------------------------


def test_a_lost_point_in_time_raises_with_how_far_the_run_got(
    repo: em.Repository[Employee], client: RecordingClient, es_client: Elasticsearch
) -> None:
    seen: list[str] = []

    def expire_during_second(docs: list[Employee]) -> bool:
        seen.extend(str(d.id) for d in docs)
        if len(seen) == 10:
            close_pit(es_client, client.current_pit())
        return True

    with pytest.raises(em.SnapshotExpiredError) as raised:
        repo.batch_process(None, expire_during_second, batch_size=5)
    error = raised.value
    assert seen == IDS[:10]
    assert (error.processed, error.pages, error.last_sort) == (10, 2, ["e09"])
    assert error.keep_alive == "5m" and error.error_type == "search_context_missing_exception"
    assert error.index is not None
    assert "10 document(s)" in str(error) and "'e09'" in str(error)
    assert error.search_after is not None and error.search_after in str(error)

    rest: list[str] = []
    resumed = repo.batch_process(
        None, collector(rest), batch_size=5, search_after=error.search_after
    )
    assert resumed == 13 and rest == IDS[10:]  # nothing skipped, nothing twice


def test_a_stopping_or_raising_callback_closes_the_point_in_time(
    repo: em.Repository[Employee], client: RecordingClient, es_client: Elasticsearch
) -> None:
    assert repo.batch_process(None, lambda docs: False, batch_size=5) == 5
    closed = [c["id"] for c in client.named("close")]
    assert closed == [client.current_pit()]
    with pytest.raises(NotFoundError):  # really gone on the server
        es_client.search(pit={"id": closed[0]}, size=1)

    client.calls.clear()

    def boom(docs: list[Employee]) -> None:
        raise RuntimeError("callback failed")

    with pytest.raises(RuntimeError, match="callback failed"):
        repo.batch_process(None, boom, batch_size=5)
    assert [c["id"] for c in client.named("close")] == [client.current_pit()]

    client.calls.clear()

    def stop_after_losing_it(docs: list[Employee]) -> bool:
        close_pit(es_client, client.current_pit())
        return False

    # closing a point in time that is already gone is not an error of the run
    assert repo.batch_process(None, stop_after_losing_it, batch_size=5) == 5


def test_shard_failures_of_a_lost_point_in_time_are_not_skipped_silently(
    es_url: str, index_prefix: str
) -> None:
    with (
        FaultProxy(es_url) as proxy,
        em.Mapper(proxy.url, models=[Employee], index_prefix=index_prefix) as mapper,
    ):
        mapper.configure_indexes()
        repo = mapper.repository(Employee)
        repo.add([Employee(id=i) for i in IDS], consistency="wait")
        failure = {"type": "search_context_missing_exception", "reason": "No search context"}
        partial = {
            "took": 1,
            "timed_out": False,
            "_shards": {
                "total": 2,
                "successful": 1,
                "skipped": 0,
                "failed": 1,
                "failures": [{"shard": 1, "index": "x", "node": "n", "reason": failure}],
            },
            "hits": {"total": {"value": 0, "relation": "eq"}, "max_score": None, "hits": []},
        }
        proxy.reply_status(200, body=partial, path=r"^/_search$", skip=1)
        seen: list[str] = []
        with pytest.raises(em.SnapshotExpiredError) as raised:
            repo.batch_process(None, collector(seen), batch_size=5)
        assert seen == IDS[:5]
        assert (raised.value.processed, raised.value.pages) == (5, 1)
        assert raised.value.reason == "No search context"


# -- patch_all / remove_all continue in a new point in time ---------------------------------


@pytest.fixture
def small_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_by_query, "_PAGE", 5)


def test_patch_all_continues_in_a_new_point_in_time(
    repo: em.Repository[Employee],
    client: RecordingClient,
    es_client: Elasticsearch,
    small_pages: None,
    caplog: pytest.LogCaptureFixture,
) -> None:
    pages: list[int] = []

    def lose_it_once(sender: Any, **kwargs: Any) -> None:
        pages.append(1)
        if len(pages) == 2:
            close_pit(es_client, client.current_pit())

    with (
        em.signals.documents_changed.connected_to(lose_it_once, sender=Employee),
        caplog.at_level(logging.WARNING, logger="esmapper.repository"),
    ):
        # a script that is not idempotent: a document patched twice would show it;
        # cache=True takes the per-document path that scans a point in time
        changed = repo.patch_all(
            None, em.ScriptPatch("ctx._source.age += 100"), cache=True, consistency="wait"
        )
    assert changed == 23
    ages = {str(d.id): d.age for d in repo.find(limit=50)}
    assert ages == {i: n + 100 for n, i in enumerate(IDS)}  # each exactly once
    assert len(client.named("open")) == 2  # one replacement
    assert "continuing after ['e09']" in caplog.text


def test_remove_all_continues_in_a_new_point_in_time(
    repo: em.Repository[Employee],
    client: RecordingClient,
    es_client: Elasticsearch,
    small_pages: None,
) -> None:
    removals: list[int] = []

    def lose_it_once(sender: Any, **kwargs: Any) -> None:
        removals.append(len(kwargs["documents"]))
        if len(removals) == 1:
            close_pit(es_client, client.current_pit())

    with em.signals.documents_removed.connected_to(lose_it_once, sender=Employee):
        assert repo.remove_all(None, consistency="wait") == 23
    assert repo.count() == 0
    assert sum(removals) == 23 and len(client.named("open")) == 2


def test_a_scan_that_keeps_losing_its_point_in_time_gives_up(
    repo: em.Repository[Employee],
    client: RecordingClient,
    es_client: Elasticsearch,
    small_pages: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_scan, "MAX_REOPENS", 2)

    def lose_it_every_page(sender: Any, **kwargs: Any) -> None:
        close_pit(es_client, client.current_pit())

    with (
        em.signals.documents_changed.connected_to(lose_it_every_page, sender=Employee),
        pytest.raises(em.SnapshotExpiredError) as raised,
    ):
        repo.patch_all(
            None, em.ScriptPatch("ctx._source.age += 100"), cache=True, consistency="wait"
        )
    error = raised.value
    # three points in time, one page each: the whole scan's progress is reported
    assert (error.processed, error.pages, error.last_sort) == (15, 3, ["e14"])
    assert len(client.named("open")) == 3
    repo.mapper.client.indices.refresh(index=repo.spec.alias)
    patched = sorted(str(d.id) for d in repo.find("age:>=100", limit=50))
    assert patched == IDS[:15]


def test_a_new_point_in_time_lost_before_its_first_page_is_not_replaced(
    es_url: str, index_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_by_query, "_PAGE", 5)
    expired = {
        "error": {
            "root_cause": [{"type": "search_context_missing_exception", "reason": "gone"}],
            "type": "search_phase_execution_exception",
            "reason": "all shards failed",
        },
        "status": 404,
    }
    with (
        FaultProxy(es_url) as proxy,
        em.Mapper(proxy.url, models=[Employee], index_prefix=index_prefix) as mapper,
    ):
        mapper.configure_indexes()
        repo = mapper.repository(Employee)
        repo.add([Employee(id=i) for i in IDS], consistency="wait")
        # page 2 of the first point in time and page 1 of its replacement are lost
        proxy.reply_status(404, body=expired, path=r"^/_search$", skip=1, times=2)
        with pytest.raises(em.SnapshotExpiredError) as raised:
            repo.remove_all(None, cache=True)
        assert (raised.value.processed, raised.value.pages) == (5, 1)
        assert raised.value.last_sort == ["e04"]
        assert proxy.count(r"/_pit$", method="POST") == 2
        assert proxy.pending_faults == 0
        assert repo.count(consistency="immediate") == 18
