"""The reindex worker around its handler (patched here: no server): a Ctrl-C that is not
the worker's own cancel puts the item back and reaches the caller; an item for another
worker is released, its attempts kept for the worker that can run it."""

from __future__ import annotations

import datetime as dt
import threading
from typing import Any

import pytest

import esmapper as em
from esmapper.jobs import (
    InMemoryWorkQueue,
    Lease,
    QueueCounts,
    ReindexWorker,
    ReindexWorkItem,
    _reindex_items,
)


def item() -> ReindexWorkItem:
    return ReindexWorkItem(old_index="items-v1", new_index="items-v2", alias="items")


def test_a_ctrl_c_puts_the_item_back_and_reaches_the_caller(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(_reindex_items, "handle_reindex_work_item", interrupted)
    queue = InMemoryWorkQueue(retry_delay=dt.timedelta(0))
    queue.enqueue(item())
    worker = ReindexWorker(object(), queue)

    with pytest.raises(KeyboardInterrupt):
        worker.run_once()
    assert queue.counts() == QueueCounts(pending=1, leased=0, failed=0)
    with pytest.raises(KeyboardInterrupt):  # the loop ends too, it does not take the next
        worker.loop(threading.Event(), idle=dt.timedelta(seconds=60))
    assert queue.counts() == QueueCounts(pending=1, leased=0, failed=0)


def test_an_item_for_another_worker_is_released_without_using_up_its_attempts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Old workers still running in a rolling deploy meet the new release's item: they
    leave it, however often, and the new release's worker still gets every attempt."""
    refusal = em.WorkItemError("reindex:items:items-v2: another release", foreign=True)

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise refusal

    monkeypatch.setattr(_reindex_items, "handle_reindex_work_item", refuse)
    queue = InMemoryWorkQueue(max_attempts=1)
    queue.enqueue(item())
    worker = ReindexWorker(object(), queue)
    for _ in range(3):
        result = worker.run_once()
        assert result is not None and result.is_success and result.skipped
        assert "left for another worker" in result.message
    assert queue.counts() == QueueCounts(pending=1, leased=0, failed=0)
    stop = threading.Event()
    seen: list[em.JobResult] = []

    def stop_after_one(result: em.JobResult) -> None:
        seen.append(result)
        stop.set()

    assert worker.loop(stop, idle=dt.timedelta(seconds=60), on_result=stop_after_one) == 0
    assert len(seen) == 1 and seen[0].skipped

    # a refusal that is not foreign (an older release's item) counts: failed at once here
    refusal = em.WorkItemError("reindex:items:items-v2: an older release")
    result = worker.run_once()
    assert result is not None and result.is_failed
    assert queue.counts() == QueueCounts(pending=0, leased=0, failed=1)


class LostAnswers(InMemoryWorkQueue):
    """The answer to the first ``complete``/``abandon`` is lost: after the queue applied
    it (``applied=True``) or before."""

    def __init__(self, applied: bool) -> None:
        super().__init__(retry_delay=dt.timedelta(0))
        self.applied = applied
        self.lost: list[str] = []

    def _lose(self, name: str, call: Any) -> bool:
        if name not in self.lost:
            self.lost.append(name)
            if self.applied:
                call()
            raise ConnectionError(f"connection dropped during {name}")
        return bool(call())

    def complete(self, lease: Lease) -> bool:
        return self._lose("complete", lambda: super(LostAnswers, self).complete(lease))

    def abandon(self, lease: Lease, error: str = "") -> bool:
        return self._lose("abandon", lambda: super(LostAnswers, self).abandon(lease, error))


@pytest.mark.parametrize("applied", [True, False])
def test_a_lost_answer_to_complete_or_abandon_is_asked_again(
    monkeypatch: pytest.MonkeyPatch, applied: bool
) -> None:
    """The queue calls are token-checked, so sending them again is safe: an item done is
    reported done and not run again, an item that failed is back in the queue once."""
    runs: list[ReindexWorkItem] = []

    def reindexed(mapper: Any, work: ReindexWorkItem, **kwargs: Any) -> Any:
        runs.append(work)
        if len(runs) == 2:
            raise RuntimeError("boom")
        return em.ReindexResult(
            model="Item", alias=work.alias, old_index=work.old_index,
            new_index=work.new_index, status="reindexed", swapped=True,
        )  # fmt: skip

    monkeypatch.setattr(_reindex_items, "handle_reindex_work_item", reindexed)
    queue = LostAnswers(applied)
    queue.enqueue(item())
    worker = ReindexWorker(object(), queue)
    done = worker.run_once()
    assert done is not None and done.is_success, done
    assert queue.counts() == QueueCounts(pending=0, leased=0, failed=0)
    queue.enqueue(item())
    failed = worker.run_once()
    assert failed is not None and failed.is_failed and "boom" in failed.message
    assert queue.counts() == QueueCounts(pending=1, leased=0, failed=0)
    assert queue.lost == ["complete", "abandon"] and len(runs) == 2
