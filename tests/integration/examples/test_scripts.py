"""The example scripts (examples/*.py) run against the test server and do what they print.

Each ``main(es_url, index_prefix=...)`` runs in-process (its output is captured and checked,
then the stored state); one script also runs as ``python -m`` in a subprocess.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from elasticsearch import Elasticsearch

import esmapper as em
import examples.ids as ids_example
import examples.querying as querying_example
import examples.quickstart as quickstart_example
import examples.reindex as reindex_example
import examples.sessions as sessions_example
import examples.signals as signals_example
from esmapper import signals
from examples._common import run_main

ROOT = Path(__file__).resolve().parents[3]


def run(
    main: Callable[..., None], es_url: str, prefix: str, capsys: pytest.CaptureFixture[str]
) -> str:
    main(es_url, index_prefix=prefix)
    return capsys.readouterr().out


def search(es: Elasticsearch, index: str) -> dict[str, dict[str, Any]]:
    es.indices.refresh(index=index)
    hits = es.search(index=index, size=100)["hits"]["hits"]
    return {hit["_id"]: hit["_source"] for hit in hits}


def test_quickstart(
    es_url: str, es_client: Elasticsearch, index_prefix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = run(quickstart_example.main, es_url, index_prefix, capsys)
    p = index_prefix
    assert f"index {p}employees -> {p}employees-v1: created" in out
    assert "sort -age: Ada Lee, Jane Doe (total 2)" in out
    assert "saved Jane Doe (age 35): version 1:0 -> 1:" in out
    assert "stale save refused: VersionConflictError" in out
    assert "get -> None, count -> 2, get(soft_deletes='all') -> Jane Doe" in out
    assert "removed Jane Doe: get(soft_deletes='all') -> None, count -> 2" in out
    stored = search(es_client, f"{p}employees")
    assert sorted(s["name"] for s in stored.values()) == ["Ada Lee", "John Roe"]


def test_sessions(
    es_url: str, es_client: Elasticsearch, index_prefix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = run(sessions_example.main, es_url, index_prefix, capsys)
    assert "identity map: get twice -> same object: True" in out
    assert "tracked: dirty=['alice', 'bob'] new=['carol']" in out
    assert "stored before commit: alice=100" in out
    assert "flush: add carol, save alice, save bob -> 1 _bulk request(s)" in out
    assert "committed: alice=70, bob=30, carol=5" in out
    assert "dave exists -> False" in out
    assert "attempt 1: conflict on alice (409), pending=['alice']" in out
    assert "attempt 2: saved Alice Smith, balance 77" in out
    stored = search(es_client, f"{index_prefix}accounts")
    assert {k: (v["owner"], v["balance"]) for k, v in stored.items()} == {
        "alice": ("Alice Smith", 77),
        "bob": ("Bob", 30),
        "carol": ("Carol", 5),
    }
    assert sessions_example.report_flush not in list(signals.after_flush.receivers_for(None))


def test_signals(
    es_url: str, es_client: Elasticsearch, index_prefix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = run(signals_example.main, es_url, index_prefix, capsys)
    lines = out.splitlines()
    published = [line.split()[2:4] for line in lines if line.startswith("  published:")]
    assert [change for _, change in published] == ["ADDED", "SAVED", "ADDED", "REMOVED"]
    assert "created_by=alice updated_by=alice" in out
    assert "saved: status=shipped updated_by=bob" in out
    assert "{'user': 'importer'}" not in out  # cancelled by before_publish_entity_changed
    assert "remove vetoed: shipped orders cannot be removed" in out
    stored = search(es_client, f"{index_prefix}orders")
    (order,) = stored.values()  # the vetoed removal kept it; the draft was removed
    assert (order["status"], order["total"], order["created_by"], order["updated_by"]) == (
        "shipped",
        125,
        "alice",
        "importer",
    )
    for signal, receiver in signals_example.RECEIVERS:  # disconnected again
        assert receiver not in list(signal.receivers_for(signals_example.Order))


def test_querying(
    es_url: str, es_client: Elasticsearch, index_prefix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = run(querying_example.main, es_url, index_prefix, capsys)
    expected = {
        "age:[30 TO 40}": "Jane Doe, Lin Wu, Mia Kay",
        "name:ja*": "Jack Poe, Jane Doe",
        "NOT company_id:acme AND age:<40": "Jack Poe, Lin Wu, Mia Kay",
        "_exists_:phone": "Ada Lee, Jane Doe, Lin Wu, Mia Kay",
        "projects.role:lead AND projects.hours:>=20": "Jane Doe, Lin Wu",
        "projects.name:atlas AND NOT projects.role:lead": "Jack Poe",
    }
    for line in out.splitlines():
        expr, _, names = line.partition(" -> ")
        if expr.strip() in expected:
            assert names == expected.pop(expr.strip()), line
    assert not expected, f"filters not printed: {expected}"
    assert "page 3 of 7 hits: Jack Poe (initech, 29)" in out
    assert "ages seen: [22, 29, 31, 34, 38, 41, 45]" in out
    assert "count now: 8" in out
    assert "terms_company_id: acme=3, globex=2, initech=2" in out
    assert "avg_age: 34.3" in out
    assert "date_created_utc: 2025-03-01=2, 2025-03-02=2, 2025-03-03=3" in out
    assert "acme: avg_age 32.3" in out
    assert "projects by role: dev=4, lead=4" in out
    assert "'jane': Jane Doe, fragments ['<em>Jane</em> Doe']" in out
    assert "ages by {'age': 'desc'}: [50, 45, 41] then [38, 34, 31]" in out
    assert "per_company: acme=3, globex=2, initech=2" in out
    assert "'agee:>30': field=agee position=0: Unknown field 'agee'" in out
    assert len(search(es_client, f"{index_prefix}staff")) == 8


def test_reindex(
    es_url: str, es_client: Elasticsearch, index_prefix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = run(reindex_example.main, es_url, index_prefix, capsys)
    p = index_prefix
    assert "v1: 5 products; title:widget finds 0" in out
    assert f"configure_indexes -> outdated: alias {p}products still on {p}products-v1" in out
    assert "% copy: Total: 5 Copied: 5" in out  # the progress callback
    assert f"100% done: Reindexed {p}products-v1 -> {p}products-v2" in out
    assert "reindex: reindexed, copied 5" in out
    assert "v2: 5 products; title:widget finds 3" in out
    assert "reindex again -> up_to_date" in out
    assert sorted(es_client.indices.get_alias(name=f"{p}products").body) == [f"{p}products-v2"]
    assert not es_client.indices.exists(index=f"{p}products-v1")
    stored = search(es_client, f"{p}products")
    assert len(stored) == 5
    assert {s["currency"] for s in stored.values()} == {"EUR"}  # the reindex script ran


def test_ids(
    es_url: str, es_client: Elasticsearch, index_prefix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = run(ids_example.main, es_url, index_prefix, capsys)
    assert "compose_id('a/b', 'c:d', prefix='inbox:') -> 'inbox:a%2Fb:c%3Ad'" in out
    assert "decompose_id -> ('a/b', 'c:d')" in out
    assert "IdTooLongError: 605 bytes > 512, term 1" in out
    assert "added with id_fields -> id 'acme:corp_42:Orders%2FShip'" in out
    assert "DuplicateDocumentError" in out
    assert "  DRY RUN globex_7_Billing.Invoice -> globex:7:Billing.Invoice" in out
    assert "rekey: dry run: 1 to rewrite, 1 blocked, 1 ok; nothing was changed" in out
    assert "rekey: 1 rewritten, 0 failed, 1 blocked, 1 ok" in out
    stored = search(es_client, f"{index_prefix}deliveries")
    assert sorted(stored) == [
        "acme:corp_42:Orders%2FShip",
        "globex:7:Billing.Invoice",
        "initech_9_",
    ]
    assert stored["globex:7:Billing.Invoice"]["id"] == "globex:7:Billing.Invoice"


def test_quickstart_as_a_script(es_url: str, es_client: Elasticsearch, index_prefix: str) -> None:
    env = {**os.environ, "ESMAPPER_URL": es_url, "ESMAPPER_INDEX_PREFIX": index_prefix}
    done = subprocess.run(
        [sys.executable, "-m", "examples.quickstart"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert f"using Elasticsearch at {es_url}, index prefix '{index_prefix}'" in done.stdout
    assert "removed Jane Doe" in done.stdout
    assert len(search(es_client, f"{index_prefix}employees")) == 2


def test_a_script_without_a_prefix_cleans_up_its_own(
    es_url: str, es_client: Elasticsearch, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Against ESMAPPER_URL without ESMAPPER_INDEX_PREFIX, a fresh prefix is used and deleted."""
    monkeypatch.setenv("ESMAPPER_URL", es_url)
    monkeypatch.delenv("ESMAPPER_INDEX_PREFIX", raising=False)
    used: list[str] = []

    def main(url: str, *, index_prefix: str) -> None:
        used.append(index_prefix)
        with em.Mapper(url, models=[quickstart_example.Employee], index_prefix=index_prefix) as m:
            m.configure_indexes()

    try:
        run_main(main)
        (prefix,) = used
        assert prefix.startswith("example-")
        assert not es_client.indices.exists(index=f"{prefix}employees-v1")
    finally:
        for prefix in used:
            es_client.options(ignore_status=404).indices.delete(index=f"{prefix}employees-v1")
