"""``configure_indexes(models)`` from several processes at once on a fresh prefix:
every process succeeds and each model ends with one index (and its alias). (Named models
take no lock: the configuration itself must be safe to run at once; ``configure_indexes()``
for every model runs once under a lock: test_configure_once.py.)

Four real processes wait at a barrier, then configure the same models through a
:class:`FaultProxy`. The first create of each index is held at the proxy until another
process's create of it went through, so the race is not left to timing: the held create is
then answered ``resource_already_exists_exception`` and must count as a success once the
index is checked to be the expected one.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

from elasticsearch import Elasticsearch

from esmapper.indexes import IndexState
from esmapper.testing.faults import FaultProxy
from tests.integration.conftest import MakeMapper
from tests.unit.cli.apps import subprocess_env

from .models import ItemV1

PROCESSES = 4

APP = """
import esmapper as em


class Item(em.Document):
    class Index:
        name = "items"
        version = 1
        settings = {{"number_of_shards": 1, "number_of_replicas": 0}}

    name: str = em.field(em.Keyword(), default="")


class Tag(em.Document):
    class Index:
        name = "tags"
        kind = "plain"
        settings = {{"number_of_shards": 1, "number_of_replicas": 0}}

    label: str = em.field(em.Keyword(), default="")


class Log(em.Document, em.HasDates):
    class Index:
        name = "logs"
        kind = "daily"
        settings = {{"number_of_shards": 1, "number_of_replicas": 0}}

    message: str = ""


mapper = em.Mapper({url!r}, models=[Item, Tag, Log], index_prefix={prefix!r})
"""

WORKER = """
import json, pathlib, sys, time

from concurrent_app import mapper

control = pathlib.Path(sys.argv[1])
(control / f"{sys.argv[2]}.ready").touch()
while not (control / "go").exists():
    time.sleep(0.005)
states = mapper.configure_indexes(mapper.models)  # named: no lock, no marker
print(json.dumps({s.model: s.action for s in states}))
"""


def until(what: str, condition: object, procs: list[subprocess.Popen[str]]) -> None:
    deadline = time.monotonic() + 60
    while not condition():  # type: ignore[operator]
        failed = [p for p in procs if p.poll() not in (None, 0)]
        if failed:
            out, err = failed[0].communicate()
            raise AssertionError(f"a process failed before {what}:\n{out}\n{err}")
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.01)


def test_processes_configuring_at_once_all_succeed_with_one_index_per_model(
    tmp_path: Path, es_url: str, es_client: Elasticsearch, index_prefix: str
) -> None:
    items, tags = f"{index_prefix}items-v1", f"{index_prefix}tags"
    with FaultProxy(es_url, lifetime=120) as proxy:
        app = APP.format(url=proxy.url, prefix=index_prefix)
        (tmp_path / "concurrent_app.py").write_text(app)
        (tmp_path / "worker.py").write_text(WORKER)
        held = [
            proxy.hold(method="PUT", path=rf"^/{items}$"),
            proxy.hold(method="PUT", path=rf"^/{tags}$"),
        ]
        env = subprocess_env(tmp_path)
        procs = [
            subprocess.Popen(
                [sys.executable, "worker.py", str(tmp_path), str(n)],
                cwd=tmp_path,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for n in range(PROCESSES)
        ]
        try:
            until("all ready", lambda: len(list(tmp_path.glob("*.ready"))) == PROCESSES, procs)
            (tmp_path / "go").touch()
            for hold, index in zip(held, (items, tags), strict=True):
                # the held create, and another process's that went through and created it (the
                # proxy counts a request when it arrives: wait for the index too, or the held
                # create may be forwarded before the other one is applied, and win)
                created = lambda i=index: (  # noqa: E731
                    proxy.count(rf"^/{i}$", "PUT") >= 2 and es_client.indices.exists(index=i)
                )
                until(f"two creates of {index}", created, procs)
                hold.forward()
            results = [p.communicate(timeout=60) for p in procs]
        finally:
            for proc in procs:
                proc.kill()
        assert [hold.status for hold in held] == [400, 400]  # resource_already_exists

    for proc, (out, err) in zip(procs, results, strict=True):
        assert proc.returncode == 0, out + err
    reports = [json.loads(out) for out, _ in results]
    for model in ("Item", "Tag"):
        actions = sorted(report[model] for report in reports)
        assert actions == ["created", "unchanged", "unchanged", "unchanged"], (model, reports)
    assert {report["Log"] for report in reports} <= {"created", "template_updated"}

    made = sorted(es_client.indices.get(index=f"{index_prefix}*").body)
    assert made == [items, tags]  # one index per model; no partition yet for the daily one
    assert list(es_client.indices.get_alias(name=f"{index_prefix}items").body) == [items]
    assert es_client.indices.exists_index_template(name=f"{index_prefix}logs-v1-template")


def test_an_alias_created_concurrently_is_not_taken_for_a_concrete_index(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    """The process read "no alias", then another one created the index and its alias before
    the check that the alias name is not a concrete index (``GET /<alias>``)."""
    alias, v1 = f"{index_prefix}items", f"{index_prefix}items-v1"
    with FaultProxy(es_client.transport.node_pool.get().base_url, lifetime=120) as proxy:
        check = proxy.hold(path=rf"^/{alias}$")
        states: list[IndexState] = []
        slow = threading.Thread(
            target=lambda: states.extend(
                make_mapper(ItemV1, url=proxy.url).configure_indexes([ItemV1])  # no lock
            )
        )
        slow.start()
        try:
            assert check.wait_arrived(30)
            assert make_mapper(ItemV1).configure_indexes([ItemV1])[0].action == "created"
        finally:
            check.forward()
            slow.join(timeout=60)
    assert [(s.action, s.current_index) for s in states] == [("unchanged", v1)]
    assert list(es_client.indices.get_alias(name=alias).body) == [v1]
