"""Ctrl-C while models reindex in parallel (``reindex_outdated(max_parallel=)``): it
reaches the calling thread only; the reindexes running in the other threads stop as one
does on Ctrl-C (their tasks cancelled), and the interrupt is raised once they have."""

from __future__ import annotations

import signal
import sys
import threading
from types import SimpleNamespace
from typing import Any

import pytest

from esmapper._server_tasks import run_task
from esmapper.indexes.reindex import _in_parallel
from tests.unit.test_server_tasks import DONE, TASK, FakeClient, _polled, completed

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="signal.pthread_kill")


class First:
    pass


class Second:
    pass


def test_ctrl_c_in_the_caller_cancels_the_tasks_the_parallel_reindexes_follow() -> None:
    # uninterrupted, each task would end after 300 polls (a few seconds, not forever)
    clients: dict[type, Any] = {
        model: FakeClient(states=[{"completed": False}] * 300 + [completed(**DONE)])
        for model in (First, Second)
    }
    polled = {model: _polled(client) for model, client in clients.items()}
    main = threading.main_thread().ident
    assert threading.get_ident() == main  # Ctrl-C goes to this thread
    ended: dict[type, BaseException | None] = {}

    def one(model: type, spec: Any, current: str | None, stop: threading.Event) -> Any:
        if model is First:  # both follow their task, then Ctrl-C reaches the caller
            assert polled[Second].wait(10)
            assert main is not None
            signal.pthread_kill(main, signal.SIGINT)
        try:
            run_task(
                clients[model],
                "update_by_query",
                {"index": "x"},
                what=model.__name__,
                poll_interval=0.01,
            )  # type: ignore[arg-type]
        except BaseException as exc:
            ended[model] = exc
            raise
        ended[model] = None
        return None

    work = [(model, (SimpleNamespace(alias=model.__name__), None)) for model in clients]
    with pytest.raises(KeyboardInterrupt):
        _in_parallel(work, one, 2)  # type: ignore[arg-type]

    assert {model: type(exc) for model, exc in ended.items()} == {
        First: KeyboardInterrupt,
        Second: KeyboardInterrupt,
    }
    assert [client.sent("cancel") for client in clients.values()] == [[TASK], [TASK]]
