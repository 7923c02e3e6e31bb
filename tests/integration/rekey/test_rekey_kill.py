"""``esmapper ids rekey --apply`` killed with SIGKILL at chosen requests, then run again
(issue 11): no document is lost, duplicated or changed, and the reruns say what happened.

The real command runs in a subprocess, talking to the server through a FaultProxy. Each
kill point holds one request the command sends (the PIT open, the N-th create, the N-th
delete of an old id, the second page of the scan) until the command is blocked on it,
then the command is killed. The held request is then dropped (it never reached the
server) or forwarded (it was applied, but its answer never read). After every kill the
test reads the true state (realtime ``_mget``, nothing refreshed), checks that
every document is under its old id, its new id, or both with the same content (an
interrupted move), runs ``ids rekey`` without ``--apply`` and checks it reports exactly
that state. The next kill is a rerun that resumes from there; at the end one rerun
completes the work.

The index never refreshes on a timer (``refresh_interval: -1``, as for a bulk migration),
so what a rerun's scan sees does not depend on how fast it starts after the kill.

Soak runs scale the work: ``ESMAPPER_REKEY_KILL_DOCS`` (documents to re-key, default 600)
and ``ESMAPPER_REKEY_KILL_POINTS`` (kills, default 7, at least 2).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.parse
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from elasticsearch import Elasticsearch, helpers

import esmapper as em
from esmapper._cli_app import load_mapper
from esmapper.testing.faults import FaultProxy, HeldRequest
from tests.unit.cli.apps import subprocess_env

DOCS = int(os.environ.get("ESMAPPER_REKEY_KILL_DOCS", "600"))
POINTS = int(os.environ.get("ESMAPPER_REKEY_KILL_POINTS", "7"))
BATCH = max(10, DOCS // (2 * POINTS))  # several pages, so a kill can fall between two
WAIT = 60.0 + DOCS / 50  # at most this long for the command to reach a held request

APP = """
import esmapper as em


class Inbox(em.Document):
    class Index:
        name = "inbox"
        settings = {{"number_of_shards": 1, "number_of_replicas": 0, "refresh_interval": "-1"}}
        id_fields = ("tenant", "message_id", "handler_type")

    tenant: str = ""
    message_id: str = ""
    handler_type: str = ""
    body: str = ""


