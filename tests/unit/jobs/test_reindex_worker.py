"""The reindex worker around its handler (patched here: no server): a Ctrl-C that is not
the worker's own cancel puts the item back and reaches the caller."""

from __future__ import annotations

import datetime as dt
import threading
from typing import Any

import pytest

from esmapper.jobs import (
    InMemoryWorkQueue,
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
