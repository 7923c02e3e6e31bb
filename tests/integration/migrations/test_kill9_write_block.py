"""``kill -9`` of a real ``esmapper reindex`` / ``esmapper migrate`` while the old index is
write-blocked for the final pass.

The command runs in a subprocess behind a :class:`FaultProxy` with the default lock ttl
(90 s): its ``PUT /<alias>-v1/_block/write`` is held until the test forwards it, and the
refresh the command sends right after the block is delayed, so the command is alive, in
its final pass, with writes through the alias refused (403). While it lives, a second
command must not lift its block. Once it is killed, the block stays (writes still 403)
until a rerun, which takes the dead process's locks over at once (same machine) and lifts
the block before anything else; it then completes with every document, and ``status`` is
ok. Helpers and the application come from :mod:`.test_kill9`.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from click.testing import Result
from elasticsearch import ApiError, Elasticsearch

from esmapper.indexes.blocks import write_blocked
from esmapper.testing.faults import FaultProxy

from .test_kill9 import EXISTING, App, ids, kill9, status_ok, wait_for


@pytest.fixture
def app(tmp_path: Path, es_url: str, index_prefix: str, monkeypatch: pytest.MonkeyPatch) -> App:
    monkeypatch.syspath_prepend(str(tmp_path))
    return App(tmp_path, es_url, index_prefix)


def installed(app: App, es: Elasticsearch) -> tuple[str, list[str]]:
    """Version 1 installed with documents; the version 1 module and the expected ids."""
    v1_app = app.module()
    done = app.cli(v1_app, "migrate")  # a fresh install: marks the migrations, seeds one
    assert done.exit_code == 0, done.output
    for id_ in EXISTING:
        es.index(index=app.alias, id=id_, document={"name": id_})
    return v1_app, sorted([*EXISTING, "seed"])


def start_blocked(app: App, proxy: FaultProxy, module: str, *args: str) -> subprocess.Popen[str]:
    """The command (``args``: command and its arguments) through the proxy, stopped in its
    final pass with the block on."""
    v1 = f"{app.alias}-v1"
    block = proxy.hold(method="PUT", path=rf"^/{v1}/_block/write$")
    proc = app.start(module, *args[1:], url=proxy.url, command=args[0])
    wait_for("the write block", lambda: block.arrived, proc)
    # the refresh of the new index under the block (an untouched old index needs no
    # final pass: the bump goes from the block to the verify step)
    refresh = rf"^/{app.alias}-v2/_refresh$"
    refreshes = proxy.count(refresh, method="POST")
    proxy.delay(300, method="POST", path=refresh)  # never forwarded: the proxy stops first
    block.forward()
    wait_for("the final pass", lambda: proxy.count(refresh, method="POST") > refreshes, proc)
    return proc


def refused(es: Elasticsearch, alias: str) -> bool:
    """Whether a write through ``alias`` is refused by a write block (403)."""
    try:
        es.index(index=alias, id="refused", document={"name": "refused"})
    except ApiError as exc:
        assert exc.meta.status == 403 and exc.error == "cluster_block_exception", exc
        return True
    return False


def finish(proc: subprocess.Popen[str]) -> subprocess.CompletedProcess[str]:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, out + err
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def test_a_reindex_killed_in_its_final_pass_is_unblocked_by_the_rerun_not_before(
    app: App, proxy: FaultProxy, es_client: Elasticsearch
) -> None:
    v1_app, expected = installed(app, es_client)
    v1, v2 = f"{app.alias}-v1", f"{app.alias}-v2"
    v2_app = app.module(version=2)
    first = start_blocked(app, proxy, v2_app, "reindex", "Employee")
    assert refused(es_client, app.alias)

    # A live holder keeps its block: neither a second reindex nor a migrate lifts it.
    second = app.start(v2_app, "--lock-wait", "1", "Employee", command="reindex")
    out, err = second.communicate(timeout=60)
    assert second.returncode == 2, out + err
    assert err.startswith(f"error: lock 'reindex:{app.alias}' is held by another process (")
    rolled_back = app.cli(v1_app, "migrate")  # the old version of the app: nothing to lift
    assert rolled_back.exit_code == 0 and "unblocked" not in rolled_back.stdout
    status = app.cli(v2_app, "status").stdout
    assert f"write blocked: {v1} is write-blocked since " in status
    assert status.rstrip().endswith("pending migrations: none") and ", running now" in status
    assert write_blocked(es_client, v1) and refused(es_client, app.alias)

    kill9(first)
    proxy.stop()
    assert refused(es_client, app.alias)  # the block outlives the process...
    status = app.cli(v2_app, "status").stdout
    assert "which no longer runs; migrate or reindex lifts it" in status

    rerun = finish(app.start(v2_app, "Employee", command="reindex"))  # no lock wait needed
    lines = rerun.stdout.splitlines()
    assert lines[0].startswith("reindex Employee")  # the progress bar's label
    assert lines[1].startswith("lifted the write block a killed reindex left (on for ")
    # the killed run's copy had completed and nothing changed since: nothing copied again
    assert lines[2].startswith("resumed the interrupted reindex (its copy began ")
    assert lines[2].endswith("): copied only the documents it lacked or that changed since")
    assert lines[3].startswith(f"reindexed Employee: {v1} -> {v2}, 0 copied, ")
    assert ", old index deleted, writes blocked " in lines[3]
    assert not refused(es_client, app.alias)  # ...until the rerun
    assert ids(es_client, app.alias) == sorted([*expected, "refused"])  # none lost
    status_ok(app, v2_app, docs=len(expected) + 1)


@pytest.mark.parametrize("rerun", ["the same version", "the version rolled back, then again"])
def test_a_migrate_killed_in_a_reindex_final_pass_is_unblocked_by_any_rerun(
    rerun: str, app: App, proxy: FaultProxy, es_client: Elasticsearch
) -> None:
    v1_app, expected = installed(app, es_client)
    v1 = f"{app.alias}-v1"
    v2_app = app.module(version=2)
    kill9(start_blocked(app, proxy, v2_app, "migrate"))
    proxy.stop()
    assert refused(es_client, app.alias)
    dry = app.cli(v2_app, "migrate", "--dry-run").stdout.splitlines()
    assert dry[1].split()[:2] == ["unblock_index", f"{v1}:"], dry

    if rerun.startswith("the version rolled back"):
        back: Result = app.cli(v1_app, "migrate")  # the old app: no reindex, but its writes
        assert back.exit_code == 0, back.output
        (line,) = [line for line in back.stdout.splitlines() if line.startswith("unblocked")]
        assert line.split()[1] == v1 and "(writes were refused for " in line
        assert not refused(es_client, app.alias)
        expected = sorted([*expected, "refused"])

    done = finish(app.start(v2_app))  # no lock wait: the killed run's locks are taken over
    outcomes = [line for line in done.stdout.splitlines() if not line.startswith("reindex ")]
    if rerun == "the same version":
        assert outcomes[0].split()[:2] == ["unblocked", v1]
    (reindexed,) = [line for line in outcomes if line.startswith("reindexed")]
    assert "(writes blocked " in reindexed
    assert outcomes[-1] == "migrations: success"
    assert not refused(es_client, app.alias)
    assert ids(es_client, app.alias) == sorted({*expected, "refused"})
    status_ok(app, v2_app, docs=len(set(expected) | {"refused"}))