mapper = em.Mapper({url!r}, models=[Inbox], index_prefix={prefix!r})
"""

TENANTS = ("acme", "acme_corp", "a/b", "ünï", "__untenanted__")
HANDLERS = ("OrderHandler", "My.App.Handler`1[[System.String]]")
LONG_HANDLER = "/" * 200  # composes to a 604-byte id


@attrs.frozen
class Doc:
    """One document to re-key: its old id and source, its new id and the source the move
    writes there (a stored ``id`` equal to the old id becomes the new id)."""

    old: str
    new: str
    source: dict[str, Any]

    @property
    def moved_source(self) -> dict[str, Any]:
        if self.source.get("id") == self.old:
            return {**self.source, "id": self.new}
        return self.source


@attrs.frozen
class State:
    """Where the documents to re-key are: only under the old id, only under the new one,
    or under both with the same content (a move interrupted between its create and its
    delete)."""

    pending: frozenset[str]
    moved: frozenset[str]
    both: frozenset[str]


@attrs.frozen
class Data:
    physical: str
    alias: str
    docs: dict[str, Doc]  # by old id
    fixed: dict[str, dict[str, Any]]  # ok and blocked documents: never touched
    blocked_lines: list[str]

    @property
    def by_new(self) -> dict[str, Doc]:
        return {d.new: d for d in self.docs.values()}


@attrs.frozen
class KillPoint:
    """Hold the ``skip+1``-th request matching ``method`` and ``path``, kill the command,
    then forward the request (applied, answer never read) or drop it (never applied)."""

    name: str
    method: str
    path: str
    skip: int
    forward: bool = False


def seed(es: Elasticsearch, physical: str, alias: str, count: int) -> Data:
    """``count`` documents with legacy ``_``-joined ids, 20 already in the new form and 3
    that cannot be re-keyed, written raw as the previous version did."""
    docs: dict[str, Doc] = {}
    for n in range(count):
        terms = (TENANTS[n % len(TENANTS)], f"m{n}", HANDLERS[n % len(HANDLERS)])
        old = "_".join(terms)
        source: dict[str, Any] = {
            "tenant": terms[0],
            "message_id": terms[1],
            "handler_type": terms[2],
            "body": f"message {n} " + "x" * (n % 13),
        }
        if n % 7 == 0:  # not in the mapping: must survive the move
            source["extra"] = {"n": n, "tags": ["a", str(n)]}
        if n % 11 == 0:  # the mapper's own copy of the id
            source["id"] = old
        docs[old] = Doc(old, em.compose_id(*terms), source)
    fixed: dict[str, dict[str, Any]] = {}
    for n in range(20):
        terms = ("acme", f"ok{n}", "OrderHandler")
        fixed[em.compose_id(*terms)] = {
            "tenant": terms[0],
            "message_id": terms[1],
            "handler_type": terms[2],
            "body": "already re-keyed",
        }
    fixed["orphan_m1_H"] = {"message_id": "m1", "handler_type": "H"}
    fixed["_m2_H"] = {"tenant": "", "message_id": "m2", "handler_type": "H"}
    fixed["t_m_long"] = {"tenant": "t", "message_id": "m", "handler_type": LONG_HANDLER}
    blocked_lines = [
        "BLOCKED orphan_m1_H -> - (field 'tenant' is missing)",
        "BLOCKED _m2_H -> - (field 'tenant' is empty)",
        "BLOCKED t_m_long -> t:m:" + "%2F" * 200 + " (new id is 604 bytes, over the "
        "512-byte limit; shorten handler_type)",
    ]
    actions = [
        {"_index": physical, "_id": id_, "_op_type": "create", "_source": source}
        for id_, source in [*((d.old, d.source) for d in docs.values()), *fixed.items()]
    ]
    helpers.bulk(es, actions, chunk_size=1000, refresh=True)
    return Data(physical, alias, docs, fixed, blocked_lines)


def observe(es: Elasticsearch, data: Data) -> State:
    """The true state, read in real time (``_mget`` sees writes no refresh has exposed).
    Fails on a lost or changed document."""
    ids = [*data.fixed, *data.docs, *(d.new for d in data.docs.values())]
    found: dict[str, dict[str, Any]] = {}
    for start in range(0, len(ids), 1000):
        response = es.mget(index=data.physical, ids=ids[start : start + 1000])
        found.update({d["_id"]: d["_source"] for d in response["docs"] if d.get("found")})
    for id_, source in data.fixed.items():
        assert found.get(id_) == source, f"{id_} (not to be re-keyed) changed or vanished"
    pending, moved, both = set[str](), set[str](), set[str]()
    for doc in data.docs.values():
        old, new = found.get(doc.old), found.get(doc.new)
        assert old is not None or new is not None, f"{doc.old} lost: under neither id"
        assert old in (None, doc.source), f"{doc.old} changed: {old}"
        assert new in (None, doc.moved_source), f"{doc.new} holds {new}, not {doc.old}'s source"
        (both if old and new else pending if old else moved).add(doc.old)
    return State(frozenset(pending), frozenset(moved), frozenset(both))


@attrs.frozen
class Cli:
    app_dir: Path
    app: str

    def command(self, *args: str, url: str | None = None) -> list[str]:
        where = ["--url", url] if url else []
        return [sys.executable, "-m", "esmapper.cli", "--app", self.app, *where, *args]

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.command(*args),
            cwd=self.app_dir,
            env=subprocess_env(self.app_dir),
            capture_output=True,
            text=True,
            timeout=WAIT,
            check=False,
        )

    def rekey(self, *more: str) -> subprocess.CompletedProcess[str]:
        return self.run("ids", "rekey", "Inbox", "--batch-size", str(BATCH), *more)

    def kill_at(self, proxy: FaultProxy, point: KillPoint, run: int) -> Killed:
        """Run ``ids rekey --apply`` through ``proxy``, SIGKILL it once it waits for the
        held request, then forward or drop that request."""
        held = proxy.hold(method=point.method, path=point.path, skip=point.skip)
        log = self.app_dir / f"killed-{run}.log"
        args = ("ids", "rekey", "Inbox", "--apply", "--i-have-a-backup", "--batch-size", str(BATCH))
        with log.open("w") as out:
            process = subprocess.Popen(
                self.command(*args, url=proxy.url),
                cwd=self.app_dir,
                env=subprocess_env(self.app_dir),
                stdout=out,
                stderr=subprocess.STDOUT,
            )
            try:
                arrived = wait_for(held, process)
            finally:
                process.send_signal(signal.SIGKILL)
                process.wait()
        assert arrived, f"run {run} never sent {point}: {log.read_text()[-2000:]}"
        assert process.returncode == -signal.SIGKILL
        if point.forward:
            held.forward()
        else:
            held.drop()
        assert held.wait_done(WAIT)
        path = next(r.path for r in reversed(proxy.requests) if r.fault == "hold")
        return Killed(point, urllib.parse.unquote(path.rsplit("/", 1)[-1]), held.status)


@attrs.frozen
class Killed:
    """Where a run was killed: the point, the last segment of the held request's path
    (the id of a create or a delete) and the server's answer to it if forwarded."""

    point: KillPoint
    target: str
    status: int | None


