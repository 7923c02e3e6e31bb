"""``configure_indexes()`` for a fleet (issue 30, item 4): processes starting
at once configure once (a lock, then a marker saying this configuration is done for 5
minutes); ``force=True`` configures again; named models take neither; ``delete_indexes``
and ``reindex`` clear the marker; a holder paused past its lease is taken over."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from elastic_transport import ConnectionError as TransportConnectionError
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper.indexes import _configured as configured
from esmapper.indexes._configured import MARKER_TTL, ConfigureMarker, configuration_key
from esmapper.indexes.configure import IndexState
from esmapper.locks import LockProvider
from esmapper.testing.faults import FaultProxy
from tests.integration.conftest import FakeClock, MakeMapper
from tests.integration.pausing import ROOT, Child, children, linux_only
from tests.unit.cli.apps import subprocess_env

from .configure_worker import Plain, Thing
from .models import DailyLog

WORKER = "tests.integration.indexes.configure_worker"
PROCESSES = 3


def _configures(proxy: FaultProxy, prefix: str) -> int:
    """How many configurations went through the proxy: each reads the versioned model's
    alias once (``GET /_alias/<alias>``)."""
    return proxy.count(rf"^/_alias/{prefix}things$", "GET")


def _skipped(states: list[IndexState]) -> bool:
    """Whether ``states`` says the marked configuration was skipped, for every model."""
    return bool(states) and all(s.action == "skipped" for s in states)


def test_processes_starting_at_once_configure_once(
    tmp_path: Path, es_url: str, es_client: Elasticsearch, index_prefix: str
) -> None:
    command = [sys.executable, "-m", WORKER, str(tmp_path)]
    with FaultProxy(es_url, lifetime=120) as proxy:
        procs = [
            subprocess.Popen(
                [*command, f"w{n}", proxy.url, index_prefix, "start"],
                cwd=ROOT,
                env=subprocess_env(ROOT),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for n in range(PROCESSES)
        ]
        try:
            (tmp_path / "go").touch()
            results = [p.communicate(timeout=90) for p in procs]
        finally:
            for proc in procs:
                proc.kill()
        for proc, (out, err) in zip(procs, results, strict=True):
            assert proc.returncode == 0, out + err
        outcomes = [json.loads(out.strip().splitlines()[-1]) for out, _ in results]
        assert sorted(o.get("actions") for o in outcomes) == [
            ["created", "created"], ["skipped", "skipped"], ["skipped", "skipped"]
        ], outcomes  # fmt: skip
        assert _configures(proxy, index_prefix) == 1
        assert proxy.count(rf"^/{index_prefix}things-v1$", "PUT") == 1  # created once
        assert proxy.count(rf"^/{index_prefix}plains$", "PUT") == 1
        assert proxy.count(r"/_mapping$", "PUT") == 0
    assert sorted(es_client.indices.get(index=f"{index_prefix}things*,{index_prefix}plains")) == [
        f"{index_prefix}plains", f"{index_prefix}things-v1"
    ]  # fmt: skip


def test_a_marked_configuration_sends_one_read_and_force_configures_again(
    make_mapper: MakeMapper, proxy: FaultProxy, index_prefix: str
) -> None:
    mapper = make_mapper(Thing, Plain, url=proxy.url)
    assert [s.action for s in mapper.configure_indexes()] == ["created", "created"]
    before = len(proxy.requests)
    skipped = mapper.configure_indexes()
    assert [(s.model, s.action, s.current_index) for s in skipped] == [
        ("Thing", "skipped", None), ("Plain", "skipped", None)
    ]  # fmt: skip
    assert [s.expected_index for s in skipped] == [
        f"{index_prefix}things-v1", f"{index_prefix}plains"
    ]  # fmt: skip
    [read] = proxy.requests[before:]  # the marker, nothing else: no lock, no configuration
    assert (read.method, read.path) == (
        "GET", f"/{index_prefix}esmapper-locks/_doc/configure-indexes.done"
    )  # fmt: skip
    again = mapper.configure_indexes(force=True)
    assert [s.action for s in again] == ["unchanged", "unchanged"]
    assert _configures(proxy, index_prefix) == 2


def test_named_models_take_no_lock_and_leave_the_marker(
    make_mapper: MakeMapper, proxy: FaultProxy, index_prefix: str
) -> None:
    mapper = make_mapper(Thing, Plain, url=proxy.url)
    assert [s.action for s in mapper.configure_indexes([Thing])] == ["created"]
    assert proxy.count(r"esmapper-locks") == 0
    assert [s.action for s in mapper.configure_indexes([Thing])] == ["unchanged"]
    assert [s.action for s in mapper.configure_indexes()] == ["unchanged", "created"]


def test_a_new_configuration_is_not_hidden_by_an_older_marker(
    make_mapper: MakeMapper, index_prefix: str
) -> None:
    make_mapper(Thing).configure_indexes()

    class Grown(em.Document):
        class Index:
            name = "things"
            settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

        name: str = em.field(em.Keyword(), default="")
        age: int = 0

    grown = make_mapper(Grown)
    assert configuration_key([grown.spec(Grown)]) != configuration_key(
        [make_mapper(Thing).spec(Thing)]
    )
    assert [s.action for s in grown.configure_indexes()] == ["mapping_updated"]


def test_delete_indexes_and_reindex_clear_the_marker(
    make_mapper: MakeMapper, index_prefix: str
) -> None:
    mapper = make_mapper(Thing, Plain)
    mapper.configure_indexes()
    marker = ConfigureMarker.of(mapper.services)
    key = configuration_key([mapper.spec(Thing), mapper.spec(Plain)])
    assert marker.is_set(key)
    mapper.delete_indexes([Plain])
    assert not marker.is_set(key)
    assert [s.action for s in mapper.configure_indexes()] == ["unchanged", "created"]
    assert marker.is_set(key)
    em.reindex(mapper, Thing)  # up to date: nothing copied, the marker cleared all the same
    assert not marker.is_set(key)


def test_the_marker_expires_after_five_minutes(make_mapper: MakeMapper, index_prefix: str) -> None:
    clock = FakeClock(dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc))
    mapper = make_mapper(Thing, clock=clock)
    assert mapper.configure_indexes()[0].action == "created"
    clock.now += MARKER_TTL - dt.timedelta(seconds=1)
    assert _skipped(mapper.configure_indexes())
    clock.now += dt.timedelta(seconds=2)
    assert [s.action for s in mapper.configure_indexes()] == ["unchanged"]


def test_a_shared_cache_holds_the_marker(make_mapper: MakeMapper, index_prefix: str) -> None:
    class SharedCache:  # any cache client but the in-process InMemoryCache is shared
        def __init__(self) -> None:
            self.store = em.InMemoryCache()

        def __getattr__(self, name: str) -> Any:
            return getattr(self.store, name)

    cache = SharedCache()
    mapper = make_mapper(Thing, cache=cache)
    mapper.configure_indexes()
    key = configuration_key([mapper.spec(Thing)])
    assert cache.get(f"{index_prefix}esmapper:configure-indexes") == key
    assert _skipped(mapper.configure_indexes())
    other = make_mapper(Thing, cache=cache)  # another process sharing the cache
    assert _skipped(other.configure_indexes())
    mapper.delete_indexes()
    assert cache.get(f"{index_prefix}esmapper:configure-indexes") is None


def test_a_lost_marker_read_is_not_taken_for_not_configured(
    make_mapper: MakeMapper, proxy: FaultProxy, index_prefix: str
) -> None:
    mapper = make_mapper(Thing, url=proxy.url, max_retries=0)
    mapper.configure_indexes()
    proxy.drop_connection(path=r"/_doc/configure-indexes\.done$", times=50)
    with pytest.raises(TransportConnectionError):  # after the transport's own retries
        mapper.configure_indexes()
    assert _configures(proxy, index_prefix) == 1  # nothing configured on a guess


def test_a_lock_held_past_the_wait_is_a_lock_error(
    make_mapper: MakeMapper, index_prefix: str
) -> None:
    mapper = make_mapper(Thing)
    locks = LockProvider(mapper.client, index_prefix=index_prefix)
    with locks.acquire("configure-indexes"):
        with pytest.raises(em.LockError, match="configure-indexes"):
            mapper.configure_indexes(lock_wait=dt.timedelta(0))
        with pytest.raises(ValueError, match="lock_wait"):
            mapper.configure_indexes(lock_wait=dt.timedelta(seconds=-1))
    with pytest.raises(TypeError, match="force"):
        mapper.configure_indexes(force="yes")  # type: ignore[arg-type]


@linux_only
def test_a_holder_paused_past_its_lease_is_taken_over(
    tmp_path: Path, make_mapper: MakeMapper, es_url: str, index_prefix: str
) -> None:
    with children() as started:
        a = Child(WORKER, tmp_path, "a", es_url, index_prefix, "pause", "2")
        started.append(a)
        a.wait_paused()  # under the configure lock, before configuring
        a.stop()
        other = make_mapper(Thing, Plain)
        took_over = other.configure_indexes(lock_wait=dt.timedelta(seconds=30))
        a.resume()
        resumed = a.outcome()
    assert [s.action for s in took_over] == ["created", "created"]
    assert resumed == {"actions": ["unchanged", "unchanged"]}, resumed  # idempotent, no error
    assert _skipped(other.configure_indexes())  # marked by both


# -- the marker and the lock never stop a configuration that can be done ------------------


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (403, {"type": "security_exception", "reason": "action [indices:data/write/index] "
                                                      "is unauthorized"}),
        (403, {"type": "cluster_block_exception", "reason": "blocked by: [FORBIDDEN/6/"
                                                            "cluster read-only (api)]"}),
        (404, {"type": "index_not_found_exception", "reason": "no such index and "
                                                              "[action.auto_create_index] is "
                                                              "[false]"}),
    ],
)  # fmt: skip
def test_a_user_or_cluster_refusing_the_locks_index_configures_unlocked(
    make_mapper: MakeMapper,
    proxy: FaultProxy,
    index_prefix: str,
    status: int,
    error: dict[str, str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    mapper = make_mapper(Thing, Plain, url=proxy.url)
    body = {"error": {**error, "root_cause": [error]}, "status": status}
    proxy.reply_status(status, times=100, path=r"esmapper-locks/_(doc|create)/", method="PUT",
                       body=body)  # fmt: skip
    with caplog.at_level("WARNING", logger="esmapper.indexes"):
        assert [s.action for s in mapper.configure_indexes()] == ["created", "created"]
    assert "without the lock and the marker" in caplog.text
    assert [s.action for s in mapper.configure_indexes()] == ["unchanged", "unchanged"]


def test_a_marker_write_that_fails_leaves_the_configuration_done(
    make_mapper: MakeMapper, proxy: FaultProxy, index_prefix: str
) -> None:
    mapper = make_mapper(Thing, url=proxy.url, max_retries=0)
    # the write and the transport's 3 retries of it fail
    proxy.reply_status(503, times=4, path=r"/_doc/configure-indexes\.done$", method="PUT")
    assert [s.action for s in mapper.configure_indexes()] == ["created"]  # not an error
    assert [s.action for s in mapper.configure_indexes()] == ["unchanged"]  # not marked
    assert _skipped(mapper.configure_indexes())


def test_a_shared_cache_that_fails_is_taken_for_not_marked(
    make_mapper: MakeMapper, index_prefix: str
) -> None:
    class DownCache:  # a shared cache whose server is gone
        def __init__(self) -> None:
            self.store = em.InMemoryCache()

        def __getattr__(self, name: str) -> Any:
            def down(*args: Any, **kwargs: Any) -> Any:
                raise ConnectionRefusedError("cache server down")

            return down

    mapper = make_mapper(Thing, cache=DownCache())
    assert [s.action for s in mapper.configure_indexes()] == ["created"]
    assert [s.action for s in mapper.configure_indexes()] == ["unchanged"]


def test_an_esmapper_upgrade_is_a_new_configuration(
    make_mapper: MakeMapper, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = make_mapper(Thing).spec(Thing)
    before = configuration_key([spec])
    monkeypatch.setattr(configured, "__version__", "999.0.0")
    assert configuration_key([spec]) != before


def test_a_time_series_model_skipped_names_its_partitions(make_mapper: MakeMapper) -> None:
    mapper = make_mapper(DailyLog)
    mapper.configure_indexes()
    [state] = mapper.configure_indexes()
    assert state.action == "skipped" and state.expected_index == mapper.spec(DailyLog).index_pattern


def test_a_user_that_may_not_clear_the_marker_still_deletes_indexes(
    make_mapper: MakeMapper, proxy: FaultProxy, index_prefix: str, es_client: Elasticsearch
) -> None:
    mapper = make_mapper(Thing, url=proxy.url)
    mapper.configure_indexes()
    proxy.reply_status(403, times=1, method="DELETE", path=r"/_doc/configure-indexes\.done$")
    [report] = mapper.delete_indexes()
    assert not report.empty
    assert not es_client.indices.exists(index=f"{index_prefix}things-v1")