def wait_for(held: HeldRequest, process: subprocess.Popen[bytes]) -> bool:
    """Whether ``held`` reached the proxy before ``process`` ended (or WAIT passed)."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if held.wait_arrived(0.05):
            return True
        if process.poll() is not None:
            return held.arrived
    return False


@pytest.fixture
def proxy(es_url: str) -> Iterator[FaultProxy]:
    with FaultProxy(es_url, lifetime=3600) as p:
        yield p


@pytest.fixture
def cli(tmp_path: Path, es_url: str, index_prefix: str) -> Cli:
    name = f"rekey_app_{uuid.uuid4().hex[:10]}"
    (tmp_path / f"{name}.py").write_text(APP.format(url=es_url, prefix=index_prefix))
    return Cli(tmp_path, f"{name}:mapper")


@pytest.fixture
def mapper(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> Iterator[em.Mapper]:
    """The app's own mapper: the index is created exactly as the app declares it."""
    monkeypatch.syspath_prepend(str(cli.app_dir))
    with load_mapper(cli.app) as m:
        m.configure_indexes()
        yield m


def kill_plan(count: int) -> list[tuple[str, str, str, bool]]:
    """(name, method, path template, forward) of each kill, in order."""
    middle = [
        ("before a create reaches the server", "PUT", "create", False),
        ("after a create, before the delete of the old id", "DELETE", "delete", False),
        ("after a create is applied, its answer unread", "PUT", "create", True),
        ("between two pages of the scan", "POST", "search", False),
        ("after a delete is applied, its answer unread", "DELETE", "delete", True),
    ]
    plan = [("before the scan opens", "POST", "pit", False)]
    plan += [middle[i % len(middle)] for i in range(count - 2)]
    plan.append(("before the delete of the last old id", "DELETE", "last", False))
    return plan


def next_point(plan: tuple[str, str, str, bool], data: Data, todo: int, left: int) -> KillPoint:
    """The kill point for ``plan`` when ``todo`` documents are still under their old id
    and ``left`` kills remain after this one: spreads the moves over the kills."""
    name, method, kind, forward = plan
    paths = {
        "pit": f"^/{data.alias}/_pit$",
        "search": "^/_search$",
        # the moves name the alias, never the physical index (IndexSpec.write_name); the
        # delete at the scanned version the fence alias of the scanned index
        "create": f"^/{data.alias}/_create/",
        "delete": f"^/{data.alias}-v\\d+\\.fence/_doc/",
        "last": f"^/{data.alias}-v\\d+\\.fence/_doc/",
    }
    skip = {"pit": 0, "search": 1, "last": todo - 1}.get(kind, todo // (left + 2))
    return KillPoint(name, method, paths[kind], skip, forward)


def check_kill(data: Data, killed: Killed, before: State, after: State) -> None:
    """What a kill may leave: every move before the held request complete, at most one
    interrupted move more, and exactly what the held request implies for its document."""
    point = killed.point
    assert len(after.both - before.both) <= 1, after.both
    assert after.moved >= before.moved, "a moved document went back"
    if point.method not in ("PUT", "DELETE"):  # the PIT or a page was held
        assert after.both <= before.both
        return
    # each of the `skip` creates (or deletes) let through belongs to one complete move
    forwarded_delete = point.method == "DELETE" and point.forward
    assert len(after.moved - before.moved) == point.skip + forwarded_delete
    doc = data.docs.get(killed.target) or data.by_new[killed.target]
    key, resumed = doc.old, doc.old in before.both
    if point.method == "PUT" and not point.forward:  # the create never landed
        assert (key in after.both) == resumed and key not in after.moved
    elif point.method == "PUT":  # applied, answer unread
        assert killed.status == (409 if resumed else 201)
        assert key in after.both
    elif not point.forward:  # created, the delete of the old id never landed
        assert key in after.both
    else:  # the delete landed: the move is complete
        assert killed.status == 200
        assert key in after.moved


def dry_run_lines(data: Data, state: State) -> list[str]:
    lines = [*data.blocked_lines]
    for old in state.pending:
        lines.append(f"DRY RUN {old} -> {data.docs[old].new}")
    for old in state.both:
        new = data.docs[old].new
        lines.append(f"DRY RUN {old} -> {new} (interrupted: {new} already holds this document)")
    return sorted(lines)


def ok_count(data: Data, state: State) -> int:
    """What the scan counts as ok: the untouched new-form documents and every new id."""
    return len(data.fixed) - len(data.blocked_lines) + len(state.moved) + len(state.both)


def check_dry_run(cli: Cli, data: Data, state: State) -> None:
    dry = cli.rekey()
    assert (dry.returncode, dry.stderr) == (0, "")
    *lines, summary = dry.stdout.splitlines()
    assert sorted(lines) == dry_run_lines(data, state)
    todo, interrupted = len(state.pending) + len(state.both), len(state.both)
    note = f" ({interrupted} interrupted)" if interrupted else ""
    assert summary == (
        f"dry run: {todo} to rewrite{note}, {len(data.blocked_lines)} blocked, "
        f"{ok_count(data, state)} ok; nothing was changed"
    )


def check_done(es: Elasticsearch, data: Data, cli: Cli, index_prefix: str) -> None:
    """Every document once, under its new id, unchanged; nothing else anywhere."""
    state = observe(es, data)
    assert (state.pending, state.both) == (frozenset(), frozenset())
    assert len(state.moved) == len(data.docs)
    es.indices.refresh(index=data.physical)
    assert es.count(index=data.physical)["count"] == len(data.docs) + len(data.fixed)
    names = [n for n in es.indices.get(index=f"{index_prefix}*") if "esmapper-locks" not in n]
    assert names == [data.physical]  # (the locks index: configure_indexes()' lock and marker)
    audit = cli.run("ids", "audit", "Inbox")
    assert audit.returncode == 0, audit.stderr
    blocked = len(data.blocked_lines)
    assert audit.stdout.splitlines()[-1] == (
        f"{len(data.docs) + len(data.fixed) - blocked} ok, 0 rewrite, {blocked} blocked"
    )


@pytest.fixture
def data(mapper: em.Mapper, es_client: Elasticsearch) -> Data:
    spec = mapper.spec(mapper.models[0])
    return seed(es_client, spec.physical_name(), spec.alias, DOCS)


def test_killed_at_every_point_then_rerun_to_completion(
    data: Data, cli: Cli, proxy: FaultProxy, es_client: Elasticsearch, index_prefix: str
) -> None:
    assert POINTS >= 2, "ESMAPPER_REKEY_KILL_POINTS must be at least 2"
    plan = kill_plan(POINTS)
    state = observe(es_client, data)
    for run, step in enumerate(plan, 1):
        todo = len(state.pending) + len(state.both)
        assert todo > 0, f"nothing left to re-key before kill {run}: use more documents"
        point = next_point(step, data, todo, len(plan) - run)
        killed = cli.kill_at(proxy, point, run)
        after = observe(es_client, data)
        check_kill(data, killed, state, after)
        state = after
        check_dry_run(cli, data, state)  # reads only: the state is still the same
        assert observe(es_client, data) == state

    assert len(state.both) == 1  # the last kill interrupted the last move
    rerun = cli.rekey("--apply", "--i-have-a-backup")
    assert (rerun.returncode, rerun.stderr) == (0, "")
    *lines, summary = rerun.stdout.splitlines()
    left = sorted(state.pending | state.both)
    assert sorted(lines) == sorted(
        [*data.blocked_lines, *(f"REWRITE {old} -> {data.docs[old].new}" for old in left)]
    )
    assert summary == (
        f"{len(left)} rewritten (1 completing an interrupted move), 0 failed, "
        f"{len(data.blocked_lines)} blocked, {ok_count(data, state)} ok"
    )
    check_done(es_client, data, cli, index_prefix)


def test_killed_after_the_last_move_the_rerun_has_nothing_to_do(
    data: Data, cli: Cli, proxy: FaultProxy, es_client: Elasticsearch, index_prefix: str
) -> None:
    # Killed once the last delete was applied, before reading its answer: every move is
    # done, none was refreshed.
    last = KillPoint(
        "after the last delete", "DELETE", f"^/{data.alias}-v\\d+\\.fence/_doc/", DOCS - 1, True
    )
    cli.kill_at(proxy, last, 1)
    state = observe(es_client, data)
    assert len(state.moved) == len(data.docs)
    assert not state.pending and not state.both

    check_dry_run(cli, data, state)
    rerun = cli.rekey("--apply", "--i-have-a-backup")
    assert (rerun.returncode, rerun.stderr) == (0, "")
    assert sorted(rerun.stdout.splitlines()) == sorted(
        [
            *data.blocked_lines,
            f"0 rewritten, 0 failed, {len(data.blocked_lines)} blocked, {ok_count(data, state)} ok",
        ]
    )
    check_done(es_client, data, cli, index_prefix)
